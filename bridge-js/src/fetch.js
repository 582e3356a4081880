// The fetch patch: a bridged fetch() posts `fetch` to the broker and resolves at its `response`
// event with a Response (response.js) whose body streams as binary frames arrive.

import { blobSource, streamSource } from "./bodies.js";
import { FLOW_GRANT_BYTES, FLOW_WINDOW_BYTES, NULL_BODY_STATUSES, REDIRECT_STATUSES } from "./constants.js";
import { global } from "./env.js";
import { BridgeError, abortReason, fetchFailure } from "./errors.js";
import { defaultPlan, fetchPostBody } from "./fetch-post.js";
import { isForbiddenRequestHeader } from "./identity.js";
import { makeResponse, opaqueRedirectResponse, replyBodyBytes } from "./response.js";
import { absoluteUrl, isHttpUrl } from "./urls.js";
import { domException, hasOwn, isReadableStream, isRequest } from "./util.js";

/** Reads everything fetch() needs out of (input, init); cache and timeout bypass Request's checks. */
function planFetch(input, init, url) {
  // fetch(url) with no init: the default plan, without building a Request (each costs the page's
  // main thread, 30 times for a page's 30 resources). A URL with credentials goes through Request,
  // which refuses it.
  if (init === undefined && !isRequest(input) && !url.username && !url.password) return defaultPlan(url);
  const options = Object.assign({}, init);
  const original = isRequest(input) ? input : null;
  // Request throws for "only-if-cached" outside same-origin mode and for Apple's cache names; the broker takes both.
  const cache = hasOwn(options, "cache") ? options.cache : original ? original.cache : undefined;
  const timeout = hasOwn(options, "timeout") ? options.timeout : undefined;
  const signal = hasOwn(options, "signal") ? options.signal : original ? original.signal : null;
  const stream = isReadableStream(options.body) ? options.body : null;
  if (stream && options.duplex !== "half") {
    // What Request's constructor throws for it (the stream is taken out before Request sees it).
    throw new TypeError("Failed to execute 'fetch' on 'Window': The `duplex` member must be specified for a request with a streaming body");
  }
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
    // The same URL: Request parsed what fetch() did (its input, or the input Request's URL) against the same base.
    parsedUrl: url,
    method: request.method,
    // Request drops forbidden names in a browser, not in every engine: the page's identity is the broker's to set.
    headers: Array.from(request.headers).filter((pair) => !isForbiddenRequestHeader(pair[0], pair[1])),
    redirect: request.redirect,
    credentials: request.credentials,
    mode: request.mode,
    referrer: request.referrer,
    referrerPolicy: request.referrerPolicy,
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

/** Adds `documentCookie` to a fetch post's body, when the request carries the page's cookies (identity.js). */
function addDocumentCookie(context, plan, body) {
  const cookie = context.cookies.documentCookieFor(plan.parsedUrl, plan.credentials);
  if (cookie !== undefined) body.documentCookie = cookie;
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
    // What the body failed with, for its readers (response.js); undefined while it has not failed.
    this.bodyFailure = undefined;
  }

  start(upload) {
    const plan = this.plan;
    const context = this.context;
    context.identity.refresh();
    const body = fetchPostBody(context, plan, this.ticket.group, upload);
    this.exchange = context.client.exchange({
      name: "fetch",
      body,
      // document.cookie is read only for a post that goes: one served from the page's preloaded
      // responses (push.js) does not (each first read in a turn is a call into the browser).
      finishBody: (post) => addDocumentCookie(context, plan, post),
      upload,
      // A request the broker may answer from its cache alone may also go early, over HTTP, before
      // the WebSocket is open (early.js): a GET or HEAD without a body, in the default cache mode.
      early: !upload && (plan.method === "GET" || plan.method === "HEAD") && body.cache === undefined,
      // A plain GET may be one of the page's preloaded responses that came at document start (push.js).
      pushable: !upload && plan.method === "GET",
      signal: plan.signal,
      onEvent: (name, payload) => {
        if (name === "response") this.onResponseHead(payload || {});
      },
      onBinary: (chunk, end) => this.onChunk(chunk, end),
      onWhole: (head, body) => this.onResponseHead(head, body),
    });
    this.exchange.promise.then(
      (reply) => this.onReply(reply || {}),
      (error) => this.onFailure(error),
    );
  }

  /** The response's head; `whole`, when the body came with it in one frame (a view of that frame). */
  onResponseHead(head, whole) {
    if (this.responded) return;
    this.responded = true;
    // The page's cookies from this response are in document.cookie before the page sees the response.
    this.context.cookies.apply(head.cookies);
    try {
      this.resolve(this.buildResponse(head, whole));
    } catch (error) {
      this.streamFinished = true;
      this.reject(error);
      this.exchange.abort(error);
    }
  }

  buildResponse(head, whole) {
    const status = Number(head.status);
    if (this.plan.redirect === "manual" && REDIRECT_STATUSES.includes(status)) {
      this.streamFinished = true;
      return opaqueRedirectResponse(this.plan.url, head);
    }
    if (!(status >= 100 && status <= 999)) {
      throw fetchFailure(new BridgeError("network", `the broker reported an unusable status ${JSON.stringify(head.status)}`));
    }
    const nullBody = this.plan.method === "HEAD" || NULL_BODY_STATUSES.includes(status);
    if (nullBody) {
      this.streamFinished = true;
      return makeResponse(null, head, this.plan.url, () => this.bodyFailure);
    }
    if (whole && !this.plan.signal) {
      // All of it is here and nothing can fail it: the Response holds the bytes (its constructor
      // copies them out of the frame, the one copy), with no stream or reader of ours.
      this.streamFinished = true;
      return makeResponse(whole, head, this.plan.url, null);
    }
    // An abort signal must still fail an unread body (watchAbortWhileReading): a stream, fed at
    // once when the body came whole.
    this.watchAbortWhileReading();
    const response = makeResponse(this.createStream(), head, this.plan.url, () => this.bodyFailure);
    if (whole) this.onChunk(whole, true);
    return response;
  }

  /**
   * The Fetch standard's abort steps error a response body that is still readable with the
   * signal's reason, even when every byte already arrived and waits in the stream unread: the
   * exchange is over by then, so the signal is watched here until the page aborts or goes away.
   */
  watchAbortWhileReading() {
    const signal = this.plan.signal;
    if (!signal || typeof signal.addEventListener !== "function") return;
    signal.addEventListener("abort", () => this.failBody(abortReason(signal)), { once: true });
  }

  failBody(error) {
    if (!this.controller || this.bodyFailure !== undefined) return;
    this.bodyFailure = error;
    this.streamFinished = true;
    try {
      // A no-op once the page has read the whole body: a closed stream stays closed.
      this.controller.error(error);
    } catch (_) {
      // Not readable any more.
    }
  }

  createStream() {
    // The queue's high-water mark is the window: what the page has not read yet is
    // `FLOW_WINDOW_BYTES - desiredSize`, so every read (which calls pull) can grant what it freed.
    this.enqueued = 0;
    this.granted = 0;
    const strategy = typeof global.ByteLengthQueuingStrategy === "function"
      ? new global.ByteLengthQueuingStrategy({ highWaterMark: FLOW_WINDOW_BYTES })
      : { highWaterMark: FLOW_WINDOW_BYTES, size: (chunk) => chunk.byteLength };
    return new global.ReadableStream({
      start: (controller) => {
        this.controller = controller;
      },
      pull: (controller) => this.grantCredit(controller),
      cancel: (reason) => {
        this.streamFinished = true;
        this.exchange.abort(reason === undefined ? domException("The body was cancelled.", "AbortError") : reason);
      },
    }, strategy);
  }

  /** Gives the broker back the credit for what the page read, in steps, or all of it when the page waits. */
  grantCredit(controller) {
    if (this.streamFinished || !this.exchange) return;
    const queued = FLOW_WINDOW_BYTES - (controller.desiredSize || 0);
    const due = this.enqueued - queued - this.granted;
    if (due >= FLOW_GRANT_BYTES || (due > 0 && queued <= 0)) {
      this.granted += due;
      this.context.client.sendCredit(this.exchange, due);
    }
  }

  onChunk(chunk, end) {
    if (!this.controller || this.streamFinished) return;
    // A copy, so the consumer never sees the frame header through chunk.buffer.
    if (chunk.byteLength) {
      this.enqueued += chunk.byteLength;
      this.controller.enqueue(chunk.slice());
    }
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
    if (!this.streamFinished) this.failBody(failure);
  }
}

export function createFetch(context) {
  function callNative(input, init) {
    if (!context.nativeFetch) return Promise.reject(new TypeError("bridge-js: this page has no native fetch"));
    return context.nativeFetch.call(global, input, init);
  }

  function requestUrlOf(input) {
    return absoluteUrl(isRequest(input) ? input.url : input);
  }

  /** Always through the broker when the URL allows it (http(s), not the broker's own origin). */
  function bridgedFetch(input, init) {
    return bridged(input, init, requestUrlOf(input));
  }

  /** bridgedFetch of `input`, whose URL the caller has parsed (`url`): once per fetch() is enough. */
  async function bridged(input, init, url) {
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
    return bridged(input, init, url);
  }

  return { bridgedFetch, fetch };
}
