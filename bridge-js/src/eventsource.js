// The EventSource replacement: a server-sent event stream read through the broker as a `fetch`
// post whose body arrives as binary frames, parsed and dispatched as the HTML standard says
// (https://html.spec.whatwg.org/multipage/server-sent-events.html). Unbridged URLs get the native one.

import { DEFAULT_REQUEST_TIMEOUT_MS } from "./constants.js";
import { global } from "./env.js";
import { identityFields } from "./identity.js";
import { absoluteUrl } from "./urls.js";
import { domException } from "./util.js";
import { defineEventHandlers, mimeEssence } from "./xhr-support.js";

const CONNECTING = 0;
const OPEN = 1;
const CLOSED = 2;
// Chromium's default reconnection time.
const DEFAULT_RETRY_MS = 3000;
const LF = 10;
const CR = 13;

function messageEvent(type, init) {
  if (typeof global.MessageEvent === "function") return new global.MessageEvent(type, init);
  const event = new global.Event(type);
  for (const key of Object.keys(init)) Object.defineProperty(event, key, { value: init[key] });
  return event;
}

/** The standard's event stream parser: bytes in, `{field, value}` lines and blank lines out. */
export class EventStreamParser {
  constructor(onLine) {
    this.onLine = onLine;
    this.decoder = new TextDecoder("utf-8");
    this.pending = "";
    this.afterCR = false;
  }

  push(bytes) {
    this.feed(this.decoder.decode(bytes, { stream: true }));
  }

  feed(text) {
    let lineStart = 0;
    let buffer = this.pending + text;
    let index = 0;
    if (this.afterCR && buffer.charCodeAt(0) === LF) {
      buffer = buffer.slice(1);
    }
    this.afterCR = false;
    for (; index < buffer.length; index++) {
      const code = buffer.charCodeAt(index);
      if (code !== LF && code !== CR) continue;
      this.onLine(buffer.slice(lineStart, index));
      if (code === CR) {
        if (index + 1 === buffer.length) this.afterCR = true;
        else if (buffer.charCodeAt(index + 1) === LF) index++;
      }
      lineStart = index + 1;
    }
    this.pending = buffer.slice(lineStart);
  }
}

