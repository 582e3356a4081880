"""The page-load benchmark's pages (scripts/bench_pageload.py) in headless Chromium: the same page
code loads the same bytes with the browser's networking and through the shim, the shim's way sends
nothing to the origin that the broker does not, and the hidden links page fills the browser's
cache so that the page then asks the origin for nothing."""
import json
import urllib.request

import pytest

from support import ROOT, Broker

RESOURCES = 6
SIZE = 2000


def cached_requests(broker):
    with urllib.request.urlopen(broker.origin + "/count") as response:
        return json.load(response).get("/cached", 0)


def wait_for(driver, expression):
    driver.set_script_timeout(30)
    return driver.execute_async_script(
        "const done = arguments[0];"
        f"const poll = () => {{ const value = {expression}; if (value) done(value); else setTimeout(poll, 10); }}; poll();")


@pytest.fixture(scope="module")
def broker():
    broker = Broker()
    yield broker
    broker.stop()


def page(broker, way, n=RESOURCES, size=SIZE):
    return f"{broker.origin}/pageload?way={way}&n={n}&size={size}&broker={broker.http}"


def test_the_same_page_code_loads_the_same_bytes_both_ways(broker, driver):
    results = {}
    for way in ("browser", "shim"):
        before = cached_requests(broker)
        driver.get(page(broker, way) + f"&case={way}")
        results[way] = wait_for(driver, "window.pageLoad")
        assert "error" not in results[way], results[way]
        results[way]["origin"] = cached_requests(broker) - before
    assert results["browser"]["bridged"] is False and results["shim"]["bridged"] is True
    for result in results.values():
        assert result["resources"] == RESOURCES and result["bytes"] == RESOURCES * SIZE
    # The browser's cache and the broker's (empty, so the browser's copies did not serve the shim
    # way) each asked the origin once per resource.
    assert results["browser"]["origin"] == RESOURCES and results["shim"]["origin"] == RESOURCES
    script = driver.execute_script("return document.scripts[document.scripts.length - 1].textContent")
    driver.get(page(broker, "browser") + "&case=compare")
    wait_for(driver, "window.pageLoad")
    assert driver.execute_script("return document.scripts[document.scripts.length - 1].textContent") == script


def test_the_hidden_links_page_fills_the_browser_cache(broker, driver):
    size = SIZE + 1  # URLs no other test loaded
    before = cached_requests(broker)
    driver.get(page(broker, "links", size=size))
    assert wait_for(driver, f"window.preloadedLinks === {RESOURCES}")
    assert cached_requests(broker) - before == RESOURCES
    driver.get(page(broker, "browser", size=size))
    result = wait_for(driver, "window.pageLoad")
    assert result["bytes"] == RESOURCES * size
    assert cached_requests(broker) - before == RESOURCES, "the page's fetches came from the browser's cache"


def test_an_unknown_way_is_refused(broker):
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{broker.origin}/pageload?way=teleport")
    assert refused.value.code == 400


def test_the_snippet_way_inlines_the_bootstrap_snippet_and_loads_the_same(broker, driver):
    size = SIZE + 2
    driver.get(page(broker, "shim", size=size) + "&snippet=1")
    result = wait_for(driver, "window.pageLoad")
    assert "error" not in result, result
    assert result["bridged"] is True and result["bytes"] == RESOURCES * size
    snippet = (ROOT / "bridge-js" / "bridge-snippet.js").read_text()
    assert driver.execute_script("return document.scripts[0].textContent") == snippet
    assert driver.execute_script("return document.scripts[1].src").endswith("/bridge.js")


def test_the_page_without_the_tag_loads_through_a_shim_the_host_injects(broker, driver):
    size = SIZE + 3
    url = page(broker, "shim", size=size) + "&tag=0"
    # Nothing injected: the page has no shim, and its policy lets it connect to the broker only.
    driver.get(url + "&case=bare")
    assert driver.execute_script("return document.querySelectorAll('script[src]').length") == 0
    assert "error" in wait_for(driver, "window.pageLoad")
    # Injected at document start as the WebKit host does (bench_pageload.py's shim-injected ways).
    shim = (ROOT / "bridge-js" / "bridge.js").read_text()
    prelude = f"window.BridgeBrokerConfig=Object.assign({json.dumps({'url': broker.url})},window.BridgeBrokerConfig||{{}});\n"
    script = driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": prelude + shim})
    try:
        driver.get(url + "&case=injected")
        result = wait_for(driver, "window.pageLoad")
    finally:
        driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": script["identifier"]})
    assert "error" not in result, result
    assert result["bridged"] is True and result["bytes"] == RESOURCES * size
