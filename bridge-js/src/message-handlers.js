// window.webkit.messageHandlers outside a WKWebView, so pages written for a WebKit host run
// unchanged in a browser.

import { MARKER } from "./constants.js";
import { global } from "./env.js";

/** Outside a WKWebView, any window.webkit.messageHandlers.<name>.postMessage(body) becomes a post. */
export function installMessageHandlersPolyfill(post) {
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

export function insideRealWebKit() {
  const webkit = global.webkit;
  return Boolean(webkit && webkit.messageHandlers && !webkit.messageHandlers[MARKER]);
}
