"""The boot script (bridge-js/bridge-boot.js, src/boot.js) in headless Chromium, injected at document
start as a host injects it (DevTools' addScriptToEvaluateOnNewDocument, with the BridgeBrokerConfig
prelude the WebKit host puts first): it asks for the page's preloaded responses at once, serves the
page's fetch() calls the answer has, and imports the shim from the broker for the rest. The page
code is the demo origin's /pageload page (the page-load benchmark's), and its fetch() calls at
document start are compared with the browser's own."""
import html.parser
import json
import subprocess
import time
import urllib.request

import pytest

from support import BINARY, ROOT, Broker, free_port

BOOT = (ROOT / "bridge-js" / "bridge-boot.js").read_text()
RESOURCES = 4
SIZE = 3000

# Before the boot script: every fetch post that goes over a WebSocket is counted.
SOCKET_FETCHES = """
window.socketFetches = 0;
const send = WebSocket.prototype.send;
WebSocket.prototype.send = function (data) {
  if (typeof data === "string" && data.includes('"name":"fetch"')) window.socketFetches++;
  return send.call(this, data);
};
"""

# After the boot script: the page's own code at document start fetches each resource (the list
# filled in) and describes every response, as the page's code sees it.
DESCRIBE = """
window.described = Promise.all(%s.map(async (url) => {
  const response = await fetch(url);
  const body = await response.text();
  return {url: response.url, status: response.status, statusText: response.statusText, ok: response.ok, type: response.type,
          redirected: response.redirected, contentType: response.headers.get("content-type"),
          cacheControl: response.headers.get("cache-control"), length: body.length, head: body.slice(0, 40),
          bridged: response.bridge !== undefined, shimThen: Boolean(window.BridgeBroker)};
}));
"""


class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.urls = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "link" and attributes.get("rel") == "preload":
            self.urls.append(attributes["href"])


