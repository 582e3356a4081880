// The Response a bridged fetch resolves with: the broker's status, headers and URL, which the
// Response constructor alone cannot all hold.

import { base64ToBytes, decodeUtf8 } from "./bytes.js";
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

let made = null; // {Base, Bridged}: the subclass of the page's Response, made when first needed

/**
 * The Response a bridged fetch resolves with: a subclass of the page's own Response (its
 * `constructor` is Response, `instanceof Response` holds), made once. What the constructor alone
 * cannot set (`url`, `redirected`, `type`, the immutable headers, a status outside 200-599,
 * `bridge`) its prototype reads from the instance's private state: nothing is defined on each
 * instance. A body given as bytes is also read from those bytes by `arrayBuffer()`, `bytes()`,
 * `text()` and `json()`, without the browser's body reader (in Chromium 100 to 200 µs of the page's
 * main thread per response: scripts/bench_response.py); the Response holds the same bytes as its
 * real body, for everything else that reads it (`blob()`, `formData()`, `body`, the Cache API).
 * Once `body` was taken, or a reader of the real body ran, every read is the real body's, and a
 * body read from the bytes turns the real body read too, so that what comes after fails as the
 * browser's would. A body reader of a Response over a script's stream rejects with a TypeError
 * whatever the stream failed with; the state's `bodyError()` gives the error the browser's own
 * fetch rejects such a read with (the signal's reason after an abort), when there is one.
 */
function bridgedResponseClass() {
  const Base = global.Response;
  if (made && made.Base === Base) return made.Bridged;
  class Response extends Base {
    #state;

    constructor(body, init, state) {
      super(body, init);
      this.#state = state;
    }

    /** The instance's state; null while the base constructor runs (which may read the getters below). */
    static #of(response) {
      return #state in response ? response.#state : null;
    }

    get url() {
      const state = Response.#of(this);
      return state ? state.url : super.url;
    }

    get redirected() {
      const state = Response.#of(this);
      return state ? state.redirected : super.redirected;
    }

    get type() {
      const state = Response.#of(this);
      return state ? state.type : super.type;
    }

    get bridge() {
      const state = Response.#of(this);
      return state ? state.bridge : undefined;
    }

    get status() {
      const state = Response.#of(this);
      return state && state.status !== undefined ? state.status : super.status;
    }

    get ok() {
      const state = Response.#of(this);
      return state && state.status !== undefined ? false : super.ok;
    }

    get statusText() {
      const state = Response.#of(this);
      return state && state.statusText !== undefined ? state.statusText : super.statusText;
    }

    get headers() {
      const state = Response.#of(this);
      const headers = super.headers;
      if (state && !state.frozen) {
        state.frozen = true;
        immutable(headers);
      }
      return headers;
    }

    get body() {
      const state = Response.#of(this);
      const stream = super.body;
      if (state && !state.touched) {
        state.touched = true;
        // Read from the bytes already: the stream is read as the browser's would be by then.
        if (state.used && stream && !stream.locked) stream.getReader().cancel().catch(() => {});
      }
      return stream;
    }

    get bodyUsed() {
      const state = Response.#of(this);
      return (state !== null && state.used) || super.bodyUsed;
    }

    clone() {
      const state = this.#state;
      if (state.used) void this.body; // the real body is read: the browser's own clone() throws
      const copy = responseState(state);
      // Bytes no reader took yet: the clone holds them too. Otherwise the real body is teed.
      if (state.bytes && !state.touched && !super.bodyUsed) return new Response(state.bytes, state.init, copy);
      copy.bytes = null;
      return new Response(super.clone().body, state.init, copy);
    }

    arrayBuffer() {
      return this.#read("arrayBuffer", (bytes) => bytes.slice().buffer);
    }

    text() {
      return this.#read("text", decodeUtf8);
    }

    json() {
      return this.#read("json", (bytes) => JSON.parse(decodeUtf8(bytes)));
    }

    blob() {
      return this.#read("blob", null);
    }

    formData() {
      return this.#read("formData", null);
    }

    bytes() {
      return this.#read("bytes", (bytes) => bytes.slice());
    }

    /** `name`'s read of the body: from the bytes with `fromBytes`, when it can, else the real body's. */
    #read(name, fromBytes) {
      const state = this.#state;
      // Not when something read the real body meanwhile (the Cache API, Response.prototype's own readers).
      if (fromBytes && state.bytes && !state.touched && !state.used && !super.bodyUsed) {
        const bytes = state.bytes;
        state.used = true;
        state.bytes = null;
        try {
          return Promise.resolve(fromBytes(bytes));
        } catch (error) {
          return Promise.reject(error);
        }
      }
      if (state.used) void this.body; // the real body is read: the browser's own reader rejects
      state.bytes = null;
      const unused = !super.bodyUsed;
      const read = super[name]();
      const bodyError = state.bodyError;
      if (!bodyError) return read;
      return read.catch((error) => {
        const known = unused && error instanceof TypeError ? bodyError() : undefined;
        throw known !== undefined ? known : error;
      });
    }
  }
  // bytes() only where this browser's Response has it (Chromium 132 and later, Firefox 128, Safari 18).
  if (typeof Base.prototype.bytes !== "function") delete Response.prototype.bytes;
  Object.defineProperty(Response.prototype, "constructor", { value: Base, configurable: true, writable: true });
  made = { Base, Bridged: Response };
  return Response;
}

/**
 * The state of a Response of the class above: `fields` (what the response says: `url`,
 * `redirected`, `type`, `bridge`, `init`, maybe `status` and `statusText`, `bytes` and
 * `bodyError`), with nothing read, taken or frozen yet. A clone's is its original's made this way.
 */
function responseState(fields) {
  return Object.assign({ bytes: null, bodyError: null }, fields, { used: false, touched: false, frozen: false });
}

/**
 * A Response of `body` (bytes, a stream or null) with `init`, `state` as the class above reads it.
 * A header this browser refuses to hold is left out, and then a reason phrase it refuses.
 */
function construct(body, init, state) {
  const Bridged = bridgedResponseClass();
  try {
    return new Bridged(body, init, state);
  } catch (_) {
    init.headers = headersFromPairs(init.headers); // state.init is init: clones get these too
  }
  try {
    return new Bridged(body, init, state);
  } catch (_) {
    init.statusText = ""; // Not a valid reason phrase for this browser.
    return new Bridged(body, init, state);
  }
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
  const headers = head.headers && typeof head.headers === "object" ? head.headers : []; // pairs, or a record
  const init = { status: standard ? status : 200, statusText: String(head.statusText || ""), headers };
  const url = stripFragment(head.url || fallbackUrl);
  const state = responseState({
    url, redirected: Boolean(head.redirected), type: responseTypeFor(url), bridge: bridgeInfo(head),
    init, bytes: body instanceof Uint8Array ? body : null, bodyError,
  });
  if (!standard) state.status = status;
  return construct(body, init, state);
}

/** What a browser returns for redirect: "manual": status 0, no headers, no body; the 3xx stays on `.bridge`. */
export function opaqueRedirectResponse(requestUrl, head) {
  const init = { status: 200 };
  return construct(null, init, responseState({
    url: stripFragment(requestUrl), redirected: false, type: "opaqueredirect", bridge: bridgeInfo(head),
    init, status: 0, statusText: "",
  }));
}

export function replyBodyBytes(reply) {
  if (reply.bodyEncoding === "text" && typeof reply.body === "string") return new TextEncoder().encode(reply.body);
  if (reply.bodyEncoding === "base64" && typeof reply.body === "string") return base64ToBytes(reply.body);
  return null;
}
