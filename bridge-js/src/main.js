/*
 * bridge.js: the page shim of Bridge Broker (protocol bridge.v1).
 *
 * Classic script:  <script src="http://127.0.0.1:8787/bridge.js" data-token="..."></script>
 * ES module:       import "http://127.0.0.1:8787/bridge.js";  then use globalThis.BridgeBroker
 *
 * It defines globalThis.BridgeBroker, connects to the broker the script came from, patches fetch,
 * XMLHttpRequest and EventSource (opt-out with data-patch="none"), polyfills window.webkit.messageHandlers
 * outside a real WKWebView and reports page-load progress. See README.md beside src/ and
 * docs/PROTOCOL.md for the wire protocol.
 *
 * This is the entry module: the only one that runs code when the file loads (the others only
 * declare), so the double-include guard below runs before anything else. bridge-js/tools/build.py
 * joins the modules into the one classic script the broker serves at /bridge.js.
 */

import { createApi } from "./api.js";
import { takeBoot } from "./boot-state.js";
import { Client } from "./client.js";
import { readConfig } from "./config.js";
import { MARKER } from "./constants.js";
import { createCookieBridge, pageCookieSender } from "./cookies.js";
import { xhrPoster } from "./early-request.js";
import { Emitter } from "./emitter.js";
import { global } from "./env.js";
import { createEventSourceClass } from "./eventsource.js";
import { createFetch } from "./fetch.js";
import { defaultFetchBody } from "./fetch-post.js";
import { createIdentityReporter, isHttpPage } from "./identity.js";
import { once } from "./lazy.js";
import { insideRealWebKit, installMessageHandlersPolyfill } from "./message-handlers.js";
import { PageProgress } from "./progress.js";
import { PreloadedResponses } from "./push.js";
import { UrlRules } from "./rules.js";
import { httpOriginOfSocket } from "./urls.js";
import { reportError, soon } from "./util.js";
import { createXMLHttpRequestClass } from "./xhr.js";

// A page that includes the shim twice (script tag and import) must keep one connection.
if (!(global.BridgeBroker && global.BridgeBroker[MARKER])) start();

/**
 * Reads the configuration and queues the connection first (it opens in the first microtask after
 * the script, before the page's next script; the page's first requests then wait for the
 * connection alone); then patches the page and defines BridgeBroker.
 */
function start() {
  // Loaded by the boot script (boot.js): its broker, the page's own fetch and its page.preloaded request.
  const boot = takeBoot();
  const config = readConfig(boot);
  const emitter = new Emitter();
  const client = new Client(emitter);
  const connectionSettings = { token: config.token, transport: config.transport, backoff: config.backoff, queueTimeout: config.queueTimeout };
  try {
    client.configure(Object.assign({ url: config.url }, connectionSettings));
  } catch (error) {
    reportError(error); // A bad data-broker-url leaves the default broker address in place.
    client.configure(connectionSettings);
  }
  // page.identity goes first on every connection, the first one included.
  const identity = createIdentityReporter(client);
  // The connection opens in the first microtask, right after this script ran and before any other
  // script of the page can: `new WebSocket` makes Blink capture the caller's source location, and
  // with this file's big top-level functions on the stack V8 re-parses all of them to find it
  // (3 ms of main-thread CPU in a trace, more than the rest of the start). From a microtask the
  // stack holds only small functions. A module's importer may also call connect({token}) first.
  soon(() => {
    if (!client.started && config.autoConnect) client.connect({});
    // A bootstrap snippet's socket that no connection took (data-auto-connect="false") is closed.
    else if (!client.started) client.dropSnippet();
  });

  const pageProgress = new PageProgress(emitter);
  const realWebKit = insideRealWebKit();
  const context = {
    client,
    config,
    progress: pageProgress,
    nativeFetch: boot ? boot.nativeFetch : typeof global.fetch === "function" ? global.fetch : null,
    NativeXHR: typeof global.XMLHttpRequest === "function" ? global.XMLHttpRequest : null,
    NativeEventSource: typeof global.EventSource === "function" ? global.EventSource : null,
    patches: { fetch: false, xhr: false, eventSource: false },
    identity,
    cookies: createCookieBridge(pageCookieSender(client, identity)),
    rules: new UrlRules(config.include, config.exclude),
    brokerOrigin: () => (client.useWebKit() ? null : httpOriginOfSocket(client.url)),
    shouldBridge(url) {
      return this.rules.bridges(url, this.brokerOrigin());
    },
  };

  // The page's first fetches may also go early over HTTP while the WebSocket opens (early.js), through
  // the page's own XMLHttpRequest (a document's first fetch() costs its main thread more:
  // early-request.js), or its native fetch: the patched ones would bridge the request themselves.
  if (config.earlyPosts && context.NativeXHR) client.earlyFetch = xhrPoster(context.NativeXHR);
  else if (config.earlyPosts && context.nativeFetch) client.earlyFetch = (url, init) => context.nativeFetch.call(global, url, init);
  // With them, the page's preloaded responses come in one early request at its start (push.js).
  if ((client.earlyFetch || (boot && boot.preloaded)) && isHttpPage()) client.push = new PreloadedResponses(client, () => defaultFetchBody(context));
  if (client.push && boot && boot.preloaded) client.push.adopt(boot.preloaded);

  const fetches = createFetch(context);
  // Built when the page first uses them: until then their code is only pre-parsed.
  const hasEventTarget = typeof global.EventTarget === "function";
  const xhrClass = hasEventTarget ? once(() => createXMLHttpRequestClass(context)) : null;
  const eventSourceClass = hasEventTarget ? once(() => createEventSourceClass(context)) : null;
  const api = createApi({ config, emitter, client, pageProgress, context, fetches, xhrClass, eventSourceClass });

  emitter.on("group.progress", (body) => pageProgress.onGroupProgress(body));
  const doc = global.document;
  // A shim that arrives after the page finished loading (a late import) has no document phase to show.
  pageProgress.begin(Boolean(doc) && doc.readyState !== "complete");
  if (doc && typeof doc.addEventListener === "function") doc.addEventListener("readystatechange", () => pageProgress.documentChanged());
  if (typeof global.addEventListener === "function") global.addEventListener("load", () => pageProgress.documentLoaded());

  api.patch(config.patch);
  if (!realWebKit && config.messageHandlers) installMessageHandlersPolyfill(api.post);
  if (config.loadingBar) api.showLoadingBar(config.loadingBar);
  global.BridgeBroker = api;
  // The fetch() calls the boot script held go through the patched fetch, or the page's own.
  if (boot) boot.handOver(context.patches.fetch ? global.fetch : context.nativeFetch);

}
