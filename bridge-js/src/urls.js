// URLs: the page's base, the broker's WebSocket URL from the script's own, the token parameter.

import { global } from "./env.js";

function documentBase() {
  const doc = global.document;
  if (doc && doc.baseURI) return doc.baseURI;
  if (global.location && global.location.href) return global.location.href;
  return undefined;
}

export function absoluteUrl(value, base) {
  try {
    return new URL(String(value), base === undefined ? documentBase() : base);
  } catch (_) {
    return null;
  }
}

export function isHttpUrl(url) {
  return Boolean(url) && (url.protocol === "http:" || url.protocol === "https:");
}

export function pageOrigin() {
  const base = absoluteUrl(".");
  return base && isHttpUrl(base) ? base.origin : null;
}

export function socketUrlFromScript(src) {
  const url = absoluteUrl(src);
  if (!isHttpUrl(url)) return null;
  return `${url.protocol === "https:" ? "wss:" : "ws:"}//${url.host}/bridge`;
}

/** Accepts ws(s):// or http(s):// broker URLs; a bare origin gets the /bridge path. */
export function normalizeSocketUrl(value) {
  const url = absoluteUrl(value);
  if (!url) throw new TypeError(`bridge-js: invalid broker URL ${JSON.stringify(String(value))}`);
  if (url.protocol === "http:") url.protocol = "ws:";
  else if (url.protocol === "https:") url.protocol = "wss:";
  if (url.protocol !== "ws:" && url.protocol !== "wss:") {
    throw new TypeError(`bridge-js: the broker URL must be ws:, wss:, http: or https:, not ${url.protocol}`);
  }
  if (url.pathname === "/" || url.pathname === "") url.pathname = "/bridge";
  return url.href;
}

// The last absolute socket URL httpOriginOfSocket was asked about, and its answer: the client's
// URL, asked about twice for every fetch (the broker's own origin is never bridged).
let lastSocketOrigin = { socket: null, origin: null };

export function httpOriginOfSocket(socketUrl) {
  if (socketUrl === lastSocketOrigin.socket) return lastSocketOrigin.origin;
  const url = absoluteUrl(socketUrl);
  if (!url) return null;
  const origin = `${url.protocol === "wss:" ? "https:" : "http:"}//${url.host}`;
  // Only an absolute URL's answer stays the same whatever the document's base URL becomes.
  if (typeof socketUrl === "string" && /^wss?:\/\//i.test(socketUrl)) lastSocketOrigin = { socket: socketUrl, origin };
  return origin;
}

export function withToken(socketUrl, token) {
  if (!token) return socketUrl;
  const url = new URL(socketUrl);
  url.searchParams.set("token", token);
  return url.href;
}

export function stripFragment(href) {
  const hash = String(href).indexOf("#");
  return hash < 0 ? String(href) : String(href).slice(0, hash);
}
