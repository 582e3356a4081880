// One early request over HTTP (docs/PROTOCOL.md, "Early posts over HTTP"): its lines, sent in a
// POST to the broker's early endpoint (the page's own XMLHttpRequest or fetch), and its answer's
// frames read as messages. The shim's early posts (early.js) and the page's preloaded responses
// (preloaded.js) send theirs through it.

import { decodeUtf8, viewBytes } from "./bytes.js";
import {
  EARLY_ANSWER_TIMEOUT_MS, EARLY_FRAME_BINARY, EARLY_FRAME_HEADER_BYTES, EARLY_FRAME_TEXT, EARLY_PATH, FRAME_KIND_BATCH, FRAME_KIND_BODY,
  FRAME_KIND_WHOLE,
} from "./constants.js";
import { decodeFrame, eachBatchFrame, postText, wholeHead } from "./posts.js";
import { absoluteUrl, httpOriginOfSocket, withToken } from "./urls.js";

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
 * An early request's sender through the page's own XMLHttpRequest (`NativeXHR`): the same POST of
 * text without credentials as through fetch(), which in Chromium costs the page's main thread 3.5
 * to 4.6 ms for a document's first fetch() against 1.0 to 1.6 for its first XMLHttpRequest
 * (docs/BENCHMARKS.md, "The boot script"). Resolves with what askEarly reads of a Response: its
 * status and its body's bytes; rejects on a network failure, as fetch() does.
 */
export function xhrPoster(NativeXHR) {
  return (url, init) => new Promise((resolve, reject) => {
    const request = new NativeXHR();
    request.open(init.method, url);
    request.responseType = "arraybuffer";
    request.withCredentials = init.credentials === "include";
    request.onload = () => resolve({ status: request.status, arrayBuffer: () => Promise.resolve(request.response) });
    request.onerror = request.ontimeout = request.onabort = () => reject(new TypeError("bridge-js: the early request failed"));
    request.send(init.body);
  });
}