@pytest.fixture
def booted(driver):
    """A broker of its own and a way to open its pages with scripts injected at document start."""
    broker = Broker()
    query = f"n={RESOURCES}&size={SIZE}&max-age=600&broker={broker.http}"
    with urllib.request.urlopen(f"{broker.origin}/pageload?way=links&{query}", timeout=10) as response:
        parser = Links()
        parser.feed(response.read().decode())
    scripts = []

    def inject(source):
        scripts.append(driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": source})["identifier"])

    def prelude(broker_url):
        settings = json.dumps({"url": "ws" + broker_url[4:] + "/bridge"})
        return f"window.BridgeBrokerConfig=Object.assign({settings},window.BridgeBrokerConfig||{{}});\n"

    def load(way, *sources):
        for source in sources:
            inject(source)
        try:
            driver.get(f"{broker.origin}/pageload?way={way}&{query}" + ("&tag=0" if way == "shim" else ""))
            deadline = time.time() + 30
            while time.time() < deadline and not driver.execute_script("return window.pageLoad || null"):
                time.sleep(0.05)
            return driver.execute_script("return window.pageLoad")
        finally:
            while scripts:
                driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": scripts.pop()})

    def origin_requests():
        with urllib.request.urlopen(broker.origin + "/count", timeout=10) as response:
            return json.load(response).get("/cached", 0)

    def preload():
        page = f"{broker.origin}/pageload?way=shim&{query}&tag=0"
        subprocess.run([str(BINARY), "preload", "--page", f"{broker.origin}/pageload?way=links&{query}", "--broker", broker.url,
                        "--for-page", page, "--json"], check=True, capture_output=True, timeout=60)

    try:
        yield {"broker": broker, "urls": parser.urls, "load": load, "prelude": prelude, "origin_requests": origin_requests,
               "preload": preload, "driver": driver}
    finally:
        broker.stop()


def test_a_preloaded_page_is_served_by_the_boot_script_as_the_browser_serves_it(booted):
    driver = booted["driver"]
    describe = DESCRIBE % json.dumps(booted["urls"])
    own = booted["load"]("browser", describe)
    assert own and "error" not in own and own["bridged"] is False, own
    native = driver.execute_async_script("window.described.then(arguments[arguments.length - 1])")

    booted["preload"]()
    before = booted["origin_requests"]()
    prelude = booted["prelude"](booted["broker"].http)
    result = booted["load"]("shim", SOCKET_FETCHES, prelude + BOOT, describe)
    assert result and "error" not in result, result
    assert result["bridged"] is True and result["bytes"] == RESOURCES * SIZE, result
    assert booted["origin_requests"]() == before, "the origin was not asked"
    bridged = driver.execute_async_script("window.described.then(arguments[arguments.length - 1])")
    # The answer serves each response once: the document-start fetches took them all, and the page's
    # own script's fetches of the same URLs (later) went over the shim's socket, to the broker's cache.
    assert driver.execute_script("return window.socketFetches") == RESOURCES
    # Served by the boot script itself: the shim had not loaded yet when they were.
    assert [item["shimThen"] for item in bridged] == [False] * RESOURCES, bridged
    assert all(item["bridged"] for item in bridged)
    # The browser is the oracle: what the page's code sees is what it sees with the browser's own fetch.
    strip = lambda items: [{key: value for key, value in item.items() if key not in ("bridged", "shimThen")} for item in items]
    assert strip(bridged) == strip(native)
    # The shim arrives after and takes the page over: its fetch patched, connected.
    deadline = time.time() + 10
    while time.time() < deadline and not driver.execute_script("return Boolean(window.BridgeBroker && BridgeBroker.connected)"):
        time.sleep(0.05)
    assert driver.execute_script("return BridgeBroker.patched.fetch && BridgeBroker.connected") is True
    status = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        f"fetch({json.dumps(booted['urls'][0])}).then((r) => done([r.status, r.bridge.cache.status]), (e) => done(String(e)))")
    assert status == [200, "hit"], status
    assert driver.execute_script("return window.socketFetches") == RESOURCES + 1, "a later fetch goes over the shim's socket"


def test_a_preloaded_pages_own_fetches_never_reach_the_socket_or_the_origin(booted):
    driver = booted["driver"]
    booted["preload"]()
    before = booted["origin_requests"]()
    result = booted["load"]("shim", SOCKET_FETCHES, booted["prelude"](booted["broker"].http) + BOOT)
    assert result and "error" not in result, result
    assert result["bridged"] is True and result["bytes"] == RESOURCES * SIZE, result
    assert booted["origin_requests"]() == before
    assert driver.execute_script("return window.socketFetches") == 0


def test_a_page_never_preloaded_loads_through_the_shim_the_boot_script_imports(booted):
    driver = booted["driver"]
    result = booted["load"]("shim", SOCKET_FETCHES, booted["prelude"](booted["broker"].http) + BOOT)
    assert result and "error" not in result, result
    assert result["bridged"] is True and result["bytes"] == RESOURCES * SIZE, result
    assert driver.execute_script("return window.socketFetches") == RESOURCES
    assert booted["origin_requests"]() == RESOURCES


def test_a_page_that_cannot_reach_the_broker_loads_with_the_browsers_own_fetch(booted):
    """The boot script in a page whose Content-Security-Policy lets it reach neither the broker nor
    its script (the browser way's: connect-src 'self', inline scripts only), pointed at a port where
    nothing listens: the early request fails, the shim's import fails, and the page's held calls go
    to the page's own fetch."""
    nowhere = f"http://127.0.0.1:{free_port()}"
    result = booted["load"]("browser", booted["prelude"](nowhere) + BOOT)
    assert result and "error" not in result, result
    assert result["bridged"] is False and result["bytes"] == RESOURCES * SIZE, result
    assert booted["driver"].execute_script("return window.BridgeBroker === undefined && fetch.name === 'fetch'") is True
