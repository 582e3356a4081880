// document.cookie and the broker's cookie jar in step (docs/PROTOCOL.md, `page.cookie` and the
// `cookies` of a fetch reply; bridge-js/README.md, "The page's identity and cookies"):
// - a page's own write to document.cookie still goes to the browser, and is posted as `page.cookie`
//   so the jar stores it too (the broker refuses HttpOnly, as the browser does);
// - a bridged response's non-HttpOnly Set-Cookie lines for the page's host come back as `cookies`
//   and go through the browser's own setter before the page sees the response; that write is not
//   posted back (the jar has it already);
// - a request to the page's scheme and host carries `documentCookie`: the page's cookies that the
//   jar never saw through the shim (set before it loaded, or by a native request), so they are sent
//   too. Cookies the jar has are left to the jar, which knows their Path (document.cookie does not
//   say it, and shows cookies a request to another path would not carry).

import { global } from "./env.js";
import { hasPageSchemeAndHost, isHttpPage, settleQuietly } from "./identity.js";
import { soon } from "./util.js";

/** The name in a cookie string ("name=value; attributes", or "value" for a nameless cookie). */
function cookieName(text) {
  const pair = String(text).split(";", 1)[0];
  const equals = pair.indexOf("=");
  return equals < 0 ? "" : pair.slice(0, equals).trim();
}

/** The accessor the document's `cookie` comes from (Document.prototype in a browser). */
function findCookieAccessor(doc) {
  for (let owner = doc; owner; owner = Object.getPrototypeOf(owner)) {
    const descriptor = Object.getOwnPropertyDescriptor(owner, "cookie");
    if (descriptor) return descriptor.get && descriptor.set ? { owner, descriptor } : null;
  }
  return null;
}

/**
 * Wraps the document's `cookie` setter so page writes are posted with `post(cookieString)`; returns
 * {read, apply, documentCookieFor} over the native accessor. Without a document (a worker) or a
 * cookie accessor, it does nothing and reads nothing.
 */
export function createCookieBridge(post) {
  const doc = global.document;
  const found = doc ? findCookieAccessor(doc) : null;
  const nativeGet = found ? found.descriptor.get : null;
  const nativeSet = found ? found.descriptor.set : null;
  // Names the jar has had through this page: its writes and the cookies of bridged responses.
  const jarNames = new Set();
  // document.cookie as read for the requests started in this turn of the event loop (until the
  // microtasks queued so far have run): a page that starts 30 fetches at once reads it once, not
  // 30 times (each read is a call into the browser). A write through the page's setter or a
  // response's cookies drop it at once.
  let snapshot = null;

  if (found && found.descriptor.configurable) {
    Object.defineProperty(found.owner, "cookie", {
      configurable: true,
      enumerable: found.descriptor.enumerable,
      get: nativeGet,
      // An accessor's own setter, so it is named "set cookie" and is no constructor, as the native one.
      set: Object.getOwnPropertyDescriptor({
        set cookie(value) {
          nativeSet.call(this, value); // Throws where the browser refuses (an opaque origin): nothing to post then.
          if (this !== doc) return;
          snapshot = null;
          const text = String(value);
          jarNames.add(cookieName(text));
          post(text);
        },
      }, "cookie").set,
    });
  }

  function read() {
    if (!nativeGet) return "";
    try {
      return String(nativeGet.call(doc));
    } catch (_) {
      return ""; // A sandboxed document has no cookies to read.
    }
  }

  /** document.cookie for a request: one read per turn of the event loop (see `snapshot`). */
  function readForRequest() {
    if (snapshot === null) {
      snapshot = read();
      soon(() => {
        snapshot = null;
      });
    }
    return snapshot;
  }

  /** Stores the `cookies` of a bridged response in the browser, through the native setter. */
  function apply(lines) {
    if (!nativeSet || !Array.isArray(lines)) return;
    snapshot = null;
    for (const line of lines) {
      if (typeof line !== "string") continue;
      jarNames.add(cookieName(line));
      try {
        nativeSet.call(doc, line);
      } catch (_) {
        return; // The browser refuses cookies for this document altogether.
      }
    }
  }

  /**
   * For a request to the page's own scheme and host (unless credentials are omitted): the pairs of
   * document.cookie whose names the jar never had through this page.
   */
  function documentCookieFor(url, credentials) {
    if (credentials === "omit" || !hasPageSchemeAndHost(url)) return undefined;
    const pairs = readForRequest().split(";").map((pair) => pair.trim()).filter((pair) => pair && !jarNames.has(cookieName(pair)));
    return pairs.length ? pairs.join("; ") : undefined;
  }

  return { read, apply, documentCookieFor };
}

/** What a page write to document.cookie posts: `page.cookie`, after a new `page.identity` if the URL moved. */
export function pageCookieSender(client, identity) {
  return (cookie) => {
    // The jar keeps cookies of http(s) pages only (a file: page has none in a browser either).
    if (!isHttpPage()) return;
    identity.refresh();
    settleQuietly(client, client.exchange({ name: "page.cookie", body: { cookie } }).promise);
  };
}
