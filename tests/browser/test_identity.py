"""The broker as the page's user agent (issue #12), with the browser as the oracle.

The same page code (pages/identity/scenario.js: log in, use the session, set a cookie in script,
credentials omit, XHR with and without withCredentials, cross-origin GET and POST, log out) runs in
headless Chromium once with the browser's own networking and once through the shim, against a local
origin (this file) that serves the page itself, so the page is same-origin with its API. The origin
records the identity each request arrived with; both runs must give the same records and the same
`document.cookie` at every step. A second origin on another port is the cross-origin API.
"""
import http.server
import json
import pathlib
import threading
import urllib.parse

import pytest

from support import Broker, free_port

IDENTITY_HEADERS = ("cookie", "user-agent", "accept", "accept-language", "referer", "origin")
SCENARIO = pathlib.Path(__file__).parent / "pages" / "identity"


class IdentityOrigin(http.server.ThreadingHTTPServer):
    """The page's origin and its API: /app/ serves the page, /api/login and /api/logout manage a
    session, /api/echo answers anything; every /api/ request is recorded with its identity headers."""

    daemon_threads = True

    def __init__(self, records):
        self.records = records
        super().__init__(("127.0.0.1", free_port()), IdentityHandler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()


class IdentityHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self.handle_any()

    def do_POST(self):
        self.handle_any()

    def do_OPTIONS(self):
        # No request of the scenario needs a preflight; answer one the way a permissive API would.
        self.send_response(204)
        self.cors_headers()
        self.send_header("Access-Control-Allow-Methods", "GET, POST")
        self.send_header("Access-Control-Allow-Headers", "accept-language, accept")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def cors_headers(self):
        origin = self.headers.get("Origin")
        if origin:
            self.send_header("Access-Control-Allow-Origin", origin)
            self.send_header("Access-Control-Allow-Credentials", "true")
            self.send_header("Vary", "Origin")

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        path = urllib.parse.urlsplit(self.path)
        if path.path in ("/app/page.html", "/app/scenario.js"):
            file = SCENARIO / path.path.rsplit("/", 1)[1]
            kind = "text/html" if file.suffix == ".html" else "text/javascript"
            return self.reply(200, file.read_bytes(), kind)
        if "/api/" not in path.path:
            return self.reply(404, b"not found", "text/plain")
        query = urllib.parse.parse_qs(path.query)
        step = query.get("step", [path.path.rsplit("/", 1)[1]])[0]
        record = {"step": step, "host": self.headers.get("Host"), "method": self.command}
        record.update({name: self.headers.get(name) for name in IDENTITY_HEADERS})
        self.server.records.append(record)
        cookies = []
        if path.path == "/api/login":
            user = urllib.parse.parse_qs(body).get("user", ["nobody"])[0]
            cookies = [f"session=s-{user}; Path=/; HttpOnly; Max-Age=3600; SameSite=Lax",
                       "csrf=t1; Path=/",
                       "remember=1; Path=/; Max-Age=3600",
                       f"{step}=1; Path=/"]
        elif path.path == "/api/set":
            cookies = query.get("c", [])
        elif path.path == "/api/hop":
            # A redirect hop that sets a cookie: the next hop carries it already.
            self.send_response(302)
            self.send_header("Location", "/api/echo?step=after-hop")
            self.send_header("Set-Cookie", "hop=1; Path=/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        elif path.path == "/api/logout":
            cookies = ["session=; Path=/; Max-Age=0", "csrf=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT", "hop=; Path=/; Max-Age=0"]
        payload = json.dumps({"step": step, "cookie": self.headers.get("Cookie")}).encode()
        self.reply(200, payload, "application/json", cookies)

    def reply(self, status, payload, kind, cookies=()):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Cache-Control", "no-store")
        for line in cookies:
            self.send_header("Set-Cookie", line)
        self.cors_headers()
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def origins():
    records = []
    page, other = IdentityOrigin(records), IdentityOrigin(records)
    yield {"page": page, "other": other, "records": records}
    for server in (page, other):
        server.shutdown()


def start_broker(origins, cache=None, *more):
    return Broker("--allow-origin", origins["page"].url, "--allow-url", "http://localhost:*", *more, cache=cache)


def clear_browser_cookies(driver):
    driver.execute_cdp_cmd("Network.clearBrowserCookies", {})


def restart_browser_session(driver):
    """What a browser restart does to its jar: session cookies go, persistent ones stay."""
    for cookie in driver.execute_cdp_cmd("Network.getAllCookies", {})["cookies"]:
        if cookie.get("session"):
            driver.execute_cdp_cmd("Network.deleteCookies", {"name": cookie["name"], "domain": cookie["domain"], "path": cookie["path"]})


def open_page(driver, origins, broker=None, origin=None):
    """Loads the page (from `origin`, else the page origin) natively (no broker) or with the shim
    from `broker`, and waits until it is ready."""
    url = (origin or origins["page"].url) + "/app/page.html"
    if broker:
        url += "#broker=" + urllib.parse.quote(broker.http, safe=":/")
    driver.get("about:blank")
    driver.get(url)
    ready = "BridgeBroker.ready" if broker else "Promise.resolve()"
    driver.execute_async_script(f"const done = arguments[0]; {ready}.then(() => done(true));")


def run(driver, expression, *args):
    result = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        f"({expression}).then((value) => done({{value}}), (error) => done({{error: String(error && error.stack || error)}}));",
        *args)
    assert "error" not in result, result["error"]
    return result["value"]


def by_step(records):
    return {record["step"]: record for record in records}


def test_the_same_page_code_sends_the_same_identity_and_sees_the_same_cookies(driver, origins):
    records = origins["records"]
    other = origins["other"].url

    clear_browser_cookies(driver)
    records.clear()
    open_page(driver, origins)
    native_seen = run(driver, "scenario(arguments[0])", other)
    native = by_step(records)
    # What the browser does, so the comparison below is not vacuous.
    page = origins["page"].url
    assert native_seen["login"]["cookieAtResponse"] == "csrf=t1; remember=1; login=1", "HttpOnly session hidden from script"
    assert native_seen["login"]["setCookie"] is None
    assert native["after-login"]["cookie"] == "session=s-alice; csrf=t1; remember=1; login=1"
    assert native["script-cookie"]["cookie"] == "session=s-alice; csrf=t1; remember=1; login=1; theme=dark"
    assert native["omit"]["cookie"] is None
    assert native["xhr"]["cookie"] == native["script-cookie"]["cookie"], "omit stored nothing (mallory's login)"
    assert native_seen["xhrLogin"]["cookieAtHeaders"] == "csrf=t1; remember=1; login=1; theme=dark; xhr-login=1"
    assert native["post"]["origin"] == page and native["after-login"]["origin"] is None
    assert native["after-login"]["referer"] == page + "/app/page.html"
    assert native["no-referrer"]["referer"] is None
    assert native["page-headers"]["accept-language"] == "fr" and native["page-headers"]["accept"] == "application/json"
    assert native["page-headers"]["user-agent"] == native["after-login"]["user-agent"], "a page cannot set User-Agent"
    assert native["after-login"]["accept"] == "*/*" and native["after-login"]["accept-language"]
    assert native["cross-get"]["origin"] == page and native["cross-get"]["referer"] == page + "/"
    assert native["cross-get"]["cookie"] is None, "credentials same-origin: no cookies cross-origin"
    assert native["cross-get-include"]["cookie"] and native["cross-xhr-credentials"]["cookie"], "cookies are per host, not port"
    assert native["cross-xhr"]["cookie"] is None
    assert native["after-hop"]["cookie"] == "session=s-alice; csrf=t1; remember=1; login=1; theme=dark; xhr-login=1; hop=1"
    assert native_seen["hop"]["cookieAtResponse"] == "csrf=t1; remember=1; login=1; theme=dark; xhr-login=1; hop=1"
    assert native["after-logout"]["cookie"] == "remember=1; login=1; theme=dark; xhr-login=1"
    assert native_seen["afterLogout"]["cookie"] == "remember=1; login=1; theme=dark; xhr-login=1"
    assert native["after-push"]["referer"] == page + "/app/deeper/view"
    assert native["after-push"]["cookie"] == "remember=1; login=1; theme=dark; xhr-login=1", "pathy is for /app/deeper only"
    assert native["deeper"]["cookie"] == "pathy=1; remember=1; login=1; theme=dark; xhr-login=1"

    clear_browser_cookies(driver)
    records.clear()
    broker = start_broker(origins)
    try:
        open_page(driver, origins, broker)
        shim_seen = run(driver, "scenario(arguments[0])", other)
        shim = by_step(records)
    finally:
        broker.stop()

    assert list(shim) == list(native), "the same requests reached the origin, in the same order"
    for step in native:
        for name in IDENTITY_HEADERS:
            assert shim[step][name] == native[step][name], f"{step}: {name}: shim {shim[step][name]!r}, browser {native[step][name]!r}"
    assert shim_seen == native_seen, "document.cookie and the responses are the same at every step"


def compare_runs(driver, origins, expression, *args):
    """Runs `expression` natively and through the shim (fresh cookies each time): (native, shim) as (seen, records by step)."""
    runs = []
    for with_shim in (False, True):
        clear_browser_cookies(driver)
        origins["records"].clear()
        broker = start_broker(origins) if with_shim else None
        try:
            open_page(driver, origins, broker)
            seen = run(driver, expression, *args)
        finally:
            if broker:
                broker.stop()
        runs.append((seen, by_step(origins["records"])))
    return runs


def test_cookie_rules_at_their_edges_are_chromiums(driver, origins):
    (native_seen, native), (shim_seen, shim) = compare_runs(driver, origins, "edges()")
    assert list(shim) == list(native)
    for step in native:
        assert shim[step]["cookie"] == native[step]["cookie"], f"{step}: shim {shim[step]['cookie']!r}, browser {native[step]['cookie']!r}"
    assert shim_seen == native_seen


def test_a_persistent_session_survives_a_broker_restart_as_it_survives_a_browser_restart(driver, origins, tmp_path):
    records = origins["records"]

    clear_browser_cookies(driver)
    open_page(driver, origins)
    run(driver, "relogin()")
    restart_browser_session(driver)
    records.clear()
    open_page(driver, origins)
    native_seen = run(driver, "whoami()")
    native = records[-1]
    assert native["cookie"] == "session=s-alice; remember=1", "persistent cookies stay, the session-only csrf is gone"
    assert native_seen["cookie"] == "remember=1"

    clear_browser_cookies(driver)
    cache = str(tmp_path / "broker")
    broker = start_broker(origins, cache)
    try:
        open_page(driver, origins, broker)
        run(driver, "relogin()")
    finally:
        broker.stop()
    restart_browser_session(driver)
    broker = start_broker(origins, cache)
    try:
        records.clear()
        open_page(driver, origins, broker)
        shim_seen = run(driver, "whoami()")
        shim = records[-1]
    finally:
        broker.stop()

    assert shim["cookie"] == native["cookie"], "the HttpOnly session came from the broker's jar on disk"
    assert shim_seen == native_seen


def test_another_site_gets_the_cookies_and_headers_chromium_gives_it(driver, origins):
    other = origins["other"].url.replace("127.0.0.1", "localhost")
    (native_seen, native), (shim_seen, shim) = compare_runs(driver, origins, "crossSite(arguments[0])", other)
    assert native["xs-after"]["referer"] == origins["page"].url + "/" and native["xs-after"]["origin"] == origins["page"].url
    assert native["xs-after"]["cookie"] == "chips=1", \
        "a cross-site response sets no Lax or Strict cookie, no third-party SameSite=None one, and a Partitioned one for this page's site"
    assert list(shim) == list(native)
    for step in native:
        for name in IDENTITY_HEADERS:
            assert shim[step][name] == native[step][name], f"{step}: {name}: shim {shim[step][name]!r}, browser {native[step][name]!r}"
    assert shim_seen == native_seen


def test_a_partitioned_cookie_stays_with_the_top_level_site_it_was_set_under(driver, origins):
    """The Partitioned cookie that localhost set under a page on 127.0.0.1 (crossSite) does not go
    from a page on localhost itself, natively or through the shim."""
    other = origins["other"].url.replace("127.0.0.1", "localhost")
    runs = []
    for with_shim in (False, True):
        clear_browser_cookies(driver)
        origins["records"].clear()
        broker = start_broker(origins, None, "--allow-origin", other) if with_shim else None
        try:
            open_page(driver, origins, broker)
            run(driver, "crossSite(arguments[0])", other)
            open_page(driver, origins, broker, origin=other)
            run(driver, "call(arguments[0] + '/api/echo?step=xs-own-top-level', {credentials: 'include'})", other)
        finally:
            if broker:
                broker.stop()
        runs.append(by_step(origins["records"]))
    native, shim = runs
    assert native["xs-after"]["cookie"] == "chips=1" and native["xs-own-top-level"]["cookie"] is None, native
    assert {step: record["cookie"] for step, record in shim.items()} == {step: record["cookie"] for step, record in native.items()}
