// The connection to the broker, one per page: ids, posts in flight, the queue, reconnection and
// request-body uploads. A transport (transport-*.js) carries its frames; early.js carries the first
// fetches over HTTP too while the WebSocket opens, and push.js the page's preloaded responses.

import { utf8ByteLength } from "./bytes.js";
import {
  DEFAULT_BACKOFF, DEFAULT_BROKER_URL, DEFAULT_QUEUE_TIMEOUT_MS, EARLY_IN_FLIGHT, EARLY_POST_BYTES, EMPTY_BYTES,
  FRAME_HEADER_BYTES, FRAME_KIND_BATCH, FRAME_KIND_BODY, FRAME_KIND_WHOLE, MARKER, UPLOAD_CHUNK_BYTES,
} from "./constants.js";
import { EarlyPosts } from "./early.js";
import { global } from "./env.js";
import { BridgeError, abortReason, errorFromBroker } from "./errors.js";
import { Exchange } from "./exchange.js";
import { decodeFrame, eachBatchFrame, encodeBodyFrame, envelopeText, wholeHead } from "./posts.js";
import { discardSnippet, snippetAdoptable, takeSnippet } from "./snippet.js";
import { WebKitTransport } from "./transport-webkit.js";
import { WebSocketTransport } from "./transport-websocket.js";
import { normalizeSocketUrl, withToken } from "./urls.js";
import { domException, hasOwn, safeCall, soon } from "./util.js";

/** The connection to the broker: ids, posts in flight, the queue, reconnection. */
export class Client {
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
    // The transport is open and may carry posts before its hello (see flushQueue).
    this.transportOpen = false;
    this.hello = null;
    this.lastHello = null;
    this.nextId = 1;
    this.pending = new Map();
    this.queue = [];
    this.attempt = 0;
    this.reconnectTimer = null;
    // Makes the post that goes first on every connection, before the hello and anything queued:
    // () => ({name, body, settled(promise)}) or null. main.js sets it to `page.identity`.
    this.greeting = null;
    // Early posts over HTTP (early.js): the page's native fetch, `(url, init) => Promise<Response>`,
    // or null when they are off (main.js sets it; a broker without the endpoint turns it off).
    this.earlyFetch = null;
    this.earlyPosts = null;
    // The page's preloaded responses pushed at document start (push.js), when early posts are on.
    this.push = null;
    // The bootstrap snippet's socket, if the page has one (src/snippet.js): the first open() adopts
    // it or closes it.
    this.snippet = takeSnippet();
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
    this.dropSnippet();
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

  /** Closes the snippet's socket if no connection adopted it (data-auto-connect="false", disconnect()). */
  dropSnippet() {
    const snippet = this.snippet;
    this.snippet = null;
    if (snippet) discardSnippet(snippet);
  }

  open() {
    this.reconnectTimer = null;
    this.nextId = 1;
    this.hello = null;
    this.transportOpen = false;
    let transport = null;
    const current = () => transport !== null && this.transport === transport;
    const sink = {
      onText: (text) => current() && this.onText(text),
      onEnvelope: (message) => current() && this.onEnvelope(message),
      onBinary: (data) => current() && this.onBinary(data),
      onOpen: () => current() && this.onTransportOpen(),
      onClose: (info) => current() && this.onTransportClosed(info),
    };
    const snippet = this.snippet;
    this.snippet = null;
    try {
      if (this.useWebKit()) {
        if (snippet) discardSnippet(snippet);
        transport = new WebKitTransport(global.webkit.messageHandlers.bridge, sink);
      } else {
        const url = withToken(this.url, this.token);
        // The snippet's socket is this connection if it is the one this would open and still alive.
        const adopted = snippet && snippetAdoptable(snippet, url) ? snippet : null;
        if (snippet && !adopted) discardSnippet(snippet);
        transport = new WebSocketTransport(url, sink, adopted);
      }
    } catch (error) {
      this.emitter.emit("close", { code: 1006, reason: String(error && error.message) });
      this.scheduleReconnect();
      return;
    }
    this.transport = transport;
    this.queueGreeting();
    transport.start();
    // Right after the page's first WebSocket: the one early request of the page's preloaded responses.
    if (this.push && transport.kind === "websocket") soon(() => this.push.start());
  }

