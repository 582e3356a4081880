// The Response a bridged fetch resolves with: the broker's status, headers and URL, which the
// Response constructor alone cannot all hold.

import { base64ToBytes } from "./bytes.js";
import { global } from "./env.js";
import { absoluteUrl, pageOrigin, stripFragment } from "./urls.js";

function headersFromPairs(list) {
  const headers = new global.Headers();
  const pairs = Array.isArray(list) ? list : list && typeof list === "object" ? Object.entries(list) : [];
  for (const pair of pairs) {
    try {
      headers.append(String(pair[0]), String(pair[1]));
    } catch (_) {
      // A header the browser refuses to hold is left out rather than failing the whole response.
    }
  }
  return headers;
}

const HEADER_WRITERS = ["append", "delete", "set"];
const BODY_READERS = ["arrayBuffer", "blob", "bytes", "formData", "json", "text"];

/** A fetched response's headers have the "immutable" guard: every change throws a TypeError. */
function immutable(headers) {
  for (const name of HEADER_WRITERS) {
    Object.defineProperty(headers, name, {
      configurable: true,
      value: function () {
        throw new TypeError(`Failed to execute '${name}' on 'Headers': Headers are immutable`);
      },
    });
  }
  return headers;
}

/**
 * Response's url, redirected, type... are read-only getters: own properties shadow them, clones
 * included. A body reader (text(), json()...) of a Response over a script's stream rejects with a
 * TypeError whatever the stream failed with; `bodyError()` gives the error the browser's own
 * fetch rejects such a read with (the signal's reason after an abort), when there is one.
 */
function decorateResponse(response, overrides, bodyError) {
  for (const key of Object.keys(overrides)) {
    Object.defineProperty(response, key, { value: overrides[key], configurable: true });
  }
  Object.defineProperty(response, "headers", { value: immutable(response.headers), configurable: true });
  for (const name of BODY_READERS) {
    const read = response[name];
    if (typeof read !== "function" || !bodyError) continue;
    Object.defineProperty(response, name, {
      configurable: true,
      value: function () {
        const unused = !this.bodyUsed;
        return read.call(this).catch((error) => {
          const known = unused && error instanceof TypeError ? bodyError() : undefined;
          throw known !== undefined ? known : error;
        });
      },
    });
  }
  const clone = response.clone;
  Object.defineProperty(response, "clone", {
    configurable: true,
    value: function () {
      return decorateResponse(clone.call(this), overrides, bodyError);
    },
  });
  return response;
}

function responseTypeFor(href) {
  const origin = documentOrigin();
  // A URL that starts with the document's origin and a slash is of that origin: most of a page's
  // responses need no parse (each costs the page's main thread). Anything else is parsed.
  if (origin && href.startsWith(`${origin}/`)) return "basic";
  const url = absoluteUrl(href);
  return url && url.origin === origin ? "basic" : "cors";
}

/**
 * The document's origin, with which a "basic" response is same-origin (the Fetch standard): the
 * global's `origin` in a browser (not the base URL's, which a <base> element may move elsewhere;
 * and a string read, not a URL parsed, for each response); the base URL's outside one.
 */
function documentOrigin() {
  const origin = global.origin;
  return typeof origin === "string" && /^https?:\/\//.test(origin) ? origin : pageOrigin();
}

function bridgeInfo(head) {
  return {
    status: head.status,
    statusText: head.statusText || "",
    headers: Array.isArray(head.headers) ? head.headers : [],
    url: head.url,
    redirected: Boolean(head.redirected),
    cache: head.cache || null,
  };
}

export function makeResponse(body, head, fallbackUrl, bodyError) {
  const status = Number(head.status);
  const standard = status >= 200 && status <= 599;
  const init = { status: standard ? status : 200, statusText: String(head.statusText || ""), headers: headersFromPairs(head.headers) };
  let response;
  try {
    response = new global.Response(body, init);
  } catch (_) {
    init.statusText = ""; // Not a valid reason phrase for this browser.
    response = new global.Response(body, init);
  }
  const url = stripFragment(head.url || fallbackUrl);
  const overrides = { url, redirected: Boolean(head.redirected), type: responseTypeFor(url), bridge: bridgeInfo(head) };
  if (!standard) Object.assign(overrides, { status, ok: false });
  return decorateResponse(response, overrides, bodyError);
}

/** What a browser returns for redirect: "manual": status 0, no headers, no body; the 3xx stays on `.bridge`. */
export function opaqueRedirectResponse(requestUrl, head) {
  const response = new global.Response(null, { status: 200 });
  return decorateResponse(response, {
    url: stripFragment(requestUrl),
    redirected: false,
    type: "opaqueredirect",
    status: 0,
    ok: false,
    statusText: "",
    bridge: bridgeInfo(head),
  });
}

export function replyBodyBytes(reply) {
  if (reply.bodyEncoding === "text" && typeof reply.body === "string") return new TextEncoder().encode(reply.body);
  if (reply.bodyEncoding === "base64" && typeof reply.body === "string") return base64ToBytes(reply.body);
  return null;
}
