"""--upstream-proxy and --no-proxy through recording proxies, and what the URL rules check where
(docs/FLEET.md, "What is checked where"). The proxies relay only to loopback."""
import subprocess

import pytest
from headless_client import BridgeConnection
from proxies import HTTPProxy, SOCKS5Proxy
from support import BINARY


@pytest.fixture
def http_proxy():
    proxy = HTTPProxy()
    yield proxy
    proxy.stop()


@pytest.fixture
def socks_proxy():
    proxy = SOCKS5Proxy()
    yield proxy
    proxy.stop()


def fetch(broker, url, **extra):
    connection = BridgeConnection(broker.url)
    connection.receive()
    reply = connection.post("fetch", {"url": url, "responseBody": "text", **extra}, on_frame=lambda frame: None)
    connection.sock.close()
    return reply


def test_http_targets_go_to_the_proxy_in_absolute_form_with_credentials(make_broker, http_proxy):
    broker = make_broker("--upstream-proxy", f"http://fleet:p%40ss@127.0.0.1:{http_proxy.port}")
    reply = fetch(broker, broker.origin + "/json?x=1")
    assert reply["ok"] and reply["body"]["status"] == 200 and '"hello"' in reply["body"]["body"]
    record = http_proxy.records[-1]
    assert record["line"] == f"GET {broker.origin}/json?x=1 HTTP/1.1"
    assert record["headers"]["host"] == broker.origin.removeprefix("http://")
    assert http_proxy.authorization() == "fleet:p@ss"


def test_https_targets_are_tunnelled_with_connect(make_broker, http_proxy):
    broker = make_broker("--upstream-proxy", f"http://u:pw@127.0.0.1:{http_proxy.port}",
                         "--allow-url", "https://127.0.0.1:*")
    reply = fetch(broker, "https://127.0.0.1:9443/secret")
    assert not reply["ok"] and reply["error"]["code"] == "network"   # the proxy refused the tunnel
    record = http_proxy.records[-1]
    assert record["line"].startswith("CONNECT 127.0.0.1:9443 HTTP/1.1")
    assert http_proxy.authorization() == "u:pw"
    assert "/secret" not in record["line"], "the path travels inside the tunnel only"


def test_no_proxy_hosts_are_reached_directly(make_broker, http_proxy):
    broker = make_broker("--upstream-proxy", f"http://127.0.0.1:{http_proxy.port}", "--no-proxy", "example.org, 127.0.0.1")
    reply = fetch(broker, broker.origin + "/json")
    assert reply["ok"] and reply["body"]["status"] == 200
    assert http_proxy.records == []


def test_url_rules_still_apply_to_the_target_and_its_address(make_broker, http_proxy):
    broker = make_broker("--upstream-proxy", f"http://127.0.0.1:{http_proxy.port}", "--deny-url", "*/denied",
                         allow_loopback=False)
    assert fetch(broker, broker.origin + "/denied")["error"]["code"] == "forbidden"
    assert fetch(broker, "http://10.1.2.3/")["error"]["code"] == "forbidden"        # private literal
    port = broker.origin_port
    # A name is resolved by the broker before the proxy is asked: localhost is loopback.
    refused = fetch(broker, f"http://localhost:{port}/json")
    assert refused["error"]["code"] == "forbidden" and "127.0.0.1" in refused["error"]["message"]
    assert http_proxy.records == [], "nothing refused reached the proxy"


def test_the_demo_origin_is_admitted_without_narrowing_public_urls(make_broker, http_proxy):
    # The URL rules of `make run`: no --allow-url, only --demo-origin. A public URL stays allowed
    # (the proxy answers it itself, so nothing leaves the machine) and the demo origin works.
    broker = make_broker("--upstream-proxy", f"http://127.0.0.1:{http_proxy.port}", allow_loopback=False)
    public = fetch(broker, "http://93.184.216.34/page")
    assert public["ok"] and public["body"]["body"] == "from-proxy http://93.184.216.34/page"
    demo = fetch(broker, broker.origin + "/json")
    assert demo["ok"] and demo["body"]["status"] == 200
    assert fetch(broker, "http://127.0.0.2/")["error"]["code"] == "forbidden"   # other loopback: still refused


@pytest.mark.parametrize("scheme, kind, host", [("socks5", "ipv4", "127.0.0.1"), ("socks5h", "domain", "localhost")])
def test_socks5_pins_the_checked_address_and_socks5h_leaves_the_name_to_the_proxy(make_broker, socks_proxy, scheme, kind, host):
    broker = make_broker("--upstream-proxy", f"{scheme}://127.0.0.1:{socks_proxy.port}", "--allow-url", "http://localhost:*")
    reply = fetch(broker, f"http://localhost:{broker.origin_port}/json")
    assert reply["ok"] and reply["body"]["status"] == 200
    assert socks_proxy.records[-1] == {"type": kind, "host": host, "port": broker.origin_port}


@pytest.mark.parametrize("arguments, message", [
    (["--upstream-proxy", "socks5://u:p@127.0.0.1:1080"], "SOCKS proxy authentication is not supported"),
    (["--upstream-proxy", "ftp://127.0.0.1:21"], "not a proxy URL"),
    (["--upstream-proxy", "http://127.0.0.1:3128/path"], "no path"),
    (["--no-proxy", "example.com"], "--no-proxy needs --upstream-proxy"),
])
def test_bad_proxy_options_are_refused_with_their_reason(arguments, message):
    result = subprocess.run([str(BINARY), "serve", "--port", "0", *arguments], capture_output=True, text=True, timeout=60)
    assert result.returncode == 64 and message in result.stderr
