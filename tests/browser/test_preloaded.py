"""The page's preloaded responses in headless Chromium (bridge-js/src/push.js): a page that asks
for early posts sends one early request at the shim's start, `page.preloaded`, and its later
fetch() of the resources a `preload` of that page stored is answered from it: no fetch post on the
page's socket, and the origin is not asked again."""
import json
import subprocess
import sys
import time
import urllib.request

from support import BINARY, ROOT, Broker, free_port

sys.path.insert(0, str(ROOT / "examples"))
from headless_client import BridgeConnection  # noqa: E402

SIZES = [1500, 2500]


def origin_count(site, path):
    with urllib.request.urlopen(site["origin"] + "/count", timeout=10) as response:
        return json.load(response).get(path, 0)


def visit(driver, url):
    driver.get(url)
    return driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "window.result.then(done, (error) => done({error: String(error)}));")


def test_a_preloaded_pages_fetches_are_answered_by_the_document_start_request(site, driver):
    page = f"{site['page']}/preloaded.html?tag=push-{time.time()}"

    # Before any preload the broker knows no resource of the page: the answer is its reply alone,
    # and the fetches go over the socket (which fills the cache: not yet "preloaded" for the page).
    cold = visit(driver, page + "&cold=1")
    assert "error" not in cold, cold
    assert [request["names"] for request in cold["early"]][0] == ["page.identity", "page.preloaded"], cold["early"]
    assert cold["early"][0]["frames"] == [{"kind": 1, "first": ord("{"), "envelope": ["reply", None], "urls": []}], cold["early"]
    assert sorted(cold["socketFetches"]) == sorted(cold["urls"])

    connection = BridgeConnection(site["broker"].url)
    try:
        reply = connection.post("preload", {"page": page}, on_frame=lambda frame: None)
    finally:
        connection.sock.close()
    assert reply["ok"], reply
    assert reply["body"]["totals"]["stored"] + reply["body"]["totals"].get("cached", 0) == len(SIZES), reply["body"]

    before = origin_count(site, "/cached")
    warm = visit(driver, page)
    assert "error" not in warm, warm
    assert origin_count(site, "/cached") == before, "the origin was asked again"
    assert warm["statuses"] == [200] * len(SIZES) and warm["lengths"] == SIZES, warm
    assert all(status.startswith("bridge-broker") and "hit" in status for status in warm["cacheStatus"]), warm["cacheStatus"]
    assert warm["socketFetches"] == [], "served from the document-start request, not over the socket"
    # One early request, at the shim's start: its answer holds a whole response (binary frame kind 2
    # whose protocol frame is a whole response, 0x02) for each resource, and the reply with their URLs.
    assert len(warm["early"]) == 1, warm["early"]
    answer = warm["early"][0]
    assert answer["names"] == ["page.identity", "page.preloaded"] and answer["status"] == 200
    assert answer["frames"].count({"kind": 2, "first": 2}) == len(SIZES), answer["frames"]
    replies = [frame for frame in answer["frames"] if frame["kind"] == 1]
    assert len(replies) == 1 and sorted(replies[0]["urls"]) == sorted(warm["urls"]), replies


# Before the page's shim: early posts asked for, and the fetch posts that go over the socket counted.
SOCKET_FETCHES = """
window.BridgeBrokerConfig = Object.assign({earlyPosts: true}, window.BridgeBrokerConfig || {});
window.socketFetches = 0;
const send = WebSocket.prototype.send;
WebSocket.prototype.send = function (data) {
  if (typeof data === "string" && data.includes('"name":"fetch"')) window.socketFetches++;
  return send.call(this, data);
};
"""


def restarted(port, origin_port, cache):
    """The same broker again (same ports, same cache directory), once its ports are free again."""
    for attempt in range(10):
        try:
            return Broker(cache=cache, port=port, origin_port=origin_port)
        except RuntimeError:
            if attempt == 9:
                raise
            time.sleep(0.5)


def test_a_page_opened_after_the_broker_restarted_gets_its_preloaded_responses_from_disk(driver, tmp_path):
    """The record of what `preload` stored for the page is in the broker's database, and the
    resources, whose bodies are then on disk only, come in the answer as streams the shim serves."""
    port, origin_port, cache = free_port(), free_port(), str(tmp_path / "cache")
    first = Broker(cache=cache, port=port, origin_port=origin_port)
    query = f"n=3&size=2000&max-age=600&broker={first.http}"
    page = f"{first.origin}/pageload?way=shim&{query}"
    try:
        subprocess.run([str(BINARY), "preload", "--page", f"{first.origin}/pageload?way=links&{query}", "--broker", first.url,
                        "--for-page", page, "--json"], check=True, capture_output=True, timeout=60)
    finally:
        first.stop()
    second = restarted(port, origin_port, cache)
    script = driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": SOCKET_FETCHES})["identifier"]
    try:
        driver.get(page)
        deadline = time.time() + 30
        while time.time() < deadline and not driver.execute_script("return window.pageLoad || null"):
            time.sleep(0.05)
        result = driver.execute_script("return window.pageLoad")
        assert result and "error" not in result, result
        assert result["bridged"] and result["resources"] == 3 and result["bytes"] == 3 * 2000, result
        assert driver.execute_script("return window.socketFetches") == 0, "served from the document-start request"
        with urllib.request.urlopen(second.origin + "/count", timeout=10) as response:
            assert json.load(response).get("/cached", 0) == 0, "the origin was not asked"
    finally:
        driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": script})
        second.stop()
