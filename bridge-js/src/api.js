// The public API, globalThis.BridgeBroker (bridge.d.ts declares it, README.md describes it), over
// the parts main.js puts together.

import { parsePatch } from "./config.js";
import { MARKER, VERSION } from "./constants.js";
import { global } from "./env.js";
import { BridgeError } from "./errors.js";
import { installLazyGlobal, isLazyGlobal } from "./lazy.js";
import { createLoadingBar } from "./loading-bar.js";
import { UrlRules } from "./rules.js";
import { hasOwn } from "./util.js";

/**
 * BridgeBroker for one page: `shim` is {config, emitter, client, pageProgress, context, fetches,
 * xhrClass, eventSourceClass} as main.js builds them; the two classes are `once` functions (built
 * when the page first reads the global or BridgeBroker's property), or null where the page has no
 * EventTarget to build them on.
 */
export function createApi(shim) {
  const { config, emitter, client, pageProgress, context, fetches, xhrClass, eventSourceClass } = shim;

  function patch(targets, rules) {
    const wanted = targets === undefined ? { fetch: true, xhr: true, eventSource: true } : parsePatch(targets);
    if (rules && (hasOwn(rules, "include") || hasOwn(rules, "exclude"))) {
      context.rules = new UrlRules(rules.include, rules.exclude);
    }
    context.patches.fetch = wanted.fetch && typeof global.Response === "function" && typeof global.ReadableStream === "function";
    context.patches.xhr = wanted.xhr && Boolean(xhrClass);
    if (context.patches.fetch) global.fetch = fetches.fetch;
    else if (global.fetch === fetches.fetch) global.fetch = context.nativeFetch;
    if (context.patches.xhr) installLazyGlobal("XMLHttpRequest", xhrClass);
    else if (xhrClass && isLazyGlobal("XMLHttpRequest", xhrClass)) global.XMLHttpRequest = context.NativeXHR;
    context.patches.eventSource = Boolean(wanted.eventSource && eventSourceClass);
    if (context.patches.eventSource) installLazyGlobal("EventSource", eventSourceClass);
    else if (eventSourceClass && isLazyGlobal("EventSource", eventSourceClass)) global.EventSource = context.NativeEventSource;
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
    patched: { get: () => ({ fetch: context.patches.fetch, xhr: context.patches.xhr, eventSource: context.patches.eventSource }), enumerable: true },
    BridgeError: { value: BridgeError },
    fetch: { value: fetches.bridgedFetch },
    nativeFetch: { value: context.nativeFetch },
    XMLHttpRequest: { get: () => (xhrClass ? xhrClass() : null) },
    NativeXMLHttpRequest: { value: context.NativeXHR },
    EventSource: { get: () => (eventSourceClass ? eventSourceClass() : null) },
    NativeEventSource: { value: context.NativeEventSource },
  });
  return api;
}
