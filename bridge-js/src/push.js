// The page's preloaded responses, pushed at document start: with early posts on, the shim sends one
// early request as soon as it has created its WebSocket, asking for the resources a `preload` of
// this page stored (`page.preloaded`, docs/PROTOCOL.md). The page's later fetch() calls that ask for
// one of them as fetch(url) with no init would are served from that answer, without a post over the
// socket; the resources arrive while the page still parses.

import { concatBytes } from "./bytes.js";
import { EARLY_MAX_FETCHES } from "./constants.js";
import { EarlyPosts, askEarly, greetingLines, readAnswer } from "./early.js";
import { global } from "./env.js";
import { BridgeError } from "./errors.js";
import { postText } from "./posts.js";
import { absoluteUrl } from "./urls.js";
import { hasOwn, soon } from "./util.js";

// What differs between two requests for two URLs of one page and does not choose the response the
// broker stored: the page's fetches are compared with the template without them.
const PER_REQUEST_FIELDS = ["url", "documentCookie", "group", "batch", "window"];

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
    const location = global.location;
    const body = client.earlyFetch ? this.defaultBody() : null;
    if (!body || !location) return;
    const template = withoutPerRequestFields(body);
    delete template.cache;
    if (!client.earlyPosts) client.earlyPosts = new EarlyPosts(client);
    // The fetches' ids follow the request's own: an early request is a connection of its own, and
    // the page's early ids never meet in the client's posts in flight.
    const id = client.earlyPosts.takeIds(1 + EARLY_MAX_FETCHES);
    const lines = greetingLines(client);
    lines.push(postText("page.preloaded", id, JSON.stringify({ page: location.href, firstId: id + 1, fetch: template })));
    this.template = template;
    this.state = "waiting";
    this.request(lines.join("\n"), id);
  }

  async request(text, id) {
    let entries = null;
    await askEarly(this.client, text, (bytes) => (entries = this.read(bytes, id)), () => this.answered(null));
    this.answered(entries);
  }

  /**
   * The answer's complete responses by resource URL (completeResponses), or null when it serves
   * nothing. A response with a `vary` header is left out: the broker chose it without the page's
   * document cookie.
   */
  read(bytes, id) {
    const messages = readAnswer(bytes);
    const reply = messages && messages.find((message) => message.envelope && message.envelope.type === "reply" && message.id === id);
    const urls = reply && reply.ok && reply.envelope.body ? reply.envelope.body.urls : null;
    if (!reply || (reply.ok && !Array.isArray(urls))) {
      this.client.report(new BridgeError("bad_message", "bridge-js received a malformed answer to its page.preloaded request"));
      return null;
    }
    if (!reply.ok) return null; // An older broker, without the handler.
    const responses = completeResponses(messages);
    const entries = new Map();
    urls.slice(0, EARLY_MAX_FETCHES).forEach((url, index) => {
      const response = responses.get(id + 1 + index);
      const key = urlKey(url);
      if (response && !hasVary(response.head) && !entries.has(key)) entries.set(key, response);
    });
    return entries;
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
 * The answer's complete responses by post id, each as a whole response ({frame: {id, payload},
 * head}): its whole-response frames, and the responses that came as a stream (the broker had their
 * bodies on disk, not in memory: after a restart, or once its memory tier let them go), each joined
 * from its binary body frames, the last one ended, and its ok reply (the head a whole frame stands
 * for), when the reply counts as many bytes as came. A failed post, a stream cut short and any other
 * body encoding are left out: those fetches go their usual way.
 */
function completeResponses(messages) {
  const streams = new Map();
  const responses = new Map();
  const done = new Set();
  for (const message of messages) {
    if (done.has(message.id)) continue;
    if (message.head) {
      done.add(message.id);
      responses.set(message.id, message);
    } else if (message.frame) {
      const stream = streams.get(message.id) || { chunks: [], bytes: 0, ended: false, broken: false };
      stream.broken = stream.broken || stream.ended;
      stream.chunks.push(message.frame.payload);
      stream.bytes += message.frame.payload.byteLength;
      stream.ended = message.frame.end;
      streams.set(message.id, stream);
    } else if (message.final) {
      done.add(message.id);
      const head = message.ok ? message.envelope.body : null;
      const stream = streams.get(message.id) || { chunks: [], bytes: 0, ended: true, broken: false };
      if (!head || typeof head !== "object" || head.bodyEncoding !== "binary" || !stream.ended || stream.broken) continue;
      if (typeof head.bodyBytes === "number" && head.bodyBytes !== stream.bytes) continue;
      responses.set(message.id, { frame: { id: message.id, payload: concatBytes(stream.chunks, stream.bytes) }, head });
    }
  }
  return responses;
}

function withoutPerRequestFields(body) {
  const rest = Object.assign({}, body);
  for (const name of PER_REQUEST_FIELDS) delete rest[name];
  return rest;
}

function urlKey(url) {
  const parsed = absoluteUrl(url);
  return parsed ? parsed.href : String(url);
}

function hasVary(head) {
  const headers = head.headers;
  const names = Array.isArray(headers) ? headers.map((pair) => (Array.isArray(pair) ? pair[0] : "")) : Object.keys(headers || {});
  return names.some((name) => String(name).toLowerCase() === "vary");
}

/** Whether two JSON values are equal, objects key by key in any order. */
function sameJson(a, b) {
  if (a === b) return true;
  if (!a || !b || typeof a !== "object" || typeof b !== "object" || Array.isArray(a) !== Array.isArray(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => hasOwn(b, key) && sameJson(a[key], b[key]));
}
