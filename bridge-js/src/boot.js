/*
 * bridge-boot.js: the boot script of Bridge Broker's page shim, for a host that injects a script at
 * document start (a WebView's user script, DevTools' addScriptToEvaluateOnNewDocument) into pages
 * it has preloaded (`bridge-broker preload --page URL --for-page PAGE`).
 *
 * The whole shim injected at document start costs the page's main thread its compile and start
 * (10 to 20 ms in Chromium) before the page's own first script. This script is a fraction of it:
 * it asks the broker at once for the page's preloaded responses (`page.preloaded`, one early
 * request over HTTP, as the shim does with early posts), holds the page's fetch() calls, serves
 * those the answer has itself, and then imports the shim from the broker (`/bridge.js` as an ES
 * module, compiled off the main thread; when the page is idle if the answer served it), which takes
 * over the rest (main.js): the calls still held, the answer's other responses, and everything
 * after. If the shim cannot be loaded, the held calls go to the page's own fetch.
 *
 * Until the shim has loaded (tens of milliseconds): XMLHttpRequest and EventSource are the
 * browser's own, BridgeBroker is not defined, and a fetch() the answer does not serve waits for the
 * shim (bridge-js/README.md, "The boot script").
 *
 * This is the entry module of bridge-boot.js (bridge-js/tools/build.py): the only module it runs.
 */

import { BOOT_KEY } from "./boot-state.js";
import { readConfig } from "./config.js";
import { EARLY_FIRST_ID, MARKER, NULL_BODY_STATUSES, SHIM_IDLE_TIMEOUT_MS } from "./constants.js";
import { global } from "./env.js";
import { defaultFetchBody } from "./fetch-post.js";
import { createIdentityReporter, isHttpPage } from "./identity.js";
import { insideRealWebKit } from "./message-handlers.js";
import { xhrPoster } from "./early-request.js";
import { requestPreloaded } from "./preloaded.js";
import { makeResponse } from "./response.js";
import { UrlRules } from "./rules.js";
import { absoluteUrl, httpOriginOfSocket } from "./urls.js";
import { reportError } from "./util.js";

// A shim already running, or a second copy of this script: the first one does the work.
if (!(global.BridgeBroker && global.BridgeBroker[MARKER]) && global[BOOT_KEY] === undefined) bootPage();