  /**
   * Puts this connection's greeting at the head of the queue, in place of a previous connection's
   * that never went. It is an early post like any other: it leaves when the socket opens if it is
   * small enough, else everything waits for the hello behind it, so it is always the first post.
   */
  queueGreeting() {
    const stale = this.queue.filter((exchange) => exchange.greeting);
    if (stale.length) this.queue = this.queue.filter((exchange) => !exchange.greeting);
    for (const exchange of stale) exchange.reject(new BridgeError("network", "a new connection sends its own greeting"));
    const spec = this.greeting ? this.greeting() : null;
    if (!spec) return;
    const exchange = new Exchange(this, spec);
    exchange.greeting = true;
    exchange.finishBody();
    exchange.state = "queued";
    if (spec.settled) spec.settled(exchange.promise);
    this.queue.unshift(exchange);
  }

  /** The WebSocket is open: posts may go before the hello arrives (flushQueue says which). */
  onTransportOpen() {
    this.transportOpen = true;
    this.flushQueue();
  }

  closeTransport(code, reason) {
    const transport = this.transport;
    if (!transport) return;
    this.transport = null;
    this.hello = null;
    this.transportOpen = false;
    transport.close(code, reason);
    this.failInFlight(`bridge-js closed the connection to the broker (${reason})`);
    this.emitter.emit("close", { code, reason });
  }

  onTransportClosed(info) {
    this.transport = null;
    this.hello = null;
    this.transportOpen = false;
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
    if (exchange.early && !message.ok && message.error && message.error.code === "too_many_in_flight") {
      // Sent before the hello told the real limit, and refused unrun: it goes again in its turn.
      this.requeue(exchange);
    } else if (message.ok) exchange.resolve(message.body === undefined ? null : message.body);
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
    if (frame && frame.kind === FRAME_KIND_BATCH) return this.onBatch(frame.payload);
    return this.onFrame(frame);
  }

  /** A decoded frame that is not a batch: a body chunk or a whole response (early.js hands them in too). */
  onFrame(frame) {
    if (frame && frame.kind === FRAME_KIND_WHOLE) return this.onWhole(frame);
    if (!frame || frame.kind !== FRAME_KIND_BODY) {
      this.report(new BridgeError("bad_message", "bridge-js received a malformed binary frame"));
      return;
    }
    const exchange = this.pending.get(frame.id);
    if (exchange && !exchange.settled && exchange.spec.onBinary) {
      safeCall(exchange.spec.onBinary, frame.payload, frame.end);
    }
  }

  /** A batch: whole-response frames (of posts that asked with `batch`), each after its length. */
  onBatch(bytes) {
    if (!eachBatchFrame(bytes, (frame) => this.onWhole(frame))) {
      this.report(new BridgeError("bad_message", "bridge-js received a malformed batch frame"));
    }
  }

  /**
   * A whole response (a post that asked with `whole`): the reply's head and the body in one frame.
   * It is the post's reply: `spec.onWhole(head, body)` takes the body (a view of the frame), then the
   * post resolves with the head as its reply body. A post without onWhole (BridgeBroker.post with
   * `whole` in a fetch body) gets what the frame stands for: the `response` event and the body
   * as one END frame through onEvent and onBinary. `head` is the parsed head when the caller has it;
   * a caller serving several at once passes `flush` false and flushes the queue once after them.
   */
  onWhole(frame, head = wholeHead(frame), flush = true) {
    if (!head) {
      this.report(new BridgeError("bad_message", "bridge-js received a whole-response frame whose head is not a JSON object"));
      return;
    }
    const exchange = this.pending.get(frame.id);
    if (!exchange) return;
    this.pending.delete(frame.id);
    const spec = exchange.spec;
    if (!exchange.settled && spec.onWhole) safeCall(spec.onWhole, head, frame.payload);
    else if (!exchange.settled) {
      if (spec.onEvent) safeCall(spec.onEvent, "response", head);
      if (spec.onBinary) safeCall(spec.onBinary, frame.payload, true);
    }
    exchange.resolve(head);
    if (flush) this.flushQueue();
  }

  report(error, envelope) {
    if (envelope && envelope.duplicateId !== undefined) error.duplicateId = envelope.duplicateId;
    if (this.emitter.has("error")) this.emitter.emit("error", error);
    else if (global.console) global.console.warn(`bridge-js: ${error.code}: ${error.message}`);
  }

