"""The shim's bootstrap snippet (bridge-js/bridge-snippet.js) in headless Chromium: a page with it
connects once (the shim adopts the snippet's socket) and bridges its requests; a snippet to another
URL is closed and the shim connects on its own; the CSP hash bridge-js/README.md documents is what
lets the snippet run under a policy without 'unsafe-inline'. The same fetch/XHR scenarios with and
without the snippet are in test_differential.py."""
import base64
import hashlib
import re
import urllib.parse

from support import ROOT

SNIPPET = (ROOT / "bridge-js" / "bridge-snippet.js").read_text()
HASH = "'sha256-" + base64.b64encode(hashlib.sha256(SNIPPET.encode()).digest()).decode() + "'"

LOADED = """
    const done = arguments[arguments.length - 1];
    (async () => {
      const hello = await BridgeBroker.ready;
      const response = await fetch(arguments[0] + "/json");
      const json = await response.json();
      return {protocol: hello.protocol, bridged: Boolean(response.bridge), json,
              sockets: sockets.map((socket) => ({url: socket.url, state: socket.readyState})),
              violations, snippetLeft: Object.getOwnPropertySymbols(window).map(String)};
    })().then(done, (error) => done({error: String(error)}));
"""


def load(driver, site, hash_source=HASH, **query):
    socket = site["broker"].http.replace("http://", "ws://", 1)
    params = {"hash": hash_source, "socket": socket, "token": "", "snippet_token": "", **query}
    driver.get(f"{site['page']}/snippet.html?{urllib.parse.urlencode(params)}")
    return driver.execute_async_script(LOADED, site["origin"])


def test_the_documented_hash_is_the_snippets():
    for document in (ROOT / "README.md", ROOT / "bridge-js" / "README.md", ROOT / "bridge-js" / "bridge-snippet.html"):
        hashes = set(re.findall(r"'sha256-[A-Za-z0-9+/=]+'", document.read_text()))
        assert hashes == {HASH}, f"{document.name} names {hashes}, the snippet's hash is {HASH}"


def test_the_shim_adopts_the_snippets_socket(site, driver):
    result = load(driver, site)
    assert "error" not in result, result
    assert result["violations"] == [], "the hash lets the snippet run"
    assert result["protocol"] == 1 and result["bridged"] is True and result["json"]
    assert len(result["sockets"]) == 1, f"one connection, the snippet's: {result['sockets']}"
    assert result["sockets"][0]["state"] == 1
    assert "Symbol(bridge-broker.snippet)" not in result["snippetLeft"]


def test_a_snippet_to_another_url_is_closed_and_the_shim_connects_itself(site, driver):
    result = load(driver, site, snippet_token="another")
    assert "error" not in result, result
    assert result["bridged"] is True
    assert [socket["state"] for socket in result["sockets"]] in ([3, 1], [2, 1]), result["sockets"]
    assert result["sockets"][0]["url"].endswith("token=another")


def test_without_the_hash_the_policy_blocks_the_snippet_and_the_shim_connects_as_before(site, driver):
    result = load(driver, site, hash_source="'sha256-" + base64.b64encode(b"\0" * 32).decode() + "'")
    assert "error" not in result, result
    assert "script-src-elem" in result["violations"]
    assert result["bridged"] is True
    assert len(result["sockets"]) == 1, "only the shim's own"
