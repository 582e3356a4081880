// The WKWebView transport, used instead of a WebSocket when the host registered a `bridge` handler.

import { base64ToBytes, bytesToBase64, isBufferSource } from "./bytes.js";
import { SUBPROTOCOL, WEBKIT_BINARY_PREFIX } from "./constants.js";
import { global } from "./env.js";

// JavaScriptCore's native base64 decoder (Uint8Array.fromBase64), where the engine has it.
const fromBase64 = typeof Uint8Array.fromBase64 === "function" ? (text) => Uint8Array.fromBase64(text) : base64ToBytes;

/**
 * Inside a WKWebView whose host registered a `bridge` handler: envelopes go out as JSON strings
 * through that handler, binary frames as "b64:" + base64 strings. Two ways back (docs/PROTOCOL.md,
 * "WKWebView transport"):
 * - a host that answers `open` with `{session: N, frames: [...]}` (the WebKit host, BridgeWebView)
 *   hands every frame back in the replies of the handler's Promise: the shim keeps one `N:pull`
 *   message waiting, prefixes what it sends with `N:`, and the host answers the pull with the
 *   frames queued (`{frames}`) or the end of the connection (`{close: {code, reason}}`). No script
 *   is compiled per frame, and it works in every frame, where evaluateJavaScript reaches the top
 *   one only;
 * - any other host hands broker frames to window.__bridgeBrokerReceive (JSON string, "b64:"
 *   string, ArrayBuffer or object) and says window.__bridgeBrokerClose(code, reason) when it drops
 *   its side.
 * Either way a closed connection fails the posts in flight with `network` and the shim announces
 * itself again.
 */
export class WebKitTransport {
  constructor(handler, sink) {
    this.kind = "webkit";
    this.handler = handler;
    this.sink = sink;
    this.closed = false;
    // The host's connection number once it answered `open` with one (the reply mode), else null.
    this.prefix = null;
    global.__bridgeBrokerReceive = (frame) => this.receive(frame);
    global.__bridgeBrokerClose = (code, reason) => this.finish(code, reason);
  }

  start() {
    // The host has no handshake to answer, so the shim announces itself and the host replies with hello.
    // A host serving several frames tells them apart by these (a subframe's origin is its own).
    const location = global.location;
    const top = global.top === global;
    this.ask(JSON.stringify({ type: "open", protocol: SUBPROTOCOL, top, origin: location ? String(location.origin) : null }));
    // The host takes the top frame's messages in order from here on, so its posts go now, before
    // the hello, as on an open WebSocket: the page's first requests need not wait for the hello,
    // which the page may take in only after the task that is parsing it (docs/BENCHMARKS.md). A
    // subframe waits for the answer to `open`, which may name its connection.
    if (top) this.sink.onOpen();
  }

  /** Sends `message`; a host in the reply mode answers it with frames, anything else is ignored. */
  ask(message) {
    let answer;
    try {
      answer = this.handler.postMessage(message);
    } catch (error) {
      return this.finish(1006, String((error && error.message) || error));
    }
    if (answer && typeof answer.then === "function") {
      answer.then(
        (value) => this.answered(value),
        (error) => this.prefix !== null && this.finish(1006, String((error && error.message) || error)),
      );
    }
  }

  answered(value) {
    if (this.closed || !value || typeof value !== "object") return;
    if (this.prefix === null) {
      if (typeof value.session !== "number") return;
      this.prefix = `${value.session}:`;
      if (typeof global.addEventListener === "function") global.addEventListener("pagehide", () => this.leave(), { once: true });
    }
    const frames = value.frames || [];
    for (let i = 0; i < frames.length && !this.closed; i++) this.receive(frames[i]);
    if (value.close) return this.finish(value.close.code, value.close.reason);
    if (!this.closed) this.ask(this.prefix + "pull");
  }

  receive(frame) {
    if (this.closed) return false;
    if (typeof frame === "string") {
      if (frame.startsWith(WEBKIT_BINARY_PREFIX)) this.sink.onBinary(fromBase64(frame.slice(WEBKIT_BINARY_PREFIX.length)));
      else this.sink.onText(frame);
    } else if (isBufferSource(frame)) {
      this.sink.onBinary(frame);
    } else if (frame && typeof frame === "object") {
      this.sink.onEnvelope(frame);
    }
    return true;
  }

  post(message) {
    this.handler.postMessage(this.prefix === null ? message : this.prefix + message);
  }

  sendText(text) {
    this.post(text);
  }

  sendBinary(bytes) {
    this.post(WEBKIT_BINARY_PREFIX + bytesToBase64(bytes));
  }

  drain() {
    return Promise.resolve();
  }

  /** The document goes away: the host ends its connection (posts in flight are cancelled upstream). */
  leave() {
    if (this.closed || this.prefix === null) return;
    this.post("close");
    this.finish(1001, "the page is going away");
  }

  close() {
    if (!this.closed && this.prefix !== null) this.post("close");
    this.closed = true;
  }

  finish(code, reason) {
    if (this.closed) return;
    this.closed = true;
    this.sink.onClose({ code: code || 1006, reason: reason || "" });
  }
}
