"""The broker's cookie jar from a headless client written from docs/PROTOCOL.md: a login flow
against the demo origin's /cookies/ routes, a restart, a kill -9 mid-write, and the CLI."""
import json
import sqlite3
import subprocess
import threading

from headless_client import BridgeConnection
from support import BINARY, Broker


def connect(broker, **kwargs):
    connection = BridgeConnection(broker.url, **kwargs)
    kind, hello = connection.receive()
    assert kind == "text" and hello["type"] == "hello"
    assert {"cookies.get", "cookies.set", "cookies.clear", "page.identity", "page.cookie"} <= set(hello["handlers"])
    return connection


def ok(reply):
    assert reply.get("ok"), reply
    return reply["body"]


def fetch(connection, broker, path, **fields):
    return ok(connection.post("fetch", {"url": broker.origin + path, **fields}, on_frame=lambda _: None))


def whoami(connection, broker):
    return json.loads(fetch(connection, broker, "/cookies/whoami")["body"])


def test_login_session_logout_and_restart(make_broker, tmp_path):
    cache = str(tmp_path / "cache")
    broker = make_broker(cache=cache)
    connection = connect(broker)
    login = fetch(connection, broker, "/cookies/login?user=py", method="POST")
    assert not any(name == "set-cookie" for name, _ in login["headers"]), "Set-Cookie stays hidden"
    me = whoami(connection, broker)
    assert me["user"] == "py" and me["remembered"] == "py"
    assert me["cookie"].startswith("session=s-py-") and "user=py" in me["cookie"]
    listed = ok(connection.post("cookies.get", {"url": broker.origin + "/"}, on_frame=None))
    session = next(c for c in listed["cookies"] if c["name"] == "session")
    assert session["httpOnly"] and session["expires"] is None and session["sameSite"] == "lax" and session["hostOnly"]
    assert next(c for c in listed["cookies"] if c["name"] == "remember")["expires"] > 0

    # A restart keeps the persistent cookie and drops the two session cookies.
    broker.stop()
    broker = make_broker(cache=cache)
    connection = connect(broker)
    me = whoami(connection, broker)
    assert me == {"user": None, "remembered": "py", "cookie": "remember=py"}

    # Logout deletes it, also from the database: after another restart nothing is sent.
    fetch(connection, broker, "/cookies/logout", method="POST")
    assert whoami(connection, broker)["cookie"] is None
    broker.stop()
    broker = make_broker(cache=cache)
    assert whoami(connect(broker), broker)["cookie"] is None


def test_credentials_omit_and_expose_set_cookie(broker):
    connection = connect(broker)
    ok(connection.post("cookies.clear", {}, on_frame=None))
    exposed = fetch(connection, broker, "/cookies/set?c=a%3D1%3B%20Path%3D%2F&c=b%3D2%3B%20Path%3D%2F", exposeSetCookie=True)
    assert [value for name, value in exposed["headers"] if name == "set-cookie"] == ["a=1; Path=/", "b=2; Path=/"]
    omitted = fetch(connection, broker, "/cookies/set?c=c%3D3%3B%20Path%3D%2F", credentials="omit")
    assert json.loads(omitted["body"])["cookie"] is None
    assert json.loads(fetch(connection, broker, "/cookies/echo")["body"])["cookie"] == "a=1; b=2"


def test_management_errors_and_pages_are_refused(broker):
    connection = connect(broker)
    refused = connection.post("cookies.set", {"url": "https://example.com/", "setCookie": "a=1; Domain=com"}, on_frame=None)
    assert refused["error"]["code"] == "bad_request" and "public suffix" in refused["error"]["message"]
    assert connection.post("cookies.set", {"url": "ftp://x/", "setCookie": "a=1"}, on_frame=None)["error"]["code"] == "bad_request"
    assert connection.post("cookies.clear", {"since": "yesterday"}, on_frame=None)["error"]["code"] == "bad_request"
    page = connect(broker, origin=broker.http)
    for name in ("cookies.get", "cookies.set", "cookies.clear"):
        assert page.post(name, {"url": broker.origin + "/", "setCookie": "a=1"}, on_frame=None)["error"]["code"] == "forbidden"
    wrong = page.post("page.identity", {"url": "http://elsewhere.test/"}, on_frame=None)
    assert wrong["error"]["code"] == "forbidden"


def test_kill_9_mid_writes_leaves_a_readable_jar(make_broker, tmp_path):
    cache = str(tmp_path / "cache")
    broker = make_broker(cache=cache)
    connection = connect(broker)
    acknowledged = []
    done = threading.Event()

    def write():
        try:
            write_until_killed()
        except (ConnectionError, OSError):
            pass  # the broker was killed under us

    def write_until_killed():
        for index in range(2000):
            if done.is_set():
                return
            # Spread over sites, so the per-site cap of 180 evicts nothing.
            url = f"https://s{index % 50}.example/"
            reply = connection.post("cookies.set", {"url": url, "setCookie": f"k{index}=v; Max-Age=3600"}, on_frame=None)
            if reply.get("ok"):
                acknowledged.append(index)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    while len(acknowledged) < 200 and writer.is_alive():
        threading.Event().wait(0.01)
    broker.process.kill()  # SIGKILL, in the middle of the writes
    done.set()
    writer.join(timeout=10)
    database = sqlite3.connect(f"{cache}/bridge-broker.sqlite")
    assert database.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    database.close()
    restarted = make_broker(cache=cache)
    names = {c["name"] for c in ok(connect(restarted).post("cookies.get", {}, on_frame=None))["cookies"]}
    # Every acknowledged write is there (the reply comes after the commit), and nothing torn.
    assert {f"k{index}" for index in acknowledged} <= names
    assert all(name.startswith("k") for name in names)


def test_cli_lists_sets_and_clears(broker):
    def cli(*args):
        result = subprocess.run([str(BINARY), "cookies", *args, "--broker", broker.url], capture_output=True, text=True, timeout=60)
        return result.returncode, result.stdout, result.stderr

    cli("clear")
    assert cli("set", "https://cli.example/app", "t=1; Path=/; Max-Age=60; Secure")[1].strip() == "stored"
    code, out, _ = cli("list", "https://cli.example/app/x", "--json")
    reply = json.loads(out)
    assert code == 0 and reply["header"] == "t=1" and reply["cookies"][0]["secure"] is True
    code, out, _ = cli("list")
    assert "t=1  cli.example/" in out and "Secure" in out
    code, _, err = cli("set", "https://cli.example/", "x=1; Domain=other.example")
    assert code == 1 and "bad_request" in err
    assert json.loads(cli("clear", "--domain", "cli.example", "--json")[1]) == {"removed": 1}