  /** Starts a post described by `spec` ({name, body, reply, signal, upload, onEvent, onBinary}). */
  exchange(spec) {
    const exchange = new Exchange(this, spec);
    // A body with a finishing step is finished once it is sure to go: below, or when the page's
    // preloaded responses do not have it (push.js).
    if (!spec.finishBody && !this.finishBody(exchange)) return exchange;
    if (this.state === "closed") {
      exchange.reject(new BridgeError("network", "bridge-js is disconnected: call BridgeBroker.connect() first"));
      return exchange;
    }
    if (spec.signal && !this.watchSignal(exchange, spec.signal)) return exchange;
    exchange.state = "queued";
    this.queue.push(exchange);
    // A fetch the page's preloaded responses may answer waits for them (push.js), even once the socket is open.
    const pushed = Boolean(spec.pushable && this.push && this.push.claim(exchange));
    if (!pushed && !this.finishBody(exchange)) return exchange;
    this.flushQueue();
    if (exchange.state !== "queued") return exchange;
    this.armQueueTimer(exchange);
    if (!pushed) this.holdEarly(exchange);
    return exchange;
  }

  /** A fetch the broker may have fresh goes at once over HTTP too, while the socket opens (early.js). */
  holdEarly(exchange) {
    const spec = exchange.spec;
    if (exchange.state !== "queued" || !spec.early || !this.earlyFetch || this.transportOpen || !exchange.expectsReply || this.useWebKit()) return;
    if (!this.earlyPosts) this.earlyPosts = new EarlyPosts(this);
    this.earlyPosts.hold(exchange);
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

  /** Finishes the post's body (Exchange.finishBody); one that is not JSON rejects the post: false then. */
  finishBody(exchange) {
    const error = exchange.finishBody();
    if (!error) return true;
    this.removeFromQueue(exchange);
    exchange.reject(new BridgeError("bad_message", `the body of post "${exchange.spec.name}" is not JSON: ${error.message}`));
    return false;
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

  /** Flow control: grants a post `bytes` more of its response body, when the broker takes credit frames. */
  sendCredit(exchange, bytes) {
    const features = this.hello && Array.isArray(this.hello.features) ? this.hello.features : [];
    if (exchange.settled || exchange.state !== "sent" || !features.includes("credit")) return;
    if (this.transport && exchange.transport === this.transport) {
      this.transport.sendText(`{"type":"credit","id":${exchange.id},"bytes":${bytes}}`);
    }
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

  /**
   * Sends queued posts, in order, while the connection has room. Once the hello is there, up to its
   * `maxInFlight`. Before it, as soon as the WebSocket is open (the broker sends its hello first and
   * reads posts after it, docs/PROTOCOL.md), so a page's first requests wait for the connection and
   * not for the hello too, within limits any broker can take: at most EARLY_IN_FLIGHT posts, each one
   * expecting a reply (so a refusal comes back with its id), small (maxMessageBytes is not known yet)
   * and without a request body to stream (its chunk size depends on the hello). A post the broker
   * refuses with `too_many_in_flight` before the hello was read is queued again (requeue). A post
   * an early HTTP post holds (early.js) waits for that answer; the posts after it need not.
   */
  flushQueue() {
    let index = 0;
    while (index < this.queue.length && (this.isReady || (this.transportOpen && this.transport !== null))) {
      const exchange = this.queue[index];
      if (exchange.held) {
        index++;
        continue;
      }
      const early = this.hello === null;
      if (early && !this.mayGoEarly(exchange)) return;
      const limit = early ? EARLY_IN_FLIGHT : this.limit("maxInFlight") || Infinity;
      if (exchange.expectsReply && this.pending.size >= limit) return;
      this.queue.splice(index, 1);
      this.dispatch(exchange, early);
    }
  }

  mayGoEarly(exchange) {
    if (!exchange.expectsReply || exchange.spec.upload) return false;
    const json = exchange.bodyJson;
    // UTF-8 takes at most three bytes per UTF-16 unit: count exactly only when that bound is over.
    return json === undefined || json.length * 3 + exchange.spec.name.length * 3 + 64 <= EARLY_POST_BYTES ||
      utf8ByteLength(json) + utf8ByteLength(exchange.spec.name) + 64 <= EARLY_POST_BYTES;
  }

  /** Puts an exchange refused before the hello back in the queue, ahead of the posts never sent. */
  requeue(exchange) {
    exchange.state = "queued";
    exchange.early = false;
    exchange.retry = true;
    let index = 0;
    while (index < this.queue.length && this.queue[index].retry) index++;
    this.queue.splice(index, 0, exchange);
    if (!exchange.greeting) this.armQueueTimer(exchange);
  }

  dispatch(exchange, early) {
    clearTimeout(exchange.queueTimer);
    const transport = this.transport;
    exchange.early = Boolean(early);
    exchange.retry = false;
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
