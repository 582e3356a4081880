// The page's preloaded responses, pushed at document start: with early posts on, the shim sends one
// early request as soon as it has created its WebSocket, asking for the resources a `preload` of
// this page stored (`page.preloaded`, docs/PROTOCOL.md). The page's later fetch() calls that ask for
// one of them as fetch(url) with no init would are served from that answer, without a post over the
// socket; the resources arrive while the page still parses.

import { EARLY_MAX_FETCHES } from "./constants.js";
import { EarlyPosts } from "./early.js";
import { requestPreloaded, urlKey, withoutPerRequestFields } from "./preloaded.js";
import { hasOwn, soon } from "./util.js";

/**
 * The answer to the page's `page.preloaded` request: complete responses by URL, each served once. A
 * fetch that may be one of them waits for the answer in the client's queue (held, as early.js
 * holds its fetches), then is served from it or goes its usual way.
 */
export class PreloadedResponses {
  /** `defaultBody()` is the fetch post of fetch(pageUrl) with no init (fetch.js), or null. */
  constructor(client, defaultBody) {
    this.client = client;
    this.defaultBody = defaultBody;
    this.state = "idle"; // idle, waiting (for the answer), answered; "off" when it never went
    this.template = null;
    this.entries = new Map();
    this.held = [];
  }

  /** Sends the request, once per page, from the client's first WebSocket connection. */
  start() {
    if (this.state !== "idle") return;
    this.state = "off";
    const client = this.client;
    const request = client.earlyFetch ? requestPreloaded(client, this.defaultBody, reserveIds(client)) : null;
    if (request) this.follow(request);
  }

  /**
   * Takes over the request the boot script sent at document start (boot.js) instead of sending one:
   * its ids are reserved, and the page's fetches are held for its answer, whose entries the boot
   * script and the shim serve from together (each once).
   */
  adopt(request) {
    if (this.state !== "idle") return;
    reserveIds(this.client);
    this.follow(request);
  }

  follow(request) {
    this.template = request.template;
    this.state = "waiting";
    request.answer.then((entries) => this.answered(entries));
  }

  answered(entries) {
    if (this.state !== "waiting") return; // A late answer, after the timeout: the fetches went on.
    this.state = "answered";
    this.entries = entries || new Map();
    this.settle();
  }

  /**
   * Whether `exchange` (a fetch() GET, client.exchange) waits for this answer: while it is awaited,
   * a fetch asking what the template asks; once it is here, one with a response in it.
   */
  claim(exchange) {
    if (this.state !== "waiting" && this.state !== "answered") return false;
    const body = exchange.spec.body;
    if (!sameJson(withoutPerRequestFields(body), this.template)) return false;
    if (this.state === "answered" && !this.entries.has(urlKey(body.url))) return false;
    exchange.held = this;
    this.held.push(exchange);
    // Served from a microtask, as from an answer: the caller is still setting the fetch up.
    if (this.state === "answered") soon(() => this.settle());
    return true;
  }

  /** Serves each held fetch from the answer, through the client's own path for whole responses, or lets it go on. */
  settle() {
    const client = this.client;
    for (const exchange of this.held.splice(0)) {
      // Aborted meanwhile: rejected already, and never served.
      if (exchange.held !== this || exchange.settled) continue;
      exchange.held = null;
      const key = urlKey(exchange.spec.body.url);
      const whole = this.entries.get(key);
      if (!whole) {
        if (client.finishBody(exchange)) client.holdEarly(exchange);
        continue;
      }
      this.entries.delete(key);
      client.removeFromQueue(exchange);
      exchange.state = "sent";
      exchange.id = whole.frame.id;
      client.pending.set(exchange.id, exchange);
      client.onWhole(whole.frame, whole.head, false);
    }
    client.flushQueue();
  }
}

/**
 * Reserves the ids of a page.preloaded request in the page's early sequence: the request's own and
 * its fetches' after it (an early request is a connection of its own, and the page's early ids
 * never meet in the client's posts in flight). The first ones, EARLY_FIRST_ID on, in the boot
 * script and in the shim alike.
 */
function reserveIds(client) {
  if (!client.earlyPosts) client.earlyPosts = new EarlyPosts(client);
  return client.earlyPosts.takeIds(1 + EARLY_MAX_FETCHES);
}

/** Whether two JSON values are equal, objects key by key in any order. */
function sameJson(a, b) {
  if (a === b) return true;
  if (!a || !b || typeof a !== "object" || typeof b !== "object" || Array.isArray(a) !== Array.isArray(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => hasOwn(b, key) && sameJson(a[key], b[key]));
}
