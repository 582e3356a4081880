// Posts on the wire (docs/PROTOCOL.md): a post's envelope text and the binary frames of request
// and response bodies (a post's lifecycle is exchange.js's).

import { decodeUtf8, viewBytes } from "./bytes.js";
import {
  BATCH_LENGTH_BYTES, FRAME_FLAG_END, FRAME_HEADER_BYTES, FRAME_KIND_BODY, FRAME_KIND_WHOLE, TWO_POW_32, WHOLE_HEAD_LENGTH_BYTES,
} from "./constants.js";

/** The 10-byte header of docs/PROTOCOL.md: kind, flags (END), 64-bit big-endian post id. */
export function encodeBodyFrame(id, payload, end) {
  const frame = new Uint8Array(FRAME_HEADER_BYTES + payload.byteLength);
  const view = new DataView(frame.buffer);
  view.setUint8(0, FRAME_KIND_BODY);
  view.setUint8(1, end ? FRAME_FLAG_END : 0);
  view.setUint32(2, Math.floor(id / TWO_POW_32));
  view.setUint32(6, id >>> 0);
  frame.set(payload, FRAME_HEADER_BYTES);
  return frame;
}

/**
 * A binary frame's header and payload, as views of `data` (nothing copied). A whole-response frame
 * (kind 0x02) also has `head`, the bytes of its JSON head, and its payload is the body; null for a
 * frame too short for its header.
 */
export function decodeFrame(data) {
  const bytes = viewBytes(data);
  if (bytes.byteLength < FRAME_HEADER_BYTES) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const frame = {
    kind: view.getUint8(0),
    end: (view.getUint8(1) & FRAME_FLAG_END) !== 0,
    id: view.getUint32(2) * TWO_POW_32 + view.getUint32(6),
    payload: bytes.subarray(FRAME_HEADER_BYTES),
  };
  if (frame.kind === FRAME_KIND_WHOLE) {
    const headStart = FRAME_HEADER_BYTES + WHOLE_HEAD_LENGTH_BYTES;
    if (bytes.byteLength < headStart) return null;
    const headEnd = headStart + view.getUint32(FRAME_HEADER_BYTES);
    if (headEnd > bytes.byteLength) return null;
    frame.head = bytes.subarray(headStart, headEnd);
    frame.payload = bytes.subarray(headEnd);
  }
  return frame;
}

/** A whole-response frame's head (the reply body it stands for), or null when it is not a JSON object. */
export function wholeHead(frame) {
  try {
    const head = JSON.parse(decodeUtf8(frame.head));
    return head && typeof head === "object" ? head : null;
  } catch (_) {
    return null;
  }
}

/**
 * Calls `take(frame)` for each whole-response frame of a batch's payload (kind 0x03), in order;
 * false, after the frames before it, at one that is malformed or of another kind.
 */
export function eachBatchFrame(bytes, take) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let at = 0; at < bytes.byteLength; ) {
    const length = at + BATCH_LENGTH_BYTES <= bytes.byteLength ? view.getUint32(at) : -1;
    const begin = at + BATCH_LENGTH_BYTES;
    const frame = length >= 0 && begin + length <= bytes.byteLength ? decodeFrame(bytes.subarray(begin, begin + length)) : null;
    if (!frame || frame.kind !== FRAME_KIND_WHOLE) return false;
    take(frame);
    at = begin + length;
  }
  return true;
}

export function envelopeText(exchange) {
  return postText(exchange.spec.name, exchange.expectsReply ? exchange.id : null, exchange.bodyJson);
}

/** A post envelope's text: `id` null for one that wants no reply, `bodyJson` undefined for none. */
export function postText(name, id, bodyJson) {
  let text = `{"type":"post","name":${JSON.stringify(name)}`;
  if (id !== null) text += `,"id":${id}`;
  if (bodyJson !== undefined) text += `,"body":${bodyJson}`;
  return `${text}}`;
}
