// The page code of tests/browser/test_identity.py: a page that logs in, uses its session, sets a
// cookie in script and logs out, with fetch and XHR, same-origin and cross-origin. It returns what
// script sees (document.cookie, response bodies); the origin records what it received.

function xhr(method, url, withCredentials, body) {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    let cookieAtHeaders = null;
    request.open(method, url);
    request.withCredentials = withCredentials;
    request.onreadystatechange = () => {
      if (request.readyState === 2) cookieAtHeaders = document.cookie;
    };
    request.onload = () => resolve({ status: request.status, cookieAtHeaders });
    request.onerror = () => reject(new Error(`XHR ${url} failed`));
    request.send(body === undefined ? null : body);
  });
}

async function call(url, init) {
  const response = await fetch(url, init);
  // The cookies of the response are script's to see when the fetch resolves, before the body.
  const cookieAtResponse = document.cookie;
  const body = await response.text();
  return { status: response.status, body, setCookie: response.headers.get("set-cookie"), cookieAtResponse, cookie: document.cookie };
}

async function scenario(other) {
  const seen = {};
  seen.atStart = document.cookie;
  seen.login = await call("/api/login", { method: "POST", body: "user=alice" });
  seen.afterLogin = await call("/api/echo?step=after-login");
  document.cookie = "theme=dark; path=/";
  seen.scriptCookie = await call("/api/echo?step=script-cookie");
  seen.omit = await call("/api/echo?step=omit", { credentials: "omit" });
  seen.omitSetCookie = await call("/api/login?step=omit-login", { method: "POST", body: "user=mallory", credentials: "omit" });
  seen.xhr = await xhr("GET", "/api/echo?step=xhr", false);
  seen.xhrPost = await xhr("POST", "/api/echo?step=xhr-post", false, "x=1");
  seen.xhrLogin = await xhr("POST", "/api/login?step=xhr-login", true, "user=alice");
  seen.post = await call("/api/echo?step=post", { method: "POST", body: "a=1" });
  seen.noReferrer = await call("/api/echo?step=no-referrer", { referrerPolicy: "no-referrer" });
  seen.pageHeaders = await call("/api/echo?step=page-headers", { headers: { "Accept-Language": "fr", Accept: "application/json", "User-Agent": "forged" } });
  seen.crossGet = await call(`${other}/api/echo?step=cross-get`);
  seen.crossInclude = await call(`${other}/api/echo?step=cross-get-include`, { credentials: "include" });
  seen.crossPost = await call(`${other}/api/echo?step=cross-post`, { method: "POST", body: "x", credentials: "include" });
  seen.crossXhr = await xhr("GET", `${other}/api/echo?step=cross-xhr`, false);
  seen.crossXhrCredentials = await xhr("GET", `${other}/api/echo?step=cross-xhr-credentials`, true);
  seen.hop = await call("/api/hop");
  seen.logout = await call("/api/logout", { method: "POST" });
  seen.afterLogout = await call("/api/echo?step=after-logout");
  // A client-side navigation: the Referer follows the URL, and a cookie's default path is the new one's.
  history.pushState({}, "", "/app/deeper/view");
  document.cookie = "pathy=1";
  seen.afterPush = await call("/api/echo?step=after-push");
  seen.deeper = await call("/app/deeper/api/echo?step=deeper");
  return seen;
}

async function relogin() {
  return call("/api/login", { method: "POST", body: "user=alice" });
}

async function whoami() {
  return call("/api/echo?step=whoami");
}

/** Cookie rules at their edges, each step a response that sets lines, then a request that shows the jar. */
async function edges() {
  const seen = {};
  const set = (step, ...lines) => call(`/api/set?step=${step}&${lines.map((line) => `c=${encodeURIComponent(line)}`).join("&")}`);
  seen.paths = await set("paths", "deep=1; Path=/api/echo", "shallow=1; Path=/", "other=1; Path=/elsewhere");
  seen.afterPaths = await call("/api/echo?step=after-paths");
  seen.attributes = await set("attributes", "sn=1; SameSite=None", "sns=1; SameSite=None; Secure", "strict=1; SameSite=Strict",
    "dom=1; Domain=127.0.0.1", "quoted=\"a b\"", "nameless", "=eq", "__Host-h=1; Secure; Path=/", "__Secure-s=1", "big=" + "x".repeat(5000));
  seen.afterAttributes = await call("/api/echo?step=after-attributes");
  // A new value is a new cookie for the Cookie header's order; the same value keeps its place.
  seen.replace = await set("replace", "strict=2; SameSite=Strict", "sns=1; SameSite=None; Secure; Max-Age=600");
  seen.afterReplace = await call("/api/echo?step=after-replace");
  document.cookie = "scriptsecure=1; Secure";
  document.cookie = "scripthttponly=1; HttpOnly";
  document.cookie = "scriptpath=1; path=/api";
  seen.afterScript = await call("/api/echo?step=after-script");
  seen.deletions = await set("deletions", "deep=; Path=/api/echo; Max-Age=0", "shallow=2; Expires=Thu, 01 Jan 1970 00:00:00 GMT", "dom=; Max-Age=-1");
  seen.afterDeletions = await call("/api/echo?step=after-deletions");
  return seen;
}

/**
 * Another site (localhost against the page's 127.0.0.1): a cross-site response cannot set Lax or
 * Strict cookies. (Chromium also blocks third-party SameSite=None cookies and partitions
 * Partitioned ones, which the jar does not do yet: docs/PROTOCOL.md.)
 */
async function crossSite(other) {
  const seen = {};
  // Lax and Strict are refused by SameSite; a SameSite=None one is a third-party cookie (blocked
  // by default, as headless Chromium does); a Partitioned one is kept for this top-level site.
  const lines = ["lax=1; Path=/", "strict=1; SameSite=Strict; Path=/", "third=1; SameSite=None; Secure; Path=/",
    "chips=1; SameSite=None; Secure; Path=/; Partitioned"];
  seen.set = await call(`${other}/api/set?step=xs-set&${lines.map((line) => `c=${encodeURIComponent(line)}`).join("&")}`, { credentials: "include" });
  seen.after = await call(`${other}/api/echo?step=xs-after`, { credentials: "include" });
  seen.post = await call(`${other}/api/echo?step=xs-post`, { method: "POST", body: "x", credentials: "include" });
  seen.sameOrigin = await call(`${other}/api/echo?step=xs-same-origin-credentials`);
  return seen;
}
