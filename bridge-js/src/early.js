// Early posts over HTTP: the page's first fetches, queued while the WebSocket to the broker is still
// opening (15 to 20 ms in Chromium), also go at once in one native POST to /bridge/early, asking
// for a fresh stored response only (cache "fresh-only"). Those the broker has fresh are served from
// that POST's answer; the others wait in the queue and go over the WebSocket in their turn.

import { decodeUtf8, utf8ByteLength, viewBytes } from "./bytes.js";
import {
  EARLY_ANSWER_TIMEOUT_MS, EARLY_FIRST_ID, EARLY_FRAME_BINARY, EARLY_FRAME_HEADER_BYTES, EARLY_FRAME_TEXT, EARLY_MAX_BYTES,
  EARLY_MAX_FETCHES, EARLY_PATH, FRAME_KIND_BATCH, FRAME_KIND_BODY, FRAME_KIND_WHOLE,
} from "./constants.js";
import { BridgeError } from "./errors.js";
import { decodeFrame, eachBatchFrame, postText, wholeHead } from "./posts.js";
import { absoluteUrl, httpOriginOfSocket, withToken } from "./urls.js";
import { soon } from "./util.js";

/**
 * A client's early posts. An exchange it holds stays in the client's queue, where flushQueue skips
 * it, until the answer serves it or releases it to the WebSocket.
 */
export class EarlyPosts {
  constructor(client) {
    this.client = client;
    // Early ids are the page's own sequence, apart from the WebSocket's, which restart per connection.
    this.nextId = EARLY_FIRST_ID;
    // The batch the current task's fetches join; one POST carries it, a microtask after the first.
    this.gathering = null;
  }

  hold(exchange) {
    let batch = this.gathering;
    if (!batch) {
      batch = this.gathering = { exchanges: [], ids: new Map() };
      soon(() => this.send(batch));
    }
    exchange.held = batch;
    batch.exchanges.push(exchange);
  }

  send(batch) {
    if (this.gathering === batch) this.gathering = null;
    const client = this.client;
    // The socket may have opened meanwhile, or the WebKit bridge appeared: then the queue takes them all.
    const text = client.earlyFetch && !client.transportOpen && !client.useWebKit() ? this.encode(batch) : null;
    if (text === null) this.release(batch);
    else this.post(batch, text);
  }

  /** The request body: the greeting, then one line per held fetch while the broker's limits allow. */
  encode(batch) {
    const lines = greetingLines(this.client);
    let bytes = lines.length ? utf8ByteLength(lines[0]) : 0;
    let full = false;
    for (const exchange of batch.exchanges) {
      if (exchange.held !== batch || exchange.settled) continue;
      full = full || batch.ids.size >= EARLY_MAX_FETCHES;
      const line = full ? "" : fetchLine(exchange, this.nextId);
      const size = utf8ByteLength(line) + 1;
      full = full || bytes + size > EARLY_MAX_BYTES;
      // From the first that does not fit on, they go over the WebSocket alone.
      if (full) {
        exchange.held = null;
        continue;
      }
      lines.push(line);
      bytes += size;
      batch.ids.set(this.nextId++, exchange);
    }
    return batch.ids.size ? lines.join("\n") : null;
  }

  /** Reserves `count` ids of the page's early sequence (push.js takes its request's ids here too). */
  takeIds(count) {
    const first = this.nextId;
    this.nextId += count;
    return first;
  }

  async post(batch, text) {
    await askEarly(this.client, text, (bytes) => this.answer(batch, bytes), () => this.release(batch));
    this.release(batch);
  }

  /**
   * Serves the exchanges whose answer ends well (an ok reply or a whole response): each is in flight
   * under its early id for the client's own handlers to take its frames, as from the WebSocket.
   * Only the complete answer tells which those are; the others get nothing and are released.
   */
  answer(batch, bytes) {
    const client = this.client;
    const messages = readAnswer(bytes);
    if (!messages) {
      client.report(new BridgeError("bad_message", "bridge-js received a malformed answer to its early posts"));
      return;
    }
    const finals = new Map();
    for (const message of messages) if (message.final && !finals.has(message.id)) finals.set(message.id, message.ok);
    const served = new Set();
    for (const [id, exchange] of batch.ids) {
      // An exchange aborted or settled meanwhile is gone; its answer is ignored.
      if (exchange.held !== batch || exchange.settled || finals.get(id) !== true) continue;
      exchange.held = null;
      client.removeFromQueue(exchange);
      exchange.state = "sent";
      exchange.id = id;
      client.pending.set(id, exchange);
      served.add(id);
    }
    for (const message of messages) deliver(client, message, served);
  }

  /** Gives the exchanges still held by `batch` back to the queue, which sends them in their turn. */
  release(batch) {
    let released = false;
    for (const exchange of batch.exchanges) {
      if (exchange.held !== batch) continue;
      exchange.held = null;
      released = true;
    }
    if (released) this.client.flushQueue();
  }
}

