"""The broker as the page's user agent, with Chromium as the oracle: the same page code runs with
the browser's own networking (BridgeBroker.nativeFetch and NativeXMLHttpRequest) and through the
shim, against the demo origin's /cookies/ routes (another port of the page's host: cross-origin,
same-site), and what the origin received and what document.cookie shows must be equal."""
import json

from headless_client import BridgeConnection

SCENARIOS = r"""
const native = WAY === "native";
const f = native ? BridgeBroker.nativeFetch : fetch;
const X = native ? BridgeBroker.NativeXMLHttpRequest : XMLHttpRequest;
await BridgeBroker.ready;
const pick = (h) => ({ua: h["user-agent"], accept: h["accept"], lang: h["accept-language"], referer: h["referer"] || null, origin: h["origin"] || null});
const json = async (url, init) => (await f(ORIGIN + url, init)).json();
const xhr = (url, withCredentials) => new Promise((resolve, reject) => {
  const request = new X();
  request.open("GET", ORIGIN + url);
  request.withCredentials = withCredentials;
  request.onload = () => resolve(JSON.parse(request.responseText));
  request.onerror = () => reject(new Error("xhr failed"));
  request.send();
});
const out = {};
out.get = pick((await json("/cookies/echo?x=1", {credentials: "include"})).headers);
out.post = pick((await json("/cookies/echo", {method: "POST", body: "a", credentials: "include"})).headers);
out.noReferrer = pick((await json("/cookies/echo", {referrerPolicy: "no-referrer"})).headers);
out.unsafeURL = pick((await json("/cookies/echo", {referrerPolicy: "unsafe-url"})).headers);
out.ownAccept = pick((await json("/cookies/echo", {headers: {"Accept": "text/plain", "Accept-Language": "fr"}})).headers);
await f(ORIGIN + "/cookies/login?user=zed", {method: "POST", credentials: "include"});
out.afterLogin = document.cookie;
const session = (value) => (value || "").replace(/s-zed-\d+/, "S");
out.include = session((await json("/cookies/whoami", {credentials: "include"})).cookie);
out.sameOrigin = (await json("/cookies/whoami")).cookie;
out.omit = (await json("/cookies/whoami", {credentials: "omit"})).cookie;
out.xhrWith = session((await xhr("/cookies/whoami", true)).cookie);
out.xhrWithout = (await xhr("/cookies/whoami", false)).cookie;
await f(ORIGIN + "/cookies/set?c=" + encodeURIComponent("omitted=1; Path=/"), {credentials: "omit"});
out.omittedNotStored = document.cookie;
const hops = await json("/cookies/redirect?hops=2&c=" + encodeURIComponent("first=1; Path=/"), {credentials: "include"});
out.redirectCarried = session(hops.cookie);
out.afterRedirect = document.cookie;
document.cookie = "script=1; Path=/";
out.scriptCookieSent = session((await json("/cookies/whoami", {credentials: "include"})).cookie);
await f(ORIGIN + "/cookies/logout", {method: "POST", credentials: "include"});
out.afterLogout = document.cookie;
out.loggedOut = (await json("/cookies/whoami", {credentials: "include"})).cookie;
return out;
"""


def test_the_shim_sends_and_keeps_what_the_browser_does(page, site, driver):
    results = {}
    for way in ("native", "shim"):
        # Both jars start empty: the browser's, and the broker's (the shim on the native run's
        # page still reported its document.cookie writes to it).
        driver.delete_all_cookies()
        headless = BridgeConnection(site["broker"].url)
        assert headless.post("cookies.clear", {}, on_frame=lambda _: None)["ok"]
        page("", WAY=way)  # a fresh page load per way
        results[way] = page(SCENARIOS, WAY=way)
    native, shim = results["native"], results["shim"]
    assert "value" in native, native
    assert native["value"]["include"].startswith("session=S"), native  # the scenario itself works
    different = {key: {"browser": native["value"][key], "shim": shim.get("value", {}).get(key)}
                 for key in native["value"] if native["value"][key] != shim.get("value", {}).get(key)}
    assert not different, json.dumps({"differences": different, "shim": shim}, indent=1)
