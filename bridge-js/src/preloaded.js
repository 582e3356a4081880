// The page's preloaded responses, asked for at its start (`page.preloaded`, docs/PROTOCOL.md): the
// request, sent in one early request, and its answer read into complete responses by URL. The shim
// (push.js) and the boot script (boot.js) ask and serve from them.

import { concatBytes } from "./bytes.js";
import { EARLY_MAX_FETCHES } from "./constants.js";
import { askEarly, greetingLines, readAnswer } from "./early-request.js";
import { global } from "./env.js";
import { BridgeError } from "./errors.js";
import { postText } from "./posts.js";
import { absoluteUrl } from "./urls.js";

// What differs between two requests for two URLs of one page and does not choose the response the
// broker stored: the page's fetches are compared with the template without them.
const PER_REQUEST_FIELDS = ["url", "documentCookie", "group", "batch", "window"];

/**
 * Sends the page's `page.preloaded` request (id `id`, its fetches' ids after it) in one early
 * request, the client's greeting first, and returns `{template, answer}`: the fetch post it asked
 * with, without its per-request fields, and a promise of the answer's entries (readPreloaded), null
 * when it serves nothing or did not come in time. `client` needs `url`, `token`, `earlyFetch`,
 * `report` and, for the greeting, `greeting` (the boot script passes such an object). Null on a
 * page the request cannot be for.
 */
export function requestPreloaded(client, defaultBody, id) {
  const location = global.location;
  const body = defaultBody();
  if (!body || !location) return null;
  const template = withoutPerRequestFields(body);
  delete template.cache;
  const lines = greetingLines(client);
  lines.push(postText("page.preloaded", id, JSON.stringify({ page: location.href, firstId: id + 1, fetch: template })));
  const answer = new Promise((resolve) => {
    let entries = null;
    askEarly(client, lines.join("\n"), (bytes) => (entries = readPreloaded(client, bytes, id)), () => resolve(null))
      .then(() => resolve(entries));
  });
  return { template, answer };
}

/**
 * The answer's complete responses by resource URL (completeResponses), or null when it serves
 * nothing. A response with a `vary` header is left out: the broker chose it without the page's
 * document cookie.
 */
function readPreloaded(client, bytes, id) {
  const messages = readAnswer(bytes);
  const reply = messages && messages.find((message) => message.envelope && message.envelope.type === "reply" && message.id === id);
  const urls = reply && reply.ok && reply.envelope.body ? reply.envelope.body.urls : null;
  if (!reply || (reply.ok && !Array.isArray(urls))) {
    client.report(new BridgeError("bad_message", "bridge-js received a malformed answer to its page.preloaded request"));
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

export function withoutPerRequestFields(body) {
  const rest = Object.assign({}, body);
  for (const name of PER_REQUEST_FIELDS) delete rest[name];
  return rest;
}

export function urlKey(url) {
  const parsed = absoluteUrl(url);
  return parsed ? parsed.href : String(url);
}

function hasVary(head) {
  const headers = head.headers;
  const names = Array.isArray(headers) ? headers.map((pair) => (Array.isArray(pair) ? pair[0] : "")) : Object.keys(headers || {});
  return names.some((name) => String(name).toLowerCase() === "vary");
}
