// Early posts over HTTP: the page's first fetches, queued while the WebSocket to the broker is still
// opening (15 to 20 ms in Chromium), also go at once in one native POST to /bridge/early, asking
// for a fresh stored response only (cache "fresh-only"). Those the broker has fresh are served from
// that POST's answer; the others wait in the queue and go over the WebSocket in their turn.

import { utf8ByteLength } from "./bytes.js";
import { EARLY_FIRST_ID, EARLY_MAX_BYTES, EARLY_MAX_FETCHES } from "./constants.js";
import { askEarly, greetingLines, readAnswer } from "./early-request.js";
import { BridgeError } from "./errors.js";
import { postText } from "./posts.js";
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
