// The request identity a browser gives a page's requests and the broker now sets for it
// (docs/PROTOCOL.md, `page.identity` and `fetch`): the page's URL, user agent and languages, each
// request's credentials mode, referrer and referrer policy, and the header names a page may not set.

import { global } from "./env.js";
import { absoluteUrl, isHttpUrl } from "./urls.js";

// The Fetch standard's forbidden request-header names, plus `user-agent`: the standard allows it
// since 2015, yet Chromium drops it from fetch's Headers and XHR's setRequestHeader (checked in
// headless Chromium 156). A page cannot forge its identity through the bridge either.
const FORBIDDEN_REQUEST_HEADERS = [
  "accept-charset", "accept-encoding", "access-control-request-headers", "access-control-request-method",
  "access-control-request-private-network", "connection", "content-length", "cookie", "cookie2", "date", "dnt",
  "expect", "host", "keep-alive", "origin", "referer", "set-cookie", "te", "trailer", "transfer-encoding",
  "upgrade", "user-agent", "via",
];
const METHOD_OVERRIDE_HEADERS = ["x-http-method", "x-http-method-override", "x-method-override"];
const OVERRIDDEN_FORBIDDEN_METHODS = ["connect", "trace", "track"];

const REFERRER_POLICIES = [
  "no-referrer", "no-referrer-when-downgrade", "same-origin", "origin", "strict-origin",
  "origin-when-cross-origin", "strict-origin-when-cross-origin", "unsafe-url",
];
const DEFAULT_REFERRER_POLICY = "strict-origin-when-cross-origin";
// The old keywords Chromium still takes in <meta name=referrer>.
const LEGACY_REFERRER_KEYWORDS = {
  never: "no-referrer",
  always: "unsafe-url",
  default: DEFAULT_REFERRER_POLICY,
  "origin-when-crossorigin": "origin-when-cross-origin",
};

/** The Fetch standard's test, with Chromium's `user-agent`: such a header never leaves a page. */
export function isForbiddenRequestHeader(name, value) {
  const lower = String(name).toLowerCase();
  if (FORBIDDEN_REQUEST_HEADERS.includes(lower) || lower.startsWith("proxy-") || lower.startsWith("sec-")) return true;
  if (!METHOD_OVERRIDE_HEADERS.includes(lower) || value === undefined) return false;
  return String(value).split(",").some((method) => OVERRIDDEN_FORBIDDEN_METHODS.includes(method.trim().toLowerCase()));
}

// What the requests need of the page's URL, worked out again only when location.href moves (as
// history.pushState moves it): every fetch asks for it several times, and each parse of a URL
// costs the page's main thread.
let pageFacts = null;

function pageUrlFacts() {
  const location = global.location;
  const href = location && location.href ? String(location.href) : "";
  if (pageFacts && pageFacts.href === href && href) return pageFacts;
  const url = absoluteUrl(href);
  const http = isHttpUrl(url);
  pageFacts = { href, http, protocol: url ? url.protocol : null, hostname: url ? url.hostname : null, referrer: url ? referrerForm(url) : null };
  return pageFacts;
}

/** The page's URL as a referrer source: no fragment and no credentials (the broker applies the policy). */
function pageUrl() {
  return pageUrlFacts().referrer;
}

function referrerForm(url) {
  url.hash = "";
  url.username = "";
  url.password = "";
  return url.href;
}

/** What `page.identity` carries; its URL is the page's without the fragment (never part of a referrer). */
function pageIdentity() {
  const navigator = global.navigator || {};
  const identity = { url: pageUrl() || "about:blank" };
  if (typeof navigator.userAgent === "string") identity.userAgent = navigator.userAgent;
  const languages = navigator.languages;
  if (languages && typeof languages.length === "number") identity.languages = Array.from(languages, String);
  else if (typeof navigator.language === "string") identity.languages = [navigator.language];
  return identity;
}

/**
 * A request's referrer as the broker takes it: `about:client` (the default) is the page's URL, `""`
 * is none, anything else the absolute URL. A page that is not http(s) (file:, about:blank) has none
 * to give, as in a browser.
 */
function resolveReferrer(value) {
  if (value === "") return "";
  const page = pageUrl();
  if (value === undefined || value === null || value === "about:client" || value === "client") {
    return isHttpPage() ? page : "";
  }
  const url = absoluteUrl(value);
  if (!url || !isHttpUrl(url)) return "";
  return referrerForm(url);
}

