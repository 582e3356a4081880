"""The browser is the oracle: every scenario of scenarios.js runs in headless Chromium against one
origin twice, with the browser's own networking (a same-origin page, so CORS plays no part) and
through the shim, and the results must be equal scenario by scenario. A third run goes through the
shim with its bootstrap snippet before it, and must give what the shim alone gives.

The differences that remain are deliberate; each is listed here once, with the reason, and in
bridge-js/README.md ("Differences from the browser"). A listed scenario must still differ, so the
list cannot outlive the difference."""
import json

import pytest

import differential_origin
from support import Broker

# scenario name -> why the shim differs from the browser on purpose.
NULL_BODY = "the Fetch standard gives a null body to 204, 205, 304 and HEAD responses; Chromium gives an empty stream"
DELIBERATE = {
    "null body status 204": NULL_BODY,
    "null body status 205": NULL_BODY,
    "null body status 304": NULL_BODY,
    "HEAD has a null body and keeps Content-Length": NULL_BODY,
    "HEAD of a 404": NULL_BODY,
    "HEAD redirected by 303 stays HEAD": NULL_BODY,
    "ReadableStream body": "Chromium streams an upload only over HTTP/2 or QUIC; the broker streams it chunked to this HTTP/1.1 origin",
    "a response without a status line": "the broker's parser (SwiftNIO) refuses HTTP/0.9; Chromium shows it as a 200",
}


@pytest.fixture(scope="module")
def differential(driver):
    server, origin = differential_origin.start("")
    broker = Broker("--allow-origin", origin)
    differential_origin.DifferentialOrigin.broker = broker.http
    results = {}
    try:
        for mode in ("native", "shim", "snippet"):
            driver.get(f"{origin}/page?mode={mode}")
            results[mode] = driver.execute_async_script("""
                const done = arguments[arguments.length - 1];
                window.runScenarios(null, 6000).then(done, (error) => done({failed: String(error)}));
            """)
    finally:
        broker.stop()
        server.shutdown()
    return results


def test_there_are_at_least_eighty_scenarios(differential):
    assert len(differential["native"]) >= 80, len(differential["native"])
    assert set(differential["native"]) == set(differential["shim"])


def test_every_scenario_gives_what_the_browser_gives(differential):
    native, shim = differential["native"], differential["shim"]
    different = {name: {"browser": native[name], "shim": shim[name]}
                 for name in native if native[name] != shim[name] and name not in DELIBERATE}
    assert not different, json.dumps(different, indent=1, ensure_ascii=True)


def test_with_the_bootstrap_snippet_every_scenario_gives_the_same(differential):
    # The shim adopting the snippet's socket (bridge-js/README.md, "The bootstrap snippet") gives
    # what the browser gives, as the shim alone does, and where the shim differs on purpose, what
    # the shim alone gives. (Not the shim's results everywhere: a few scenarios race a 40 ms timer.)
    native, shim, snippet = differential["native"], differential["shim"], differential["snippet"]
    assert set(snippet) == set(native)
    different = {name: {"expected": shim[name] if name in DELIBERATE else native[name], "snippet": snippet[name]}
                 for name in native if snippet[name] != (shim[name] if name in DELIBERATE else native[name])}
    assert not different, json.dumps(different, indent=1, ensure_ascii=True)


def test_listed_differences_are_still_differences(differential):
    native, shim = differential["native"], differential["shim"]
    stale = [name for name in DELIBERATE if name not in native or native[name] == shim[name]]
    assert not stale, f"listed as deliberate but no longer different (or gone): {stale}"
