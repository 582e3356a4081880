// The WKWebView transport, used instead of a WebSocket when the host registered a `bridge` handler.

import { base64ToBytes, bytesToBase64, isBufferSource } from "./bytes.js";
import { SUBPROTOCOL, WEBKIT_BINARY_PREFIX } from "./constants.js";
import { global } from "./env.js";

/**
 * Inside a WKWebView whose host registered a `bridge` script message handler: envelopes go out as
 * JSON strings through that handler, binary frames as "b64:" + base64 strings; the host hands
 * broker frames to window.__bridgeBrokerReceive (JSON string, "b64:" string, ArrayBuffer or object).
 * window.__bridgeBrokerClose(code, reason) tells the shim the host dropped its side: posts in flight
 * fail with `network` and the shim announces itself again.
 */
export class WebKitTransport {
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