/** The first lines of an early request: the client's greeting (`page.identity`), if it has one. */
export function greetingLines(client) {
  const greeting = client.greeting ? client.greeting() : null;
  return greeting ? [postText(greeting.name, null, JSON.stringify(greeting.body))] : [];
}

/**
 * Sends `text`, an early request's lines, and hands a 200's answer to `take(bytes)`; `stuck()` runs
 * if none came within EARLY_ANSWER_TIMEOUT_MS, so that a stuck request does not keep the page's
 * requests from their usual way. Never throws: after a network failure the caller's requests go
 * their usual way, and a broker without the endpoint (404, 405) turns early requests off for the page.
 */
export async function askEarly(client, text, take, stuck) {
  const timer = setTimeout(stuck, EARLY_ANSWER_TIMEOUT_MS);
  try {
    const response = await requestEarly(client, text);
    if (response.status === 200) take(viewBytes(await response.arrayBuffer()));
    else if (response.status === 404 || response.status === 405) client.earlyFetch = null;
  } catch (_) {
    // A network failure.
  } finally {
    clearTimeout(timer);
  }
}

/** One early request: `text`, its lines, in a native POST to the broker's early endpoint (with the token). */
function requestEarly(client, text) {
  const socket = absoluteUrl(client.url);
  const url = withToken(httpOriginOfSocket(client.url) + EARLY_PATH, client.token || (socket && socket.searchParams.get("token")));
  // A CORS simple request (fetch's default mode; a string body is text/plain;charset=UTF-8 by the
  // Fetch standard; no credentials): no preflight before it. Only what differs from the defaults
  // is given: every member of the init costs the page's main thread at its start (docs/BENCHMARKS.md).
  return client.earlyFetch(url, { method: "POST", body: text, credentials: "omit" });
}

/**
 * A fetch post's line: its body asks for a fresh stored response only, with no batch or window (one
 * answer, no credit) and no group: the early request is a connection of its own, whose group
 * progress would stand beside the socket's; the page counts the request itself (progress.js).
 */
function fetchLine(exchange, id) {
  const body = Object.assign({}, exchange.spec.body, { cache: "fresh-only" });
  delete body.batch;
  delete body.window;
  delete body.group;
  return postText(exchange.spec.name, id, JSON.stringify(body));
}

/** The answer's frames as messages ({id, envelope} or {id, frame, head}, `final` for a post's last), or null when malformed. */
export function readAnswer(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const messages = [];
  for (let at = 0; at < bytes.byteLength; ) {
    const begin = at + EARLY_FRAME_HEADER_BYTES;
    const end = begin <= bytes.byteLength ? begin + view.getUint32(at + 1) : Infinity;
    if (end > bytes.byteLength) return null;
    const data = bytes.subarray(begin, end);
    const kind = bytes[at];
    if (!(kind === EARLY_FRAME_TEXT ? readEnvelope(data, messages) : kind === EARLY_FRAME_BINARY && readBinary(data, messages))) return null;
    at = end;
  }
  return messages;
}

function readEnvelope(data, messages) {
  let envelope;
  try {
    envelope = JSON.parse(decodeUtf8(data));
  } catch (_) {
    return false;
  }
  if (!envelope || typeof envelope !== "object") return false;
  const final = envelope.type === "reply";
  messages.push({ id: envelope.id, envelope, final, ok: final && envelope.ok === true });
  return true;
}

function readBinary(data, messages) {
  const frame = decodeFrame(data);
  if (frame && frame.kind === FRAME_KIND_BODY) {
    messages.push({ id: frame.id, frame });
    return true;
  }
  if (frame && frame.kind === FRAME_KIND_WHOLE) return readWhole(frame, messages);
  let good = Boolean(frame) && frame.kind === FRAME_KIND_BATCH;
  return good && eachBatchFrame(frame.payload, (item) => (good = readWhole(item, messages) && good)) && good;
}

/** A whole response ends its post well; one whose head is not a JSON object makes the answer malformed. */
function readWhole(frame, messages) {
  const head = wholeHead(frame);
  if (head) messages.push({ id: frame.id, frame, head, final: true, ok: true });
  return head !== null;
}

/**
 * One message of the answer through the client's handlers, if it is a served post's. Nothing else
 * goes to the page: events without an id belong to the early request's own connection, and an
 * `error` frame can only be the greeting's (every fetch line has an id), which the WebSocket's own
 * greeting reports.
 */
function deliver(client, message, served) {
  const envelope = message.envelope;
  if (!envelope) {
    if (!served.has(message.id)) return;
    if (message.head) client.onWhole(message.frame, message.head);
    else client.onFrame(message.frame);
  } else if (envelope.type === "event" && served.has(message.id)) client.onEvent(envelope);
  else if (envelope.type === "reply" && served.has(message.id)) client.onReply(envelope);
}