export function createEventSourceClass(context) {
  const NativeEventSource = context.NativeEventSource;

  /** EventSource over the broker, with the standard's states, parsing and reconnection. */
  class BridgeEventSource extends global.EventTarget {
    constructor(url, init) {
      if (arguments.length < 1) throw new TypeError("Failed to construct 'EventSource': 1 argument required, but only 0 present.");
      const parsed = absoluteUrl(url);
      if (!parsed) throw domException(`Failed to construct 'EventSource': The URL '${url}' is invalid.`, "SyntaxError");
      const withCredentials = Boolean(init && init.withCredentials);
      if (!context.patches.eventSource || !context.shouldBridge(parsed)) {
        if (!NativeEventSource) throw domException("bridge-js: this page has no native EventSource for this URL", "NotSupportedError");
        // A constructor may return another object: the page gets the native EventSource itself.
        return new NativeEventSource(url, init);
      }
      super();
      this.eventHandlers = {};
      this.sourceUrl = parsed.href;
      this.credentials = withCredentials;
      this.state = CONNECTING;
      this.lastEventId = "";
      this.retryMs = DEFAULT_RETRY_MS;
      this.exchange = null;
      this.timer = null;
      this.generation = 0;
      // A task, as the standard's fetch starts in parallel: the page may add listeners first.
      this.timer = setTimeout(() => this.connect(), 0);
    }

    get url() {
      return this.sourceUrl;
    }

    get withCredentials() {
      return this.credentials;
    }

    get readyState() {
      return this.state;
    }

    close() {
      this.state = CLOSED;
      this.stop();
    }

    stop() {
      this.generation++;
      clearTimeout(this.timer);
      this.timer = null;
      const exchange = this.exchange;
      this.exchange = null;
      if (exchange) exchange.abort(domException("The EventSource was closed.", "AbortError"));
    }

    connect() {
      this.timer = null;
      if (this.state === CLOSED) return;
      const generation = ++this.generation;
      const live = () => this.generation === generation && this.state !== CLOSED;
      const headers = [["Accept", "text/event-stream"], ["Cache-Control", "no-cache"]];
      if (this.lastEventId) headers.push(["Last-Event-ID", this.lastEventId]);
      this.resetEvent();
      this.parser = new EventStreamParser((line) => live() && this.onLine(line));
      this.origin = new URL(this.sourceUrl).origin;
      context.identity.refresh();
      // The HTML standard's request: mode cors, credentials from withCredentials, the page's referrer and policy.
      const credentials = this.credentials ? "include" : "same-origin";
      const documentCookie = context.cookies.documentCookieFor(new URL(this.sourceUrl), credentials);
      const exchange = context.client.exchange({
        name: "fetch",
        body: {
          url: this.sourceUrl,
          method: "GET",
          headers,
          cache: "no-store",
          redirect: "follow",
          responseBody: "binary",
          headerEncoding: "latin1",
          progress: false,
          timeout: DEFAULT_REQUEST_TIMEOUT_MS,
          ...identityFields({ credentials, mode: "cors" }, documentCookie),
        },
        onEvent: (name, payload) => live() && name === "response" && this.onResponse(payload || {}),
        onBinary: (chunk) => live() && this.state === OPEN && this.parser.push(chunk),
      });
      this.exchange = exchange;
      exchange.promise.then(
        (reply) => live() && this.onEnd(reply || {}),
        () => live() && this.reconnect(),
      );
    }

    onResponse(head) {
      context.cookies.apply(head.cookies);
      const status = Number(head.status);
      const headers = Array.isArray(head.headers) ? head.headers : [];
      const type = (headers.find((pair) => String(pair[0]).toLowerCase() === "content-type") || [])[1];
      if (head.url) this.origin = new URL(head.url).origin;
      // The standard: anything but a 200 with text/event-stream fails the connection for good.
      if (status !== 200 || mimeEssence(type) !== "text/event-stream") {
        this.fail();
        return;
      }
      this.state = OPEN;
      this.dispatchEvent(new global.Event("open"));
    }

    onEnd(reply) {
      this.exchange = null;
      if (this.state === CONNECTING && reply.status !== undefined) this.onResponse(reply);
      if (this.state === CLOSED) return;
      this.reconnect();
    }

    /** "Fail the connection": CLOSED, one error event, no reconnection. */
    fail() {
      this.state = CLOSED;
      this.stop();
      this.dispatchEvent(new global.Event("error"));
    }

    /** "Reestablish the connection": CONNECTING, an error event, and a new request after the retry time. */
    reconnect() {
      this.exchange = null;
      if (this.state === CLOSED) return;
      this.generation++;
      this.state = CONNECTING;
      this.dispatchEvent(new global.Event("error"));
      if (this.state !== CONNECTING) return;
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.connect(), this.retryMs);
    }

    resetEvent() {
      this.data = "";
      this.eventType = "";
      this.eventId = this.lastEventId;
    }

    onLine(line) {
      if (line === "") return this.dispatchPending();
      if (line.charCodeAt(0) === 58) return undefined; // ":" starts a comment.
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.charCodeAt(0) === 32) value = value.slice(1);
      if (field === "event") this.eventType = value;
      else if (field === "data") this.data += `${value}\n`;
      else if (field === "id") {
        if (!value.includes("\0")) this.eventId = value;
      } else if (field === "retry") {
        if (/^[0-9]+$/.test(value)) this.retryMs = Number(value);
      }
      return undefined;
    }

    dispatchPending() {
      this.lastEventId = this.eventId;
      if (this.data === "") {
        this.eventType = "";
        return;
      }
      const data = this.data.endsWith("\n") ? this.data.slice(0, -1) : this.data;
      const type = this.eventType || "message";
      this.data = "";
      this.eventType = "";
      this.dispatchEvent(messageEvent(type, { data, origin: this.origin, lastEventId: this.lastEventId }));
    }
  }

  defineEventHandlers(BridgeEventSource.prototype, ["open", "message", "error"]);
  for (const [name, value] of Object.entries({ CONNECTING, OPEN, CLOSED })) {
    Object.defineProperty(BridgeEventSource, name, { value, enumerable: true });
    Object.defineProperty(BridgeEventSource.prototype, name, { value, enumerable: true });
  }
  Object.defineProperty(BridgeEventSource, "name", { value: "EventSource" });
  Object.defineProperty(BridgeEventSource.prototype, Symbol.toStringTag, { value: "EventSource", configurable: true });
  return BridgeEventSource;
}
