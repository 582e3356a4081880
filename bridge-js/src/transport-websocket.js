// The WebSocket transport: the default way to the broker.

import { SUBPROTOCOL, UPLOAD_HIGH_WATER_BYTES } from "./constants.js";
import { global } from "./env.js";
import { sleep } from "./util.js";

/**
 * The default transport: one WebSocket with subprotocol bridge.v1. With `adopted` (the bootstrap
 * snippet's `{socket, events}`, src/snippet.js) it carries on with that socket: the events the
 * snippet kept go to the sink first, in order, when the client starts the transport.
 */
export class WebSocketTransport {
  constructor(url, sink, adopted) {
    this.kind = "websocket";
    this.url = url;
    this.sink = sink;
    this.closed = false;
    this.adopted = Boolean(adopted);
    this.replay = adopted ? adopted.events : null;
    const socket = adopted ? adopted.socket : new global.WebSocket(url, [SUBPROTOCOL]);
    socket.binaryType = "arraybuffer";
    socket.onopen = () => {
      if (!this.closed) sink.onOpen();
    };
    socket.onmessage = (event) => {
      if (typeof event.data === "string") sink.onText(event.data);
      else sink.onBinary(event.data);
    };
    // A failed handshake fires error then close; close alone carries what the shim needs.
    socket.onerror = () => {};
    socket.onclose = (event) => this.finish(event.code, event.reason);
    this.socket = socket;
  }

  /** Hands over what the snippet's socket got before the shim ran (the open, the hello). */
  start() {
    const events = this.replay;
    this.replay = null;
    if (!events) return;
    for (const event of events.splice(0)) {
      if (this.closed) return;
      if (event.type === "open") this.socket.onopen(event);
      else this.socket.onmessage(event);
    }
  }

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