function bootPage() {
  const config = readConfig();
  const origin = httpOriginOfSocket(config.url);
  const nativeFetch = typeof global.fetch === "function" ? global.fetch : null;
  // Inside a real WKWebView the shim talks to the host through its message handlers, not over HTTP.
  if (!nativeFetch || !origin || insideRealWebKit()) {
    if (origin) loadShim(origin, () => {}, () => {});
    return;
  }
  const held = [];
  let shimFetch = null;
  const state = {
    nativeFetch,
    url: config.url,
    token: config.token,
    preloaded: null,
    /** Called by the shim once it patched fetch (or with the page's own fetch when it could not load): the held calls go to `fetch`. */
    handOver(fetch) {
      if (shimFetch) return;
      shimFetch = fetch;
      for (const call of held.splice(0)) forward(call);
    },
  };
  global[BOOT_KEY] = state;

  const client = {
    url: config.url,
    token: config.token,
    earlyFetch: typeof global.XMLHttpRequest === "function" ? xhrPoster(global.XMLHttpRequest) : (url, init) => nativeFetch.call(global, url, init),
    report: (error) => reportError(error),
  };
  createIdentityReporter(client);
  const rules = new UrlRules(config.include, config.exclude);
  const context = { config };
  let entries = null; // the answer's responses by URL once it is here; until then the calls wait in `waiting`
  const waiting = [];
  // The first ids of the page's early sequence, which the shim reserves for it when it adopts the request (push.js).
  if (isHttpPage()) state.preloaded = requestPreloaded(client, () => defaultFetchBody(context), EARLY_FIRST_ID);
  if (state.preloaded) {
    state.preloaded.answer.then((answer) => {
      entries = answer || new Map();
      let served = false;
      for (const call of waiting.splice(0)) {
        if (serve(call)) served = true;
        else hold(call);
      }
      // The shim comes at once when a call waits for it or nothing was served (a page the broker has
      // nothing preloaded for needs it for all its requests). When the answer served the page's
      // calls, its import (a main-thread task of 1 to 5 ms, then the shim's evaluation) waits for
      // an idle moment, up to 200 ms: not among the tasks in which the page reads those bodies.
      if (held.length || !served || typeof global.requestIdleCallback !== "function") load();
      else global.requestIdleCallback(load, { timeout: SHIM_IDLE_TIMEOUT_MS });
    });
  } else entries = new Map();

  function forward(call) {
    let result;
    try {
      result = shimFetch.call(global, call.input, call.init);
    } catch (error) {
      call.reject(error);
      return;
    }
    Promise.resolve(result).then(call.resolve, call.reject);
  }

  function hold(call) {
    if (shimFetch) return forward(call);
    held.push(call);
    // After the answer, a call that waits for the shim brings it now (an idle wait may be under way).
    if (entries !== null) load();
  }

  /**
   * Serves `call` from the answer when the shim would: fetch(url) with no init, of a URL the shim
   * bridges, whose response is in the answer with a status and body a Response holds as it came and
   * no cookies to set (those the shim serves: its cookie bridge sets them). The response is the one
   * the shim would give (makeResponse, as FetchRun does for a whole response), and leaves the
   * answer: each is served once.
   */
  function serve(call) {
    if (call.init !== undefined || (typeof call.input !== "string" && !(call.input instanceof global.URL))) return false;
    const url = absoluteUrl(call.input);
    if (!rules.bridges(url, origin) || url.username || url.password) return false;
    // An absolute URL's href is its key (preloaded.js: urlKey) as it is.
    const key = url.href;
    const whole = entries.get(key);
    const head = whole ? whole.head : null;
    const status = head ? Number(head.status) : 0;
    if (!head || !(status >= 200 && status <= 599) || NULL_BODY_STATUSES.includes(status)) return false;
    if (Array.isArray(head.cookies) && head.cookies.length) return false;
    entries.delete(key);
    call.resolve(makeResponse(whole.frame.payload, head, url.href, null));
    return true;
  }

  const bootFetch = function fetch(input, init) {
    // A page may keep this function: after the shim took over, it is the shim's fetch.
    if (shimFetch) return shimFetch.call(global, input, init);
    return new Promise((resolve, reject) => {
      const call = { input, init, resolve, reject };
      if (entries === null && init === undefined) waiting.push(call);
      else if (entries === null || !serve(call)) hold(call);
    });
  };

  global.fetch = bootFetch;

  // The shim hands the held calls over as it starts (main.js); once its module has run, they go to
  // whatever fetch the page has then, in case it did not (a shim that was already there).
  const unpatched = () => (global.fetch === bootFetch ? nativeFetch : global.fetch);
  let loading = false;
  function load() {
    // A shim the page itself includes (a script tag) may have taken over already: nothing to import.
    if (loading || shimFetch) return;
    loading = true;
    loadShim(origin, () => state.handOver(unpatched()), () => {
      // The shim could not load (the broker stopped, a Content-Security-Policy): the page's own fetch.
      if (global.fetch === bootFetch) global.fetch = nativeFetch;
      state.handOver(nativeFetch);
    });
  }
  // Without a request, at once; with one, after its answer (above): importing the shim costs the
  // main thread a task of 1 to 5 ms, which would otherwise come before the page's first script.
  if (!state.preloaded) load();
}

/** Imports the shim from the broker as an ES module: fetched and compiled off the page's main thread. */
function loadShim(origin, loaded, failed) {
  try {
    import(`${origin}/bridge.js`).then(loaded, failed);
  } catch (_) {
    failed();
  }
}
