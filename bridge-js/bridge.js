/*
 * bridge.js: the page shim of Bridge Broker (protocol bridge.v1).
 *
 * Classic script:  <script src="http://127.0.0.1:8787/bridge.js" data-token="..."></script>
 * ES module:       import "http://127.0.0.1:8787/bridge.js";  then use globalThis.BridgeBroker
 *
 * One dependency-free file, no build step. It defines globalThis.BridgeBroker, connects to the
 * broker the script came from, patches fetch and XMLHttpRequest (opt-out with data-patch="none"),
 * polyfills window.webkit.messageHandlers outside a real WKWebView and reports page-load progress.
 * See README.md beside this file and docs/PROTOCOL.md for the wire protocol.
 */
(function (global) {
  "use strict";

  const MARKER = Symbol.for("bridge-broker.shim");
  // A page that includes the shim twice (script tag and import) must keep one connection.
  if (global.BridgeBroker && global.BridgeBroker[MARKER]) return;

  // ------------------------------------------------------------------------------- constants

  const VERSION = "0.1.0";
  const SUBPROTOCOL = "bridge.v1";
  const DEFAULT_BROKER_URL = "ws://127.0.0.1:8787/bridge";
  const FRAME_HEADER_BYTES = 10;
  const FRAME_KIND_BODY = 0x01;
  const FRAME_FLAG_END = 0x01;
  const TWO_POW_32 = 4294967296;
  const UPLOAD_CHUNK_BYTES = 256 * 1024;
  // Above this much unsent data the upload waits, so a 1 GiB Blob is never copied into the socket at once.
  const UPLOAD_HIGH_WATER_BYTES = 4 * 1024 * 1024;
  // A browser's fetch and XHR (timeout 0) never time out on their own; the protocol's default of 60 s
  // would cut long downloads, so the shim asks for the protocol's maximum unless told otherwise.
  const DEFAULT_REQUEST_TIMEOUT_MS = 86400000;
  const DEFAULT_QUEUE_TIMEOUT_MS = 30000;
  const DEFAULT_BACKOFF = { initial: 250, max: 30000, factor: 2 };
  const WEBKIT_BINARY_PREFIX = "b64:";
  const NULL_BODY_STATUSES = [101, 103, 204, 205, 304];
  const REDIRECT_STATUSES = [301, 302, 303, 307, 308];
  const EMPTY_BYTES = new Uint8Array(0);
  const HTTP_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
  const FORBIDDEN_METHODS = ["CONNECT", "TRACE", "TRACK"];
  const NORMALIZED_METHODS = ["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"];
  // The Fetch standard's forbidden request-header names: a page's XHR cannot set them in a browser either.
  const FORBIDDEN_REQUEST_HEADERS = [
    "accept-charset", "accept-encoding", "access-control-request-headers", "access-control-request-method",
    "connection", "content-length", "cookie", "cookie2", "date", "dnt", "expect", "host", "keep-alive",
    "origin", "referer", "set-cookie", "te", "trailer", "transfer-encoding", "upgrade", "via",
  ];

  // --------------------------------------------------------------------------------- helpers

  const hasOwn = (object, key) => Object.prototype.hasOwnProperty.call(object, key);
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  const clamp01 = (value) => (value > 1 ? 1 : value > 0 ? value : 0);

  function now() {
    const performance = global.performance;
    return performance && typeof performance.now === "function" ? performance.now() : Date.now();
  }

  function randomToken(length) {
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const bytes = new Uint8Array(length);
    if (global.crypto && typeof global.crypto.getRandomValues === "function") global.crypto.getRandomValues(bytes);
    else for (let i = 0; i < length; i++) bytes[i] = Math.floor(Math.random() * 256);
    let token = "";
    for (const byte of bytes) token += alphabet[byte % alphabet.length];
    return token;
  }

  function reportError(error) {
    if (typeof global.reportError === "function") global.reportError(error);
    else if (global.console) global.console.error(error);
  }

  function safeCall(fn, ...args) {
    try {
      return fn(...args);
    } catch (error) {
      reportError(error);
      return undefined;
    }
  }

  /** A Uint8Array over the bytes of an ArrayBuffer or view, without copying. */
  function viewBytes(value) {
    if (value instanceof Uint8Array) return value;
    if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
    return new Uint8Array(value);
  }

  function isBufferSource(value) {
    return ArrayBuffer.isView(value) || Object.prototype.toString.call(value) === "[object ArrayBuffer]";
  }

  function concatBytes(chunks, total) {
    const out = new Uint8Array(total);
    let offset = 0;
    for (const chunk of chunks) {
      out.set(chunk, offset);
      offset += chunk.byteLength;
    }
    return out;
  }

  function utf8ByteLength(text) {
    let bytes = 0;
    for (let i = 0; i < text.length; i++) {
      const unit = text.charCodeAt(i);
      if (unit < 0x80) bytes += 1;
      else if (unit < 0x800) bytes += 2;
      else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
        bytes += 4;
        i++;
      } else bytes += 3;
    }
    return bytes;
  }

  function bytesToBase64(bytes) {
    let binary = "";
    for (let i = 0; i < bytes.length; i += 0x8000) {
      binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    }
    return global.btoa(binary);
  }

  function base64ToBytes(text) {
    const binary = global.atob(text);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  }

  function isReadableStream(value) {
    return typeof global.ReadableStream === "function" && value instanceof global.ReadableStream;
  }

  function isRequest(value) {
    return typeof global.Request === "function" && value instanceof global.Request;
  }

  function domException(message, name) {
    return new global.DOMException(message, name);
  }

  // ---------------------------------------------------------------------------------- errors

  /** The error every failed post rejects with: `code` is the protocol's error code. */
  class BridgeError extends Error {
    constructor(code, message, extra) {
      super(message);
      this.name = "BridgeError";
      this.code = code;
      if (extra) Object.assign(this, extra);
    }
  }

  function errorFromBroker(error) {
    const code = error && typeof error.code === "string" ? error.code : "internal";
    const message = error && typeof error.message === "string" ? error.message : "the broker gave no message";
    return new BridgeError(code, message);
  }

  function abortReason(signal) {
    if (signal && signal.reason !== undefined) return signal.reason;
    return domException("The operation was aborted.", "AbortError");
  }

  /** Fetch reports every failure without a response as a TypeError; the broker's code stays on it. */
  function fetchFailure(error) {
    const failure = new TypeError(`Failed to fetch: ${error.message} [${error.code}]`);
    failure.cause = error;
    failure.code = error.code;
    return failure;
  }

  // ---------------------------------------------------------------------------- binary frames

  /** The 10-byte header of docs/PROTOCOL.md: kind, flags (END), 64-bit big-endian post id. */
  function encodeBodyFrame(id, payload, end) {
    const frame = new Uint8Array(FRAME_HEADER_BYTES + payload.byteLength);
    const view = new DataView(frame.buffer);
    view.setUint8(0, FRAME_KIND_BODY);
    view.setUint8(1, end ? FRAME_FLAG_END : 0);
    view.setUint32(2, Math.floor(id / TWO_POW_32));
    view.setUint32(6, id >>> 0);
    frame.set(payload, FRAME_HEADER_BYTES);
    return frame;
  }

  function decodeFrame(data) {
    const bytes = viewBytes(data);
    if (bytes.byteLength < FRAME_HEADER_BYTES) return null;
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    return {
      kind: view.getUint8(0),
      end: (view.getUint8(1) & FRAME_FLAG_END) !== 0,
      id: view.getUint32(2) * TWO_POW_32 + view.getUint32(6),
      payload: bytes.subarray(FRAME_HEADER_BYTES),
    };
  }

  // ------------------------------------------------------------------------------------ URLs

  function documentBase() {
    const doc = global.document;
    if (doc && doc.baseURI) return doc.baseURI;
    if (global.location && global.location.href) return global.location.href;
    return undefined;
  }

  function absoluteUrl(value, base) {
    try {
      return new URL(String(value), base === undefined ? documentBase() : base);
    } catch (_) {
      return null;
    }
  }

  function isHttpUrl(url) {
    return Boolean(url) && (url.protocol === "http:" || url.protocol === "https:");
  }

  function pageOrigin() {
    const base = absoluteUrl(".");
    return base && isHttpUrl(base) ? base.origin : null;
  }

  function socketUrlFromScript(src) {
    const url = absoluteUrl(src);
    if (!isHttpUrl(url)) return null;
    return `${url.protocol === "https:" ? "wss:" : "ws:"}//${url.host}/bridge`;
  }

  /** Accepts ws(s):// or http(s):// broker URLs; a bare origin gets the /bridge path. */
  function normalizeSocketUrl(value) {
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

  function httpOriginOfSocket(socketUrl) {
    const url = absoluteUrl(socketUrl);
    if (!url) return null;
    return `${url.protocol === "wss:" ? "https:" : "http:"}//${url.host}`;
  }

  function withToken(socketUrl, token) {
    if (!token) return socketUrl;
    const url = new URL(socketUrl);
    url.searchParams.set("token", token);
    return url.href;
  }

  function stripFragment(href) {
    const hash = String(href).indexOf("#");
    return hash < 0 ? String(href) : String(href).slice(0, hash);
  }

  function parseList(value) {
    if (value === undefined || value === null || value === false) return [];
    if (Array.isArray(value)) return value.filter((item) => item !== "" && item != null);
    if (value instanceof RegExp) return [value];
    return String(value).split(/[\s,]+/).filter(Boolean);
  }

  function escapeRegExp(text) {
    return text.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
  }

  /** A pattern is a URL prefix, or a glob over the whole URL when it has `*`; "/path" means this page's origin. */
  function compilePattern(pattern) {
    if (pattern instanceof RegExp) return (href) => pattern.test(href);
    let text = String(pattern);
    if (text.startsWith("/") && !text.startsWith("//")) {
      const origin = pageOrigin();
      if (origin) text = origin + text;
    }
    if (text.includes("*")) {
      const regexp = new RegExp(`^${text.split("*").map(escapeRegExp).join(".*")}$`);
      return (href) => regexp.test(href);
    }
    return (href) => href.startsWith(text);
  }

  class UrlRules {
    constructor(include, exclude) {
      this.include = parseList(include).map(compilePattern);
      this.exclude = parseList(exclude).map(compilePattern);
    }

    allows(href) {
      if (this.exclude.some((matches) => matches(href))) return false;
      return this.include.length === 0 || this.include.some((matches) => matches(href));
    }
  }

  // --------------------------------------------------------------------------------- emitter

  class Emitter {
    constructor() {
      this.listeners = new Map();
    }

    on(name, listener) {
      if (typeof listener !== "function") return () => {};
      const key = String(name);
      if (!this.listeners.has(key)) this.listeners.set(key, []);
      this.listeners.get(key).push(listener);
      return () => this.off(key, listener);
    }

    off(name, listener) {
      const list = this.listeners.get(String(name));
      if (!list) return;
      const index = list.indexOf(listener);
      if (index >= 0) list.splice(index, 1);
    }

    has(name) {
      const list = this.listeners.get(String(name));
      return Boolean(list && list.length);
    }

    emit(name, ...args) {
      const list = this.listeners.get(String(name));
      if (!list) return;
      for (const listener of list.slice()) safeCall(listener, ...args);
    }
  }

  // ------------------------------------------------------------------------------ transports

  /** The default transport: one WebSocket with subprotocol bridge.v1. */
  class WebSocketTransport {
    constructor(url, sink) {
      this.kind = "websocket";
      this.url = url;
      this.sink = sink;
      this.closed = false;
      const socket = new global.WebSocket(url, [SUBPROTOCOL]);
      socket.binaryType = "arraybuffer";
      socket.onmessage = (event) => {
        if (typeof event.data === "string") sink.onText(event.data);
        else sink.onBinary(event.data);
      };
      // A failed handshake fires error then close; close alone carries what the shim needs.
      socket.onerror = () => {};
      socket.onclose = (event) => this.finish(event.code, event.reason);
      this.socket = socket;
    }

    start() {}

    sendText(text) {
      this.socket.send(text);
    }

    sendBinary(bytes) {
      this.socket.send(bytes);
    }

    async drain() {
      while (!this.closed && this.socket.readyState === 1 && this.socket.bufferedAmount > UPLOAD_HIGH_WATER_BYTES) {
        await sleep(10);
      }
    }

    close(code, reason) {
      this.closed = true;
      const socket = this.socket;
      socket.onmessage = socket.onclose = null;
      try {
        socket.close(code, reason);
      } catch (_) {
        // Closing a socket that never opened may throw in old engines; it is gone either way.
      }
    }

    finish(code, reason) {
      if (this.closed) return;
      this.closed = true;
      this.sink.onClose({ code: code || 1006, reason: reason || "" });
    }
  }

  /**
   * Inside a WKWebView whose host registered a `bridge` script message handler: envelopes go out as
   * JSON strings through that handler, binary frames as "b64:" + base64 strings; the host hands
   * broker frames to window.__bridgeBrokerReceive (JSON string, "b64:" string, ArrayBuffer or object).
   * window.__bridgeBrokerClose(code, reason) tells the shim the host dropped its side: posts in flight
   * fail with `network` and the shim announces itself again.
   */
  class WebKitTransport {
    constructor(handler, sink) {
      this.kind = "webkit";
      this.handler = handler;
      this.sink = sink;
      this.closed = false;
      global.__bridgeBrokerReceive = (frame) => this.receive(frame);
      global.__bridgeBrokerClose = (code, reason) => this.finish(code, reason);
    }

    start() {
      // The host has no handshake to answer, so the shim announces itself and the host replies with hello.
      this.handler.postMessage(JSON.stringify({ type: "open", protocol: SUBPROTOCOL }));
    }

    receive(frame) {
      if (this.closed) return false;
      if (typeof frame === "string") {
        if (frame.startsWith(WEBKIT_BINARY_PREFIX)) this.sink.onBinary(base64ToBytes(frame.slice(WEBKIT_BINARY_PREFIX.length)));
        else this.sink.onText(frame);
      } else if (isBufferSource(frame)) {
        this.sink.onBinary(frame);
      } else if (frame && typeof frame === "object") {
        this.sink.onEnvelope(frame);
      }
      return true;
    }

    sendText(text) {
      this.handler.postMessage(text);
    }

    sendBinary(bytes) {
      this.handler.postMessage(WEBKIT_BINARY_PREFIX + bytesToBase64(bytes));
    }

    drain() {
      return Promise.resolve();
    }

    close() {
      this.closed = true;
    }

    finish(code, reason) {
      if (this.closed) return;
      this.closed = true;
      this.sink.onClose({ code: code || 1006, reason: reason || "" });
    }
  }

  // ---------------------------------------------------------------------------- body sources

  // A body source knows its length (or null when it streams) and yields chunks of at most `size` bytes.

  function bytesSource(bytes) {
    return {
      length: bytes.byteLength,
      async *chunks(size) {
        for (let offset = 0; offset < bytes.byteLength; offset += size) {
          yield bytes.subarray(offset, Math.min(offset + size, bytes.byteLength));
        }
      },
    };
  }

  function blobSource(blob) {
    return {
      length: blob.size,
      async *chunks(size) {
        for (let offset = 0; offset < blob.size; offset += size) {
          const part = blob.slice(offset, Math.min(offset + size, blob.size));
          yield new Uint8Array(await part.arrayBuffer());
        }
      },
    };
  }

  function streamSource(stream) {
    return {
      length: null,
      async *chunks(size) {
        const reader = stream.getReader();
        let finished = false;
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) {
              finished = true;
              return;
            }
            if (!isBufferSource(value)) throw new TypeError("a request body stream must yield Uint8Array chunks");
            const bytes = viewBytes(value);
            for (let offset = 0; offset < bytes.byteLength; offset += size) {
              yield bytes.subarray(offset, Math.min(offset + size, bytes.byteLength));
            }
          }
        } finally {
          if (!finished) reader.cancel().catch(() => {});
        }
      },
    };
  }

  // -------------------------------------------------------------------------------- exchange

  /** One post: queued until the connection is ready, then in flight until its reply. */
  class Exchange {
    constructor(client, spec) {
      this.client = client;
      this.spec = spec;
      this.id = null;
      this.state = "new"; // new, queued, sent, settled
      this.transport = null;
      this.bodyJson = undefined;
      this.queueTimer = null;
      this.detachSignal = null;
      this.promise = new Promise((resolve, reject) => {
        this.resolvePromise = resolve;
        this.rejectPromise = reject;
      });
    }

    get expectsReply() {
      return this.spec.reply !== false;
    }

    get settled() {
      return this.state === "settled";
    }

    /** Stops the post: dequeues it or sends a cancel frame, and rejects its promise with `reason`. */
    abort(reason) {
      this.client.cancel(this, reason);
    }

    resolve(value) {
      if (this.settle()) this.resolvePromise(value);
    }

    reject(error) {
      if (this.settle()) this.rejectPromise(error);
    }

    settle() {
      if (this.settled) return false;
      this.state = "settled";
      clearTimeout(this.queueTimer);
      if (this.detachSignal) this.detachSignal();
      return true;
    }
  }

  function envelopeText(exchange) {
    let text = `{"type":"post","name":${JSON.stringify(exchange.spec.name)}`;
    if (exchange.expectsReply) text += `,"id":${exchange.id}`;
    if (exchange.bodyJson !== undefined) text += `,"body":${exchange.bodyJson}`;
    return `${text}}`;
  }

  // ---------------------------------------------------------------------------------- client

  /** The connection to the broker: ids, posts in flight, the queue, reconnection. */
  class Client {
    constructor(emitter) {
      this.emitter = emitter;
      this.url = DEFAULT_BROKER_URL;
      this.token = null;
      this.transportKind = "auto";
      this.backoff = Object.assign({}, DEFAULT_BACKOFF);
      this.queueTimeout = DEFAULT_QUEUE_TIMEOUT_MS;
      this.state = "idle"; // idle, connecting, open, closed
      this.started = false;
      this.transport = null;
      this.hello = null;
      this.lastHello = null;
      this.nextId = 1;
      this.pending = new Map();
      this.queue = [];
      this.attempt = 0;
      this.reconnectTimer = null;
      this.readyResolved = false;
      this.ready = new Promise((resolve) => {
        this.resolveReady = resolve;
      });
    }

    get isReady() {
      return this.transport !== null && this.hello !== null;
    }

    configure(options) {
      if (options.url) this.url = normalizeSocketUrl(options.url);
      if (hasOwn(options, "token")) this.token = options.token || null;
      if (options.transport) this.transportKind = options.transport;
      if (options.backoff) Object.assign(this.backoff, options.backoff);
      if (options.queueTimeout != null) this.queueTimeout = Number(options.queueTimeout);
    }

    connect(options) {
      this.configure(options || {});
      this.started = true;
      clearTimeout(this.reconnectTimer);
      this.closeTransport(1000, "connect() was called again");
      this.state = "connecting";
      this.attempt = 0;
      this.open();
    }

    disconnect() {
      this.started = true;
      this.state = "closed";
      clearTimeout(this.reconnectTimer);
      this.closeTransport(1000, "disconnect() was called");
      const error = new BridgeError("network", "bridge-js: disconnect() was called before the post was sent");
      for (const exchange of this.queue.splice(0)) exchange.reject(error);
    }

    /** The WKWebView transport needs a real `bridge` handler: the polyfill's would post to itself. */
    useWebKit() {
      if (this.transportKind === "websocket") return false;
      const webkit = global.webkit;
      const handlers = webkit && webkit.messageHandlers;
      return Boolean(handlers && !handlers[MARKER] && handlers.bridge);
    }

    open() {
      this.reconnectTimer = null;
      this.nextId = 1;
      this.hello = null;
      let transport = null;
      const current = () => transport !== null && this.transport === transport;
      const sink = {
        onText: (text) => current() && this.onText(text),
        onEnvelope: (message) => current() && this.onEnvelope(message),
        onBinary: (data) => current() && this.onBinary(data),
        onClose: (info) => current() && this.onTransportClosed(info),
      };
      try {
        transport = this.useWebKit()
          ? new WebKitTransport(global.webkit.messageHandlers.bridge, sink)
          : new WebSocketTransport(withToken(this.url, this.token), sink);
      } catch (error) {
        this.emitter.emit("close", { code: 1006, reason: String(error && error.message) });
        this.scheduleReconnect();
        return;
      }
      this.transport = transport;
      transport.start();
    }

    closeTransport(code, reason) {
      const transport = this.transport;
      if (!transport) return;
      this.transport = null;
      this.hello = null;
      transport.close(code, reason);
      this.failInFlight(`bridge-js closed the connection to the broker (${reason})`);
      this.emitter.emit("close", { code, reason });
    }

    onTransportClosed(info) {
      this.transport = null;
      this.hello = null;
      const detail = info.reason ? `${info.code}, ${info.reason}` : `${info.code}`;
      this.failInFlight(`the connection to the broker at ${this.url} closed (code ${detail})`);
      this.emitter.emit("close", info);
      if (this.state !== "closed") {
        this.state = "connecting";
        this.scheduleReconnect();
      }
    }

    failInFlight(why) {
      const inFlight = Array.from(this.pending.values());
      this.pending.clear();
      for (const exchange of inFlight) {
        exchange.reject(new BridgeError("network", `${why} before the reply to post #${exchange.id} "${exchange.spec.name}"`));
      }
    }

    scheduleReconnect() {
      if (this.state === "closed") return;
      const { initial, max, factor } = this.backoff;
      const ceiling = Math.min(max, initial * Math.pow(factor, this.attempt));
      // Half fixed, half random: retries spread out across tabs yet never come back too early.
      const delay = ceiling / 2 + Math.random() * (ceiling / 2);
      this.attempt++;
      clearTimeout(this.reconnectTimer);
      this.reconnectTimer = setTimeout(() => {
        if (this.state !== "closed") this.open();
      }, delay);
    }

    onText(text) {
      let message;
      try {
        message = JSON.parse(text);
      } catch (_) {
        this.report(new BridgeError("bad_message", "bridge-js received a text frame that is not JSON"));
        return;
      }
      if (message && typeof message === "object") this.onEnvelope(message);
    }

    onEnvelope(message) {
      switch (message.type) {
        case "hello":
          return this.onHello(message);
        case "reply":
          return this.onReply(message);
        case "event":
          return this.onEvent(message);
        case "error":
          return this.report(errorFromBroker(message.error), message);
        default:
          return undefined; // Unknown envelope types are for later protocol versions.
      }
    }

    onHello(hello) {
      this.hello = hello;
      this.lastHello = hello;
      this.state = "open";
      this.attempt = 0;
      if (!this.readyResolved) {
        this.readyResolved = true;
        this.resolveReady(hello);
      }
      this.emitter.emit("open", hello);
      this.flushQueue();
    }

    onReply(message) {
      const exchange = this.pending.get(message.id);
      if (!exchange) return;
      this.pending.delete(message.id);
      if (message.ok) exchange.resolve(message.body === undefined ? null : message.body);
      else exchange.reject(errorFromBroker(message.error));
      this.flushQueue();
    }

    onEvent(message) {
      if (typeof message.id === "number") {
        const exchange = this.pending.get(message.id);
        if (exchange && !exchange.settled && exchange.spec.onEvent) {
          safeCall(exchange.spec.onEvent, message.name, message.body);
        }
        return;
      }
      this.emitter.emit(String(message.name), message.body, message);
    }

    onBinary(data) {
      const frame = decodeFrame(data);
      if (!frame || frame.kind !== FRAME_KIND_BODY) {
        this.report(new BridgeError("bad_message", "bridge-js received a malformed binary frame"));
        return;
      }
      const exchange = this.pending.get(frame.id);
      if (exchange && !exchange.settled && exchange.spec.onBinary) {
        safeCall(exchange.spec.onBinary, frame.payload, frame.end);
      }
    }

    report(error, envelope) {
      if (envelope && envelope.duplicateId !== undefined) error.duplicateId = envelope.duplicateId;
      if (this.emitter.has("error")) this.emitter.emit("error", error);
      else if (global.console) global.console.warn(`bridge-js: ${error.code}: ${error.message}`);
    }

    /** Starts a post described by `spec` ({name, body, reply, signal, upload, onEvent, onBinary}). */
    exchange(spec) {
      const exchange = new Exchange(this, spec);
      try {
        exchange.bodyJson = spec.body === undefined ? undefined : JSON.stringify(spec.body);
      } catch (error) {
        exchange.reject(new BridgeError("bad_message", `the body of post "${spec.name}" is not JSON: ${error.message}`));
        return exchange;
      }
      if (this.state === "closed") {
        exchange.reject(new BridgeError("network", "bridge-js is disconnected: call BridgeBroker.connect() first"));
        return exchange;
      }
      if (spec.signal && !this.watchSignal(exchange, spec.signal)) return exchange;
      exchange.state = "queued";
      this.queue.push(exchange);
      this.flushQueue();
      if (exchange.state === "queued") this.armQueueTimer(exchange);
      return exchange;
    }

    watchSignal(exchange, signal) {
      if (signal.aborted) {
        exchange.reject(abortReason(signal));
        return false;
      }
      const onAbort = () => this.cancel(exchange, abortReason(signal));
      signal.addEventListener("abort", onAbort, { once: true });
      exchange.detachSignal = () => signal.removeEventListener("abort", onAbort);
      return true;
    }

    armQueueTimer(exchange) {
      exchange.queueTimer = setTimeout(() => {
        if (exchange.state !== "queued") return;
        // Waiting for a free slot on a live connection is not a failure; waiting for a broker is.
        if (this.isReady) return this.armQueueTimer(exchange);
        this.removeFromQueue(exchange);
        exchange.reject(new BridgeError("network", `could not reach the broker at ${this.url} within ${this.queueTimeout} ms`));
      }, this.queueTimeout);
    }

    removeFromQueue(exchange) {
      const index = this.queue.indexOf(exchange);
      if (index >= 0) this.queue.splice(index, 1);
    }

    cancel(exchange, reason) {
      if (exchange.settled) return;
      if (exchange.state === "queued") this.removeFromQueue(exchange);
      else if (exchange.state === "sent" && exchange.expectsReply) this.sendCancel(exchange);
      exchange.reject(reason === undefined ? domException("The operation was aborted.", "AbortError") : reason);
    }

    sendCancel(exchange) {
      if (this.transport && exchange.transport === this.transport) {
        this.transport.sendText(JSON.stringify({ type: "cancel", id: exchange.id }));
      }
    }

    limit(name) {
      const limits = this.hello && this.hello.limits;
      const value = limits && limits[name];
      return typeof value === "number" && value > 0 ? value : null;
    }

    flushQueue() {
      while (this.queue.length && this.isReady) {
        const exchange = this.queue[0];
        if (exchange.expectsReply && this.pending.size >= (this.limit("maxInFlight") || Infinity)) return;
        this.queue.shift();
        this.dispatch(exchange);
      }
    }

    dispatch(exchange) {
      clearTimeout(exchange.queueTimer);
      const transport = this.transport;
      if (exchange.expectsReply) exchange.id = this.nextId++;
      const text = envelopeText(exchange);
      const maxBytes = this.limit("maxMessageBytes");
      // The broker closes the whole connection (1009) on an oversized frame: refuse it here instead.
      if (maxBytes && text.length > maxBytes / 3 && utf8ByteLength(text) > maxBytes) {
        exchange.reject(new BridgeError("too_large", `post "${exchange.spec.name}" is larger than the broker's maxMessageBytes (${maxBytes})`));
        return;
      }
      if (exchange.expectsReply) this.pending.set(exchange.id, exchange);
      exchange.state = "sent";
      exchange.transport = transport;
      try {
        transport.sendText(text);
      } catch (error) {
        this.pending.delete(exchange.id);
        exchange.reject(new BridgeError("network", `sending post "${exchange.spec.name}" failed: ${error && error.message}`));
        return;
      }
      if (!exchange.expectsReply) exchange.resolve(undefined);
      else if (exchange.spec.upload) this.streamUpload(exchange, transport);
    }

    uploadChunkBytes() {
      const maxBytes = this.limit("maxMessageBytes");
      return Math.max(1, Math.min(UPLOAD_CHUNK_BYTES, maxBytes ? maxBytes - FRAME_HEADER_BYTES : UPLOAD_CHUNK_BYTES));
    }

    /** Sends the post's body as binary frames; the frame that completes a known length carries END. */
    async streamUpload(exchange, transport) {
      const source = exchange.spec.upload;
      const live = () => !exchange.settled && this.transport === transport;
      let sent = 0;
      try {
        for await (const chunk of source.chunks(this.uploadChunkBytes())) {
          await transport.drain();
          if (!live()) return;
          sent += chunk.byteLength;
          const end = source.length !== null && sent >= source.length;
          transport.sendBinary(encodeBodyFrame(exchange.id, chunk, end));
          if (end) return;
        }
        if (live()) transport.sendBinary(encodeBodyFrame(exchange.id, EMPTY_BYTES, true));
      } catch (error) {
        if (live()) this.cancel(exchange, new BridgeError("bad_request", `reading the request body failed: ${error && error.message}`));
      }
    }
  }

  // --------------------------------------------------------------------------- page progress

  function documentFraction() {
    const doc = global.document;
    const state = doc && doc.readyState;
    if (state === "complete" || !doc) return 1;
    if (state === "interactive") return 0.5;
    return 0.1;
  }

  /**
   * Page-load progress, like WKWebView's estimatedProgress. One group per load: the document itself
   * counts as one request (0.1 while parsing, 0.5 once interactive, 1 at `load`; only when the shim
   * was loaded before the document completed) and every bridged
   * request of the load as another, weighted by the broker's group.progress. The load ends, and
   * progress reaches 1, once `load` has fired and no request of the group has been in flight for
   * `settleMs`; requests started after that carry no group.
   */
  class PageProgress {
    constructor(emitter) {
      this.emitter = emitter;
      this.settleMs = 100;
      this.value = 0;
      this.load = null;
    }

    get done() {
      return !this.load || this.load.ended;
    }

    get group() {
      return this.load && !this.load.ended ? this.load.group : null;
    }

    begin(documentPhase) {
      if (this.load) clearTimeout(this.load.endTimer);
      this.load = {
        group: `load-${randomToken(16)}`,
        documentPhase,
        docFraction: documentPhase ? documentFraction() : 1,
        started: 0,
        finished: 0,
        broker: null,
        ended: false,
        endTimer: null,
      };
      this.value = 0;
      this.update(true);
      this.maybeEnd();
      return this.load.group;
    }

    /** Counts a request in the current load; call `finish()` on the ticket once it is over. */
    track() {
      const load = this.load;
      if (!load || load.ended) return { group: null, finish() {} };
      load.started++;
      clearTimeout(load.endTimer);
      load.endTimer = null;
      this.update(false);
      let finished = false;
      return {
        group: load.group,
        finish: () => {
          if (finished) return;
          finished = true;
          load.finished++;
          if (this.load !== load || load.ended) return;
          this.update(false);
          this.maybeEnd();
        },
      };
    }

    documentChanged() {
      const load = this.load;
      if (!load || !load.documentPhase || load.ended) return;
      load.docFraction = Math.max(load.docFraction, documentFraction());
      this.update(false);
      this.maybeEnd();
    }

    documentLoaded() {
      const load = this.load;
      if (!load || !load.documentPhase || load.ended) return;
      load.docFraction = 1;
      this.update(false);
      this.maybeEnd();
    }

    onGroupProgress(body) {
      const load = this.load;
      if (!load || load.ended || !body || body.group !== load.group) return;
      load.broker = body;
      this.update(false);
    }

    combined(load) {
      const documentWeight = load.documentPhase ? 1 : 0;
      const brokerRequests = load.broker && typeof load.broker.requests === "number" ? load.broker.requests : 0;
      const requests = Math.max(load.started, brokerRequests);
      let requestSum = load.finished;
      if (load.broker) requestSum = Math.max(requestSum, clamp01(Number(load.broker.progress)) * brokerRequests);
      requestSum = Math.min(requestSum, requests);
      if (documentWeight + requests === 0) return 0;
      return (documentWeight * load.docFraction + requestSum) / (documentWeight + requests);
    }

    update(force) {
      const load = this.load;
      // Monotonic while a load lasts, and 1 only once it has ended, as estimatedProgress behaves.
      const next = load.ended ? 1 : Math.min(0.99, Math.max(this.value, this.combined(load)));
      if (next === this.value && !force) return;
      this.value = next;
      this.emitter.emit("progress", { progress: next, group: load.group, done: load.ended });
    }

    maybeEnd() {
      const load = this.load;
      if (load.ended || load.endTimer || load.docFraction < 1 || load.started !== load.finished) return;
      load.endTimer = setTimeout(() => {
        load.endTimer = null;
        if (this.load !== load || load.ended || load.started !== load.finished) return;
        load.ended = true;
        this.update(true);
      }, this.settleMs);
    }
  }

  // ----------------------------------------------------------------------------- loading bar

  const BAR_TRANSITION = "width 200ms ease-out, opacity 400ms ease-in";

  /** A thin fixed bar at the top of the page that follows `progress` and fades out at 1. */
  function createLoadingBar(emitter, pageProgress, options) {
    const doc = global.document;
    if (!doc || typeof doc.createElement !== "function") return null;
    const bar = doc.createElement("div");
    bar.setAttribute("data-bridge-loading-bar", "");
    bar.setAttribute("aria-hidden", "true");
    Object.assign(bar.style, {
      position: "fixed",
      top: "0",
      left: "0",
      width: "0%",
      height: options.height || "3px",
      background: options.color || "#2f80ed",
      boxShadow: `0 0 6px ${options.color || "#2f80ed"}`,
      zIndex: "2147483647",
      pointerEvents: "none",
      opacity: "0",
      transition: BAR_TRANSITION,
    });
    (doc.body || doc.documentElement).appendChild(bar);
    let fadeTimer = null;
    let full = pageProgress.done;

    function render(event) {
      clearTimeout(fadeTimer);
      if (event.done) {
        bar.style.opacity = "1";
        bar.style.width = "100%";
        full = true;
        fadeTimer = setTimeout(() => {
          bar.style.opacity = "0";
        }, 250);
        return;
      }
      if (full) {
        // A new load: jump back to 0 instead of animating the bar backwards.
        full = false;
        bar.style.transition = "none";
        bar.style.width = "0%";
        void bar.offsetWidth;
        bar.style.transition = BAR_TRANSITION;
      }
      bar.style.opacity = "1";
      bar.style.width = `${(event.progress * 100).toFixed(2)}%`;
    }

    const unsubscribe = emitter.on("progress", render);
    if (!pageProgress.done) render({ progress: pageProgress.value, done: false });
    return {
      element: bar,
      remove() {
        unsubscribe();
        clearTimeout(fadeTimer);
        if (bar.parentNode) bar.parentNode.removeChild(bar);
      },
    };
  }

  // ----------------------------------------------------------------------------------- fetch

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

  /** Response's url, redirected, type... are read-only getters: own properties shadow them, clones included. */
  function decorateResponse(response, overrides) {
    for (const key of Object.keys(overrides)) {
      Object.defineProperty(response, key, { value: overrides[key], configurable: true });
    }
    const clone = response.clone;
    Object.defineProperty(response, "clone", {
      configurable: true,
      value: function () {
        return decorateResponse(clone.call(this), overrides);
      },
    });
    return response;
  }

  function responseTypeFor(href) {
    const url = absoluteUrl(href);
    return url && url.origin === pageOrigin() ? "basic" : "cors";
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

  function makeResponse(body, head, fallbackUrl) {
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
    return decorateResponse(response, overrides);
  }

  /** What a browser returns for redirect: "manual": status 0, no headers, no body; the 3xx stays on `.bridge`. */
  function opaqueRedirectResponse(requestUrl, head) {
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

  function replyBodyBytes(reply) {
    if (reply.bodyEncoding === "text" && typeof reply.body === "string") return new TextEncoder().encode(reply.body);
    if (reply.bodyEncoding === "base64" && typeof reply.body === "string") return base64ToBytes(reply.body);
    return null;
  }

  /** Reads everything fetch() needs out of (input, init); cache and timeout bypass Request's checks. */
  function planFetch(input, init, url) {
    const options = Object.assign({}, init);
    const original = isRequest(input) ? input : null;
    // Request throws for "only-if-cached" outside same-origin mode and for Apple's cache names; the broker takes both.
    const cache = hasOwn(options, "cache") ? options.cache : original ? original.cache : undefined;
    const timeout = hasOwn(options, "timeout") ? options.timeout : undefined;
    const signal = hasOwn(options, "signal") ? options.signal : original ? original.signal : null;
    const stream = isReadableStream(options.body) ? options.body : null;
    delete options.cache;
    delete options.timeout;
    delete options.signal;
    if (stream) {
      delete options.body;
      delete options.duplex;
    }
    const request = new global.Request(original || url.href, options);
    return {
      request,
      url: request.url,
      method: request.method,
      headers: Array.from(request.headers),
      redirect: request.redirect,
      cache,
      timeout,
      signal,
      stream,
    };
  }

  async function fetchBodySource(plan) {
    if (plan.stream) return streamSource(plan.stream);
    if (plan.method === "GET" || plan.method === "HEAD") return null;
    // Request already serialised the body (FormData with its boundary, URLSearchParams, Blob...).
    return blobSource(await plan.request.blob());
  }

  /** One bridged fetch: resolves with a Response at the `response` event, then feeds its body. */
  class FetchRun {
    constructor(context, plan, ticket, resolve, reject) {
      this.context = context;
      this.plan = plan;
      this.ticket = ticket;
      this.resolve = resolve;
      this.reject = reject;
      this.responded = false;
      this.controller = null;
      this.streamFinished = false;
      this.exchange = null;
    }

    start(upload) {
      const plan = this.plan;
      const body = {
        url: plan.url,
        method: plan.method,
        headers: plan.headers,
        redirect: plan.redirect,
        responseBody: "binary",
        // fetch() has no progress API and the loading bar follows the group's progress, which the
        // broker reports either way: per-request progress events would be frames nobody reads.
        progress: false,
        timeout: plan.timeout != null ? Number(plan.timeout) : this.context.config.requestTimeout,
      };
      if (plan.cache !== undefined && plan.cache !== "default") body.cache = plan.cache;
      if (this.ticket.group) body.group = this.ticket.group;
      if (upload) body.body = upload.length === null ? { binary: true } : { binary: true, length: upload.length };
      this.exchange = this.context.client.exchange({
        name: "fetch",
        body,
        upload,
        signal: plan.signal,
        onEvent: (name, payload) => {
          if (name === "response") this.onResponseHead(payload || {});
        },
        onBinary: (chunk, end) => this.onChunk(chunk, end),
      });
      this.exchange.promise.then(
        (reply) => this.onReply(reply || {}),
        (error) => this.onFailure(error),
      );
    }

    onResponseHead(head) {
      if (this.responded) return;
      this.responded = true;
      try {
        this.resolve(this.buildResponse(head));
      } catch (error) {
        this.streamFinished = true;
        this.reject(error);
        this.exchange.abort(error);
      }
    }

    buildResponse(head) {
      const status = Number(head.status);
      if (this.plan.redirect === "manual" && REDIRECT_STATUSES.includes(status)) {
        this.streamFinished = true;
        return opaqueRedirectResponse(this.plan.url, head);
      }
      if (!(status >= 100 && status <= 999)) {
        throw fetchFailure(new BridgeError("network", `the broker reported an unusable status ${JSON.stringify(head.status)}`));
      }
      const nullBody = this.plan.method === "HEAD" || NULL_BODY_STATUSES.includes(status);
      if (nullBody) this.streamFinished = true;
      return makeResponse(nullBody ? null : this.createStream(), head, this.plan.url);
    }

    createStream() {
      return new global.ReadableStream({
        start: (controller) => {
          this.controller = controller;
        },
        cancel: (reason) => {
          this.streamFinished = true;
          this.exchange.abort(reason === undefined ? domException("The body was cancelled.", "AbortError") : reason);
        },
      });
    }

    onChunk(chunk, end) {
      if (!this.controller || this.streamFinished) return;
      // A copy, so the consumer never sees the frame header through chunk.buffer.
      if (chunk.byteLength) this.controller.enqueue(chunk.slice());
      if (end) this.closeStream();
    }

    closeStream() {
      if (!this.controller || this.streamFinished) return;
      this.streamFinished = true;
      this.controller.close();
    }

    onReply(reply) {
      this.ticket.finish();
      if (!this.responded) this.onResponseHead(reply);
      const bytes = replyBodyBytes(reply);
      if (bytes && bytes.byteLength && this.controller && !this.streamFinished) this.controller.enqueue(bytes);
      this.closeStream();
    }

    onFailure(error) {
      this.ticket.finish();
      const failure = error instanceof BridgeError ? fetchFailure(error) : error;
      if (!this.responded) {
        this.responded = true;
        this.reject(failure);
        return;
      }
      if (this.controller && !this.streamFinished) {
        this.streamFinished = true;
        this.controller.error(failure);
      }
    }
  }

  function createFetch(context) {
    function callNative(input, init) {
      if (!context.nativeFetch) return Promise.reject(new TypeError("bridge-js: this page has no native fetch"));
      return context.nativeFetch.call(global, input, init);
    }

    function requestUrlOf(input) {
      return absoluteUrl(isRequest(input) ? input.url : input);
    }

    /** Always through the broker when the URL allows it (http(s), not the broker's own origin). */
    async function bridgedFetch(input, init) {
      const url = requestUrlOf(input);
      if (!isHttpUrl(url) || url.origin === context.brokerOrigin()) return callNative(input, init);
      const plan = planFetch(input, init, url);
      if (plan.signal && plan.signal.aborted) throw abortReason(plan.signal);
      const ticket = context.progress.track();
      let upload;
      try {
        upload = await fetchBodySource(plan);
        if (plan.signal && plan.signal.aborted) throw abortReason(plan.signal);
      } catch (error) {
        ticket.finish();
        throw error;
      }
      return new Promise((resolve, reject) => new FetchRun(context, plan, ticket, resolve, reject).start(upload));
    }

    /** The page's fetch: bridged when patched and the URL passes data-include/data-exclude. */
    function fetch(input, init) {
      const url = requestUrlOf(input);
      if (!context.patches.fetch || !url || !context.shouldBridge(url)) return callNative(input, init);
      return bridgedFetch(input, init);
    }

    return { bridgedFetch, fetch };
  }

  // ---------------------------------------------------------------------------------- XHR

  const XHR_EVENTS = ["readystatechange", "loadstart", "progress", "abort", "error", "load", "timeout", "loadend"];
  const UPLOAD_EVENTS = ["loadstart", "progress", "abort", "error", "load", "timeout", "loadend"];
  const RESPONSE_TYPES = ["", "arraybuffer", "blob", "document", "json", "text"];
  const UNSENT = 0;
  const OPENED = 1;
  const HEADERS_RECEIVED = 2;
  const LOADING = 3;
  const DONE = 4;

  function createProgressEvent(type, loaded, total, lengthComputable) {
    const init = { lengthComputable: lengthComputable === undefined ? total > 0 : lengthComputable, loaded, total };
    if (typeof global.ProgressEvent === "function") return new global.ProgressEvent(type, init);
    const event = new global.Event(type);
    Object.defineProperties(event, {
      lengthComputable: { value: init.lengthComputable },
      loaded: { value: loaded },
      total: { value: total },
    });
    return event;
  }

  function cloneEvent(event) {
    if (typeof event.loaded === "number") return createProgressEvent(event.type, event.loaded, event.total, event.lengthComputable);
    return new global.Event(event.type);
  }

  /** on<type> properties that behave like a browser's event handler attributes. */
  function defineEventHandlers(proto, types) {
    for (const type of types) {
      Object.defineProperty(proto, `on${type}`, {
        configurable: true,
        enumerable: true,
        get() {
          return this.eventHandlers[type] || null;
        },
        set(value) {
          const handlers = this.eventHandlers;
          if (!handlers[`listening ${type}`]) {
            handlers[`listening ${type}`] = true;
            this.addEventListener(type, (event) => {
              const handler = this.eventHandlers[type];
              if (typeof handler === "function") handler.call(this, event);
            });
          }
          handlers[type] = typeof value === "function" ? value : null;
        },
      });
    }
  }

  function mimeEssence(mime) {
    return String(mime || "").split(";")[0].trim().toLowerCase();
  }

  function mimeCharset(mime) {
    const match = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(String(mime || ""));
    return match ? match[1] : null;
  }

  function isXmlMime(essence) {
    return essence === "text/xml" || essence === "application/xml" || essence.endsWith("+xml");
  }

  function domParserType(essence) {
    if (essence === "text/html") return "text/html";
    if (["text/xml", "application/xml", "application/xhtml+xml", "image/svg+xml"].includes(essence)) return essence;
    return isXmlMime(essence) ? "application/xml" : null;
  }

  function textDecoderFor(label) {
    try {
      return new TextDecoder(label || "utf-8");
    } catch (_) {
      return new TextDecoder("utf-8");
    }
  }

  function normalizeNewlines(text) {
    return String(text).replace(/\r\n|\r|\n/g, "\r\n");
  }

  function escapeMultipartName(text) {
    return String(text).replace(/\n/g, "%0A").replace(/\r/g, "%0D").replace(/"/g, "%22");
  }

  /** multipart/form-data as HTML serialises it, built as a lazy Blob so its size is known at once. */
  function multipartBody(formData) {
    const boundary = `----BridgeFormBoundary${randomToken(16)}`;
    const parts = [];
    for (const [name, value] of formData) {
      const disposition = `--${boundary}\r\nContent-Disposition: form-data; name="${escapeMultipartName(normalizeNewlines(name))}"`;
      if (typeof value === "string") {
        parts.push(`${disposition}\r\n\r\n${normalizeNewlines(value)}\r\n`);
      } else {
        const filename = escapeMultipartName(value.name === undefined ? "blob" : value.name);
        parts.push(`${disposition}; filename="${filename}"\r\nContent-Type: ${value.type || "application/octet-stream"}\r\n\r\n`, value, "\r\n");
      }
    }
    parts.push(`--${boundary}--\r\n`);
    return { blob: new global.Blob(parts), contentType: `multipart/form-data; boundary=${boundary}` };
  }

  function serializeDocument(doc) {
    if (typeof global.XMLSerializer === "function") return new global.XMLSerializer().serializeToString(doc);
    return doc.documentElement ? doc.documentElement.outerHTML : "";
  }

  /** XHR's "extract a body", synchronously, so upload loadstart can report the total. */
  function extractXhrBody(body) {
    const Blob = global.Blob;
    if (typeof Blob === "function" && body instanceof Blob) return { blob: body, contentType: body.type || null };
    if (isBufferSource(body)) return { blob: new Blob([viewBytes(body).slice()]), contentType: null };
    if (typeof global.FormData === "function" && body instanceof global.FormData) return multipartBody(body);
    if (typeof global.URLSearchParams === "function" && body instanceof global.URLSearchParams) {
      return { blob: new Blob([body.toString()]), contentType: "application/x-www-form-urlencoded;charset=UTF-8" };
    }
    if (typeof global.Document === "function" && body instanceof global.Document) {
      const html = body.contentType === "text/html";
      return { blob: new Blob([serializeDocument(body)]), contentType: html ? "text/html;charset=UTF-8" : "application/xml;charset=UTF-8" };
    }
    return { blob: new Blob([String(body)]), contentType: "text/plain;charset=UTF-8" };
  }

  function normalizeMethod(method) {
    const text = String(method);
    if (!HTTP_TOKEN.test(text)) throw domException(`'${text}' is not a valid HTTP method.`, "SyntaxError");
    const upper = text.toUpperCase();
    if (FORBIDDEN_METHODS.includes(upper)) throw domException(`'${text}' HTTP method is unsupported.`, "SecurityError");
    return NORMALIZED_METHODS.includes(upper) ? upper : text;
  }

  function wrongResponseType(first, second, actual) {
    return domException(`The value is only accessible if the object's 'responseType' is ${first} or '${second}' (was '${actual}').`, "InvalidStateError");
  }

  function isForbiddenRequestHeader(name) {
    const lower = name.toLowerCase();
    return FORBIDDEN_REQUEST_HEADERS.includes(lower) || lower.startsWith("proxy-") || lower.startsWith("sec-");
  }

  function createXMLHttpRequestClass(context) {
    class XMLHttpRequestUpload extends global.EventTarget {
      constructor() {
        super();
        this.eventHandlers = {};
        this.hasListeners = false;
      }

      addEventListener(type, listener, options) {
        if (listener) this.hasListeners = true;
        return super.addEventListener(type, listener, options);
      }

      fire(type, loaded, total) {
        this.dispatchEvent(createProgressEvent(type, loaded, total));
      }
    }
    defineEventHandlers(XMLHttpRequestUpload.prototype, UPLOAD_EVENTS);

    /** XMLHttpRequest over the broker, with the XHR standard's states and event order. */
    class BridgeXMLHttpRequest extends global.EventTarget {
      constructor() {
        super();
        this.eventHandlers = {};
        this.uploadTarget = new XMLHttpRequestUpload();
        this.native = null;
        this.generation = 0;
        this.state = UNSENT;
        this.sendFlag = false;
        this.requestResponseType = "";
        this.requestTimeout = 0;
        this.credentials = false;
        this.overrideMime = null;
        this.exchange = null;
        this.ticket = null;
        this.timer = null;
        this.resetRequest("GET", "");
        this.resetResponse();
      }

      // -- request state

      resetRequest(method, url) {
        this.method = method;
        this.url = url;
        this.requestHeaders = [];
        this.uploadComplete = false;
        this.uploadListener = false;
        this.uploadLength = 0;
      }

      resetResponse() {
        this.head = null;
        this.chunks = [];
        this.received = 0;
        this.downloadTotal = 0;
        this.decoder = null;
        this.decodedChunks = 0;
        this.text = "";
        this.textFinished = false;
        this.responseCache = undefined;
        this.documentCache = undefined;
      }

      live(generation) {
        return this.generation === generation;
      }

      /** Stops the current transfer without events: open(), abort() and timeouts start from here. */
      terminate() {
        this.generation++;
        clearTimeout(this.timer);
        this.timer = null;
        if (this.exchange) this.exchange.abort(domException("The request was aborted.", "AbortError"));
        this.exchange = null;
        this.finishTicket();
      }

      finishTicket() {
        if (this.ticket) this.ticket.finish();
        this.ticket = null;
      }

      fire(type, loaded, total) {
        this.dispatchEvent(createProgressEvent(type, loaded, total));
      }

      fireReadyStateChange() {
        this.dispatchEvent(new global.Event("readystatechange"));
      }

      // -- public API

      get upload() {
        return this.uploadTarget;
      }

      get readyState() {
        return this.native ? this.native.readyState : this.state;
      }

      open(method, url, async, username, password) {
        if (arguments.length < 2) {
          throw new TypeError(`Failed to execute 'open' on 'XMLHttpRequest': 2 arguments required, but only ${arguments.length} present.`);
        }
        const normalized = normalizeMethod(method);
        const parsed = absoluteUrl(url);
        if (!parsed) throw domException(`Invalid URL: ${url}`, "SyntaxError");
        // WebIDL boolean: an explicit undefined means synchronous, as in browsers.
        const isAsync = arguments.length < 3 ? true : Boolean(async);
        if (username != null) parsed.username = username;
        if (password != null) parsed.password = password;
        if (!context.shouldBridge(parsed)) return this.openNative(normalized, parsed.href, isAsync, arguments.length);
        if (!isAsync) {
          throw domException(
            "bridge-js: synchronous XMLHttpRequest cannot travel through the broker. Use an asynchronous request, " +
              "or exclude this URL with data-exclude so the native XMLHttpRequest handles it.",
            "InvalidAccessError",
          );
        }
        this.detachNative();
        this.terminate();
        this.resetRequest(normalized, parsed.href);
        this.resetResponse();
        this.sendFlag = false;
        if (this.state !== OPENED) {
          this.state = OPENED;
          this.fireReadyStateChange();
        }
      }

      setRequestHeader(name, value) {
        if (this.native) return this.native.setRequestHeader(name, value);
        if (this.state !== OPENED || this.sendFlag) throw domException("The object's state must be OPENED.", "InvalidStateError");
        const headerName = String(name);
        const headerValue = String(value).replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, "");
        if (!HTTP_TOKEN.test(headerName)) throw domException(`'${headerName}' is not a valid HTTP header field name.`, "SyntaxError");
        if (/[\0\r\n]/.test(headerValue)) throw domException(`'${headerValue}' is not a valid HTTP header field value.`, "SyntaxError");
        if (isForbiddenRequestHeader(headerName)) return undefined;
        const existing = this.requestHeaders.find((pair) => pair[0].toLowerCase() === headerName.toLowerCase());
        if (existing) existing[1] = `${existing[1]}, ${headerValue}`;
        else this.requestHeaders.push([headerName, headerValue]);
        return undefined;
      }

      get timeout() {
        return this.native ? this.native.timeout : this.requestTimeout;
      }

      set timeout(value) {
        if (this.native) this.native.timeout = value;
        this.requestTimeout = Math.max(0, Math.floor(Number(value)) || 0);
        if (!this.native) this.armTimeout();
      }

      get withCredentials() {
        return this.native ? this.native.withCredentials : this.credentials;
      }

      set withCredentials(value) {
        if (this.native) {
          this.native.withCredentials = value;
          this.credentials = this.native.withCredentials;
          return;
        }
        if ((this.state !== UNSENT && this.state !== OPENED) || this.sendFlag) {
          throw domException("The value may only be set if the object's state is UNSENT or OPENED.", "InvalidStateError");
        }
        this.credentials = Boolean(value);
      }

      get responseType() {
        return this.native ? this.native.responseType : this.requestResponseType;
      }

      set responseType(value) {
        if (this.native) {
          this.native.responseType = value;
          this.requestResponseType = this.native.responseType;
          return;
        }
        if (!RESPONSE_TYPES.includes(value)) return; // Browsers ignore unknown values.
        if (this.state === LOADING || this.state === DONE) {
          throw domException("The response type cannot be set if the object's state is LOADING or DONE.", "InvalidStateError");
        }
        this.requestResponseType = value;
      }

      overrideMimeType(mime) {
        if (this.native) return this.native.overrideMimeType(mime);
        if (this.state === LOADING || this.state === DONE) {
          throw domException("MimeType cannot be overridden when the state is LOADING or DONE.", "InvalidStateError");
        }
        this.overrideMime = mimeEssence(mime) ? String(mime) : "application/octet-stream";
        return undefined;
      }

      send(body) {
        if (this.native) {
          this.forwardNativeUpload(this.native);
          return this.native.send(body === undefined ? null : body);
        }
        if (this.state !== OPENED || this.sendFlag) throw domException("The object's state must be OPENED.", "InvalidStateError");
        const extracted = body == null || this.method === "GET" || this.method === "HEAD" ? null : extractXhrBody(body);
        if (extracted && extracted.contentType && !this.requestHeaders.some((pair) => pair[0].toLowerCase() === "content-type")) {
          this.requestHeaders.push(["Content-Type", extracted.contentType]);
        }
        this.uploadLength = extracted ? extracted.blob.size : 0;
        this.uploadComplete = !extracted;
        this.uploadListener = this.uploadTarget.hasListeners;
        this.sendFlag = true;
        this.sendStartedAt = now();
        const generation = this.generation;
        this.fire("loadstart", 0, 0);
        if (!this.uploadComplete && this.uploadListener && this.live(generation)) this.uploadTarget.fire("loadstart", 0, this.uploadLength);
        if (!this.live(generation) || this.state !== OPENED || !this.sendFlag) return undefined;
        this.startExchange(extracted);
        return undefined;
      }

      abort() {
        if (this.native) return this.native.abort();
        this.terminate();
        if ((this.state === OPENED && this.sendFlag) || this.state === HEADERS_RECEIVED || this.state === LOADING) {
          this.requestError("abort");
        }
        if (this.state === DONE) {
          this.state = UNSENT;
          this.resetResponse();
        }
        return undefined;
      }

      get status() {
        if (this.native) return this.native.status;
        return this.head ? this.head.status : 0;
      }

      get statusText() {
        if (this.native) return this.native.statusText;
        return this.head ? this.head.statusText : "";
      }

      get responseURL() {
        if (this.native) return this.native.responseURL;
        return this.head ? this.head.url : "";
      }

      getResponseHeader(name) {
        if (this.native) return this.native.getResponseHeader(name);
        if (!this.head) return null;
        const wanted = String(name).toLowerCase();
        if (wanted === "set-cookie" || wanted === "set-cookie2") return null;
        const values = this.head.headers.filter((pair) => pair[0] === wanted).map((pair) => pair[1]);
        return values.length ? values.join(", ") : null;
      }

      getAllResponseHeaders() {
        if (this.native) return this.native.getAllResponseHeaders();
        if (!this.head) return "";
        const combined = new Map();
        for (const [name, value] of this.head.headers) {
          if (name === "set-cookie" || name === "set-cookie2") continue;
          combined.set(name, combined.has(name) ? `${combined.get(name)}, ${value}` : value);
        }
        return Array.from(combined.keys()).sort().map((name) => `${name}: ${combined.get(name)}\r\n`).join("");
      }

      get responseText() {
        if (this.native) return this.native.responseText;
        if (this.requestResponseType !== "" && this.requestResponseType !== "text") throw wrongResponseType("''", "text", this.requestResponseType);
        if (this.state !== LOADING && this.state !== DONE) return "";
        return this.decodedText();
      }

      get responseXML() {
        if (this.native) return this.native.responseXML;
        if (this.requestResponseType !== "" && this.requestResponseType !== "document") throw wrongResponseType("''", "document", this.requestResponseType);
        if (this.state !== DONE) return null;
        return this.parsedDocument();
      }

      get response() {
        if (this.native) return this.native.response;
        const type = this.requestResponseType;
        if (type === "" || type === "text") return this.state === LOADING || this.state === DONE ? this.decodedText() : "";
        if (this.state !== DONE) return null;
        if (this.responseCache === undefined) this.responseCache = this.buildResponseObject(type);
        return this.responseCache;
      }

      // -- transfer through the broker

      startExchange(extracted) {
        const generation = this.generation;
        const upload = extracted ? blobSource(extracted.blob) : null;
        this.ticket = context.progress.track();
        const body = {
          url: this.url,
          method: this.method,
          headers: this.requestHeaders.map((pair) => [pair[0], pair[1]]),
          redirect: "follow",
          responseBody: "binary",
          timeout: this.requestTimeout > 0 ? this.requestTimeout : context.config.requestTimeout,
        };
        if (this.ticket.group) body.group = this.ticket.group;
        if (upload) body.body = { binary: true, length: upload.length };
        const exchange = context.client.exchange({
          name: "fetch",
          body,
          upload,
          onEvent: (name, payload) => this.live(generation) && this.onBrokerEvent(name, payload || {}),
          onBinary: (chunk) => this.live(generation) && this.onChunk(chunk),
        });
        this.exchange = exchange;
        exchange.promise.then(
          (reply) => this.live(generation) && this.onReply(reply || {}),
          (error) => this.live(generation) && this.onFailure(error),
        );
        this.armTimeout();
      }

      armTimeout() {
        clearTimeout(this.timer);
        this.timer = null;
        if (!this.sendFlag || this.requestTimeout <= 0 || this.state === DONE) return;
        const generation = this.generation;
        const remaining = Math.max(0, this.requestTimeout - (now() - this.sendStartedAt));
        this.timer = setTimeout(() => {
          if (!this.live(generation)) return;
          this.terminate();
          this.requestError("timeout");
        }, remaining);
      }

      onBrokerEvent(name, payload) {
        if (name === "response") return this.onHeaders(payload);
        if (name !== "progress") return undefined;
        if (payload.phase === "upload") {
          if (!this.uploadComplete && this.uploadListener) {
            const total = typeof payload.total === "number" ? payload.total : this.uploadLength;
            this.uploadTarget.fire("progress", Number(payload.loaded) || 0, total);
          }
        } else if (typeof payload.total === "number") {
          this.downloadTotal = payload.total;
        }
        return undefined;
      }

      onHeaders(head) {
        const generation = this.generation;
        if (!this.finishUpload()) return;
        if (!this.live(generation)) return;
        const pairs = Array.isArray(head.headers) ? head.headers : head.headers ? Object.entries(head.headers) : [];
        this.head = {
          status: Number(head.status) || 0,
          statusText: String(head.statusText || ""),
          headers: pairs.map((pair) => [String(pair[0]).toLowerCase(), String(pair[1])]),
          url: stripFragment(head.url || this.url),
        };
        const contentLength = Number(this.getResponseHeader("content-length"));
        if (contentLength > 0 && !this.downloadTotal) this.downloadTotal = contentLength;
        this.state = HEADERS_RECEIVED;
        this.fireReadyStateChange();
      }

      /** Upload ends when the response starts; returns false when a listener restarted the request. */
      finishUpload() {
        if (this.uploadComplete) return true;
        this.uploadComplete = true;
        if (!this.uploadListener) return true;
        const generation = this.generation;
        const length = this.uploadLength;
        for (const type of ["progress", "load", "loadend"]) {
          this.uploadTarget.fire(type, length, length);
          if (!this.live(generation)) return false;
        }
        return true;
      }

      onChunk(chunk) {
        if (this.state !== HEADERS_RECEIVED && this.state !== LOADING) return;
        if (!chunk.byteLength) return;
        this.chunks.push(chunk);
        this.received += chunk.byteLength;
        const generation = this.generation;
        this.state = LOADING;
        this.fireReadyStateChange();
        if (this.live(generation)) this.fire("progress", this.received, this.downloadTotal);
      }

      onReply(reply) {
        clearTimeout(this.timer);
        this.exchange = null;
        this.finishTicket();
        const generation = this.generation;
        if (this.state === OPENED) this.onHeaders(reply);
        if (!this.live(generation)) return;
        const bytes = replyBodyBytes(reply);
        if (bytes && bytes.byteLength) {
          this.chunks.push(bytes);
          this.received += bytes.byteLength;
        }
        this.endOfBody(generation);
      }

      endOfBody(generation) {
        const transmitted = this.received;
        const length = this.downloadTotal;
        this.fire("progress", transmitted, length);
        if (!this.live(generation)) return;
        this.state = DONE;
        this.sendFlag = false;
        this.fireReadyStateChange();
        if (!this.live(generation)) return;
        this.fire("load", transmitted, length);
        if (!this.live(generation)) return;
        this.fire("loadend", transmitted, length);
      }

      onFailure(error) {
        clearTimeout(this.timer);
        this.exchange = null;
        this.finishTicket();
        this.generation++;
        this.requestError(error && error.code === "timeout" ? "timeout" : "error");
      }

      /** The XHR standard's "request error steps" for error, abort and timeout. */
      requestError(type) {
        const generation = this.generation;
        this.state = DONE;
        this.sendFlag = false;
        this.resetResponse();
        this.fireReadyStateChange();
        if (!this.live(generation)) return;
        if (!this.uploadComplete) {
          this.uploadComplete = true;
          if (this.uploadListener) {
            this.uploadTarget.fire(type, 0, 0);
            if (!this.live(generation)) return;
            this.uploadTarget.fire("loadend", 0, 0);
            if (!this.live(generation)) return;
          }
        }
        this.fire(type, 0, 0);
        if (this.live(generation)) this.fire("loadend", 0, 0);
      }

      // -- response decoding

      finalMime() {
        return this.overrideMime || this.getResponseHeader("content-type") || "";
      }

      decodedText() {
        if (!this.decoder) this.decoder = textDecoderFor(mimeCharset(this.finalMime()));
        while (this.decodedChunks < this.chunks.length) {
          this.text += this.decoder.decode(this.chunks[this.decodedChunks++], { stream: true });
        }
        if (this.state === DONE && !this.textFinished) {
          this.textFinished = true;
          this.text += this.decoder.decode();
        }
        return this.text;
      }

      bodyBytes() {
        return concatBytes(this.chunks, this.received);
      }

      buildResponseObject(type) {
        if (type === "arraybuffer") return this.bodyBytes().buffer;
        if (type === "blob") return new global.Blob(this.chunks, { type: mimeEssence(this.finalMime()) ? this.finalMime() : "" });
        if (type === "json") {
          try {
            return JSON.parse(new TextDecoder("utf-8").decode(this.bodyBytes()));
          } catch (_) {
            return null;
          }
        }
        if (type === "document") return this.parsedDocument();
        return null;
      }

      parsedDocument() {
        if (this.documentCache !== undefined) return this.documentCache;
        this.documentCache = null;
        const essence = mimeEssence(this.finalMime()) || "text/xml";
        const parserType = domParserType(essence);
        const htmlAllowed = this.requestResponseType === "document";
        if (!parserType || (parserType === "text/html" && !htmlAllowed) || typeof global.DOMParser !== "function") return null;
        const text = textDecoderFor(mimeCharset(this.finalMime())).decode(this.bodyBytes());
        const doc = new global.DOMParser().parseFromString(text, parserType);
        const broken = parserType !== "text/html" && doc && doc.getElementsByTagName("parsererror").length > 0;
        this.documentCache = broken ? null : doc;
        return this.documentCache;
      }

      // -- native XMLHttpRequest for URLs the shim leaves alone

      openNative(method, url, isAsync, argumentCount) {
        if (!context.NativeXHR) throw domException("bridge-js: this page has no native XMLHttpRequest for this URL", "InvalidAccessError");
        this.terminate();
        this.detachNative();
        this.state = UNSENT;
        this.sendFlag = false;
        const native = new context.NativeXHR();
        this.native = native;
        this.nativeUploadForwarded = false;
        for (const type of XHR_EVENTS) {
          native.addEventListener(type, (event) => {
            if (this.native === native) this.dispatchEvent(cloneEvent(event));
          });
        }
        if (isAsync) {
          if (this.requestResponseType) native.responseType = this.requestResponseType;
          if (this.requestTimeout) native.timeout = this.requestTimeout;
        }
        if (this.credentials) native.withCredentials = true;
        if (argumentCount < 3) native.open(method, url);
        else native.open(method, url, isAsync);
      }

      forwardNativeUpload(native) {
        // Upload listeners make a cross-origin request preflighted, so they go on only when the page has some.
        if (this.nativeUploadForwarded || !this.uploadTarget.hasListeners) return;
        this.nativeUploadForwarded = true;
        for (const type of UPLOAD_EVENTS) {
          native.upload.addEventListener(type, (event) => {
            if (this.native === native) this.uploadTarget.dispatchEvent(cloneEvent(event));
          });
        }
      }

      detachNative() {
        const native = this.native;
        if (!native) return;
        this.native = null;
        try {
          native.abort();
        } catch (_) {
          // Already finished: nothing to stop.
        }
      }
    }

    defineEventHandlers(BridgeXMLHttpRequest.prototype, XHR_EVENTS);
    const states = { UNSENT, OPENED, HEADERS_RECEIVED, LOADING, DONE };
    for (const [name, value] of Object.entries(states)) {
      Object.defineProperty(BridgeXMLHttpRequest, name, { value, enumerable: true });
      Object.defineProperty(BridgeXMLHttpRequest.prototype, name, { value, enumerable: true });
    }
    Object.defineProperty(BridgeXMLHttpRequest, "name", { value: "XMLHttpRequest" });
    Object.defineProperty(BridgeXMLHttpRequest.prototype, Symbol.toStringTag, { value: "XMLHttpRequest", configurable: true });
    Object.defineProperty(XMLHttpRequestUpload.prototype, Symbol.toStringTag, { value: "XMLHttpRequestUpload", configurable: true });
    return BridgeXMLHttpRequest;
  }

  // ------------------------------------------------------------ window.webkit.messageHandlers

  /** Outside a WKWebView, any window.webkit.messageHandlers.<name>.postMessage(body) becomes a post. */
  function installMessageHandlersPolyfill(post) {
    const handlers = new Map();
    const target = Object.create(null);
    Object.defineProperty(target, MARKER, { value: true });
    const messageHandlers = new Proxy(target, {
      get(object, name) {
        if (typeof name !== "string") return object[name];
        if (!handlers.has(name)) handlers.set(name, Object.freeze({ postMessage: (body) => post(name, body) }));
        return handlers.get(name);
      },
      has(object, name) {
        return typeof name === "string" || name in object;
      },
    });
    if (!global.webkit || typeof global.webkit !== "object") global.webkit = {};
    global.webkit.messageHandlers = messageHandlers;
  }

  function insideRealWebKit() {
    const webkit = global.webkit;
    return Boolean(webkit && webkit.messageHandlers && !webkit.messageHandlers[MARKER]);
  }

  // ----------------------------------------------------------------------------- configuration

  function scriptUrlFromStack() {
    let stack = "";
    try {
      throw new Error("bridge-js locates itself");
    } catch (error) {
      stack = String((error && error.stack) || "");
    }
    // The first frame is this file in every engine: "(URL:line:col)" or "fn@URL:line:col".
    const match = /((?:https?|file):\/\/[^\s()@]+):\d+:\d+/.exec(stack);
    return match ? match[1] : null;
  }

  function findScriptElement(url) {
    const doc = global.document;
    if (!doc || typeof doc.querySelectorAll !== "function") return null;
    for (const element of Array.from(doc.querySelectorAll("script[src]"))) {
      if (element.src === url) return element;
    }
    return null;
  }

  function tokenFromUrl(url) {
    const parsed = url ? absoluteUrl(url) : null;
    return parsed ? parsed.searchParams.get("token") : null;
  }

  function parsePatch(value) {
    if (value === undefined || value === null || value === "" || value === true) return { fetch: true, xhr: true };
    if (value === false) return { fetch: false, xhr: false };
    if (typeof value === "object" && !Array.isArray(value)) return { fetch: Boolean(value.fetch), xhr: Boolean(value.xhr) };
    const words = parseList(value).map((word) => String(word).toLowerCase());
    return {
      fetch: words.includes("fetch"),
      xhr: words.includes("xhr") || words.includes("xmlhttprequest"),
    };
  }

  function parseLoadingBar(attribute, preset) {
    if (attribute !== null && attribute !== undefined) {
      if (attribute === "false" || attribute === "none") return null;
      return attribute && attribute !== "true" ? { color: attribute } : {};
    }
    if (preset === true) return {};
    return preset && typeof preset === "object" ? preset : null;
  }

  /** Settings from the script tag's data-* attributes, over globalThis.BridgeBrokerConfig. */
  function readConfig() {
    const doc = global.document;
    const preset = global.BridgeBrokerConfig && typeof global.BridgeBrokerConfig === "object" ? global.BridgeBrokerConfig : {};
    let script = doc && doc.currentScript ? doc.currentScript : null;
    let scriptUrl = script && script.src ? script.src : null;
    // An ES module has no currentScript; an inline copy of the shim has one without src.
    if (!script) {
      scriptUrl = scriptUrlFromStack();
      script = scriptUrl ? findScriptElement(scriptUrl) : null;
    }
    const attr = (name) => (script && typeof script.getAttribute === "function" ? script.getAttribute(name) : null);
    const pick = (attribute, key) => (attr(attribute) !== null ? attr(attribute) : preset[key]);
    const timeout = Number(pick("data-timeout", "requestTimeout"));
    return {
      scriptUrl,
      url: pick("data-broker-url", "url") || (scriptUrl && socketUrlFromScript(scriptUrl)) || DEFAULT_BROKER_URL,
      token: pick("data-token", "token") || tokenFromUrl(scriptUrl),
      transport: pick("data-transport", "transport") || "auto",
      patch: parsePatch(pick("data-patch", "patch")),
      include: pick("data-include", "include"),
      exclude: pick("data-exclude", "exclude"),
      loadingBar: parseLoadingBar(attr("data-loading-bar"), preset.loadingBar),
      autoConnect: String(pick("data-auto-connect", "autoConnect")) !== "false",
      messageHandlers: String(pick("data-message-handlers", "messageHandlers")) !== "false",
      requestTimeout: timeout > 0 ? timeout : DEFAULT_REQUEST_TIMEOUT_MS,
      backoff: preset.backoff,
      queueTimeout: preset.queueTimeout,
    };
  }

  // ------------------------------------------------------------------------------- bootstrap

  const config = readConfig();
  const emitter = new Emitter();
  const client = new Client(emitter);
  const pageProgress = new PageProgress(emitter);
  const realWebKit = insideRealWebKit();
  const connectionSettings = { token: config.token, transport: config.transport, backoff: config.backoff, queueTimeout: config.queueTimeout };
  try {
    client.configure(Object.assign({ url: config.url }, connectionSettings));
  } catch (error) {
    reportError(error); // A bad data-broker-url leaves the default broker address in place.
    client.configure(connectionSettings);
  }

  const context = {
    client,
    config,
    progress: pageProgress,
    nativeFetch: typeof global.fetch === "function" ? global.fetch : null,
    NativeXHR: typeof global.XMLHttpRequest === "function" ? global.XMLHttpRequest : null,
    patches: { fetch: false, xhr: false },
    rules: new UrlRules(config.include, config.exclude),
    brokerOrigin: () => (client.useWebKit() ? null : httpOriginOfSocket(client.url)),
    shouldBridge(url) {
      return isHttpUrl(url) && url.origin !== this.brokerOrigin() && this.rules.allows(url.href);
    },
  };

  const fetches = createFetch(context);
  const BridgeXMLHttpRequest = typeof global.EventTarget === "function" ? createXMLHttpRequestClass(context) : null;

  function patch(targets, rules) {
    const wanted = targets === undefined ? { fetch: true, xhr: true } : parsePatch(targets);
    if (rules && (hasOwn(rules, "include") || hasOwn(rules, "exclude"))) {
      context.rules = new UrlRules(rules.include, rules.exclude);
    }
    context.patches.fetch = wanted.fetch && typeof global.Response === "function" && typeof global.ReadableStream === "function";
    context.patches.xhr = wanted.xhr && Boolean(BridgeXMLHttpRequest);
    if (context.patches.fetch) global.fetch = fetches.fetch;
    else if (global.fetch === fetches.fetch) global.fetch = context.nativeFetch;
    if (context.patches.xhr) global.XMLHttpRequest = BridgeXMLHttpRequest;
    else if (global.XMLHttpRequest === BridgeXMLHttpRequest) global.XMLHttpRequest = context.NativeXHR;
  }

  function post(name, body, options) {
    if (typeof name !== "string" || !name) return Promise.reject(new TypeError("BridgeBroker.post: the handler name must be a non-empty string"));
    const settings = options || {};
    return client.exchange({ name, body, signal: settings.signal, onEvent: settings.onEvent, onBinary: settings.onBinary }).promise;
  }

  function send(name, body) {
    if (typeof name !== "string" || !name) throw new TypeError("BridgeBroker.send: the handler name must be a non-empty string");
    client.exchange({ name, body, reply: false }).promise.catch((error) => client.report(error));
  }

  function connect(options) {
    const settings = options || {};
    if (hasOwn(settings, "patch") || hasOwn(settings, "include") || hasOwn(settings, "exclude")) {
      patch(hasOwn(settings, "patch") ? settings.patch : context.patches, settings);
    }
    if (settings.requestTimeout > 0) config.requestTimeout = Number(settings.requestTimeout);
    client.connect(settings);
  }

  let loadingBar = null;

  function showLoadingBar(options) {
    if (loadingBar) return loadingBar;
    loadingBar = createLoadingBar(emitter, pageProgress, options || {});
    return loadingBar;
  }

  function hideLoadingBar() {
    if (loadingBar) loadingBar.remove();
    loadingBar = null;
  }

  const api = {
    post,
    send,
    connect,
    disconnect: () => client.disconnect(),
    on: (name, listener) => emitter.on(name, listener),
    off: (name, listener) => emitter.off(name, listener),
    addEventListener: (name, listener) => {
      emitter.on(name, listener);
    },
    removeEventListener: (name, listener) => emitter.off(name, listener),
    patch: (targets, rules) => patch(targets, rules),
    unpatch: () => patch("none"),
    showLoadingBar,
    hideLoadingBar,
    beginLoad: () => pageProgress.begin(false),
  };
  Object.defineProperties(api, {
    [MARKER]: { value: true },
    version: { value: VERSION, enumerable: true },
    ready: { value: client.ready, enumerable: true },
    hello: { get: () => client.lastHello, enumerable: true },
    connected: { get: () => client.isReady, enumerable: true },
    state: { get: () => client.state, enumerable: true },
    url: { get: () => client.url, enumerable: true },
    transport: { get: () => (client.transport ? client.transport.kind : null), enumerable: true },
    progress: { get: () => pageProgress.value, enumerable: true },
    loading: { get: () => !pageProgress.done, enumerable: true },
    group: { get: () => pageProgress.group, enumerable: true },
    patched: { get: () => ({ fetch: context.patches.fetch, xhr: context.patches.xhr }), enumerable: true },
    BridgeError: { value: BridgeError },
    fetch: { value: fetches.bridgedFetch },
    nativeFetch: { value: context.nativeFetch },
    XMLHttpRequest: { value: BridgeXMLHttpRequest },
    NativeXMLHttpRequest: { value: context.NativeXHR },
  });

  emitter.on("group.progress", (body) => pageProgress.onGroupProgress(body));
  const doc = global.document;
  // A shim that arrives after the page finished loading (a late import) has no document phase to show.
  pageProgress.begin(Boolean(doc) && doc.readyState !== "complete");
  if (doc && typeof doc.addEventListener === "function") doc.addEventListener("readystatechange", () => pageProgress.documentChanged());
  if (typeof global.addEventListener === "function") global.addEventListener("load", () => pageProgress.documentLoaded());

  patch(config.patch);
  if (!realWebKit && config.messageHandlers) installMessageHandlersPolyfill(post);
  if (config.loadingBar) showLoadingBar(config.loadingBar);
  global.BridgeBroker = api;

  // Deferred, so a module that imports the shim can call connect({token}) before the first handshake.
  const startSoon = typeof global.queueMicrotask === "function" ? global.queueMicrotask : (fn) => Promise.resolve().then(fn);
  startSoon(() => {
    if (!client.started && config.autoConnect) client.connect({});
  });
})(typeof globalThis !== "undefined" ? globalThis : typeof self !== "undefined" ? self : this);