function parsePolicy(text) {
  const token = String(text || "").trim().toLowerCase();
  if (REFERRER_POLICIES.includes(token)) return token;
  return LEGACY_REFERRER_KEYWORDS[token] || null;
}

/**
 * The document's referrer policy as script can see it: the last valid <meta name="referrer"> (an
 * invalid one changes nothing), else the default. A `Referrer-Policy` header on the page's own
 * response is not visible to script (bridge-js/README.md).
 */
function documentReferrerPolicy() {
  const doc = global.document;
  let policy = DEFAULT_REFERRER_POLICY;
  if (!doc || typeof doc.querySelectorAll !== "function") return policy;
  for (const meta of Array.from(doc.querySelectorAll("meta[name]"))) {
    const name = typeof meta.getAttribute === "function" ? meta.getAttribute("name") : null;
    if (!name || name.trim().toLowerCase() !== "referrer") continue;
    const parsed = parsePolicy(meta.getAttribute("content"));
    if (parsed) policy = parsed;
  }
  return policy;
}

/** Cookies are per host, not per origin: the page's cookies are the ones for its scheme and host. */
export function hasPageSchemeAndHost(url) {
  const page = pageUrlFacts();
  return Boolean(url && page.http && url.protocol === page.protocol && url.hostname === page.hostname);
}

// A broker without the handler (older than page.identity) or a connection that closed: nothing to report.
const QUIET_ERRORS = ["unknown_handler", "network", "cancelled"];

/** A post whose failure the page need not hear of, unless the broker refused it for a reason (not one of `alsoQuiet`). */
export function settleQuietly(client, promise, alsoQuiet) {
  promise.catch((error) => {
    const code = error && error.code;
    if (!(QUIET_ERRORS.includes(code) || (alsoQuiet && alsoQuiet.includes(code)))) client.report(error);
  });
}

/** Whether the page is an http(s) document: the only kind with a URL the broker's cookie and referrer rules take. */
export function isHttpPage() {
  return pageUrlFacts().http;
}

/**
 * Makes `page.identity` the first post of every connection (Client.greeting) and sends it again
 * before a later request when what it says changed meanwhile (the URL after history.pushState, the
 * languages after a languagechange), so the broker judges default cookie paths, SameSite, the
 * default referrer and Accept-Language against what the page has now.
 */
export function createIdentityReporter(client) {
  let sentText = null;
  // What the identity was last worked out from: the page's URL string and navigator's languages
  // (the same array until a languagechange) and language. While they stay, so does the identity,
  // and a request need not build and compare it again (every fetch asks).
  let seen = null;
  // A page that is not http(s) (file:, an app's own scheme in a WebView) still tells its user agent
  // and languages; a broker that wants an http(s) URL refuses it with bad_request, which is no news.
  const settled = (promise) => settleQuietly(client, promise, isHttpPage() ? null : ["bad_request"]);

  function post(body) {
    sentText = JSON.stringify(body);
    return { name: "page.identity", body, settled };
  }

  client.greeting = () => post(pageIdentity());
  return {
    /** Before a bridged request or cookie write: a new page.identity if it changed since the last. */
    refresh() {
      if (sentText === null) return;
      const location = global.location;
      const navigator = global.navigator || {};
      const current = { href: location ? location.href : undefined, languages: navigator.languages, language: navigator.language };
      if (seen && current.href === seen.href && current.languages === seen.languages && current.language === seen.language) return;
      seen = current;
      const body = pageIdentity();
      if (JSON.stringify(body) === sentText) return;
      const spec = post(body);
      spec.settled(client.exchange({ name: spec.name, body: spec.body }).promise);
    },
  };
}

/**
 * The identity fields of a `fetch` post: the request's credentials mode and mode as the page asked,
 * its referrer resolved (the broker applies the policy), its referrer policy or the document's, and
 * the page's cookies when the request goes to the page's scheme and host (`documentCookie`).
 */
export function identityFields(request, documentCookie) {
  const fields = {
    credentials: request.credentials || "same-origin",
    mode: request.mode || "cors",
    referrer: resolveReferrer(request.referrer),
    referrerPolicy: request.referrerPolicy || documentReferrerPolicy(),
  };
  if (documentCookie !== undefined) fields.documentCookie = documentCookie;
  return fields;
}
