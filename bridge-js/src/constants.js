// The shim's fixed values: the protocol's (docs/PROTOCOL.md) and its own defaults.

// Marks the shim's own objects: BridgeBroker (the double-include guard) and the messageHandlers polyfill.
export const MARKER = Symbol.for("bridge-broker.shim");
export const VERSION = "0.1.0";
export const SUBPROTOCOL = "bridge.v1";
export const DEFAULT_BROKER_URL = "ws://127.0.0.1:8787/bridge";
export const FRAME_HEADER_BYTES = 10;
export const FRAME_KIND_BODY = 0x01;
// A whole response (docs/PROTOCOL.md): the reply's head and the whole body in one binary frame,
// which a fetch asks for with `whole`, the largest body it takes that way.
export const FRAME_KIND_WHOLE = 0x02;
export const WHOLE_HEAD_LENGTH_BYTES = 4;
export const WHOLE_RESPONSE_BYTES = 256 * 1024;
// A batch (docs/PROTOCOL.md): several whole-response frames of posts that asked with `batch` in one
// message, each after its length.
export const FRAME_KIND_BATCH = 0x03;
export const BATCH_LENGTH_BYTES = 4;
export const FRAME_FLAG_END = 0x01;
export const TWO_POW_32 = 4294967296;
export const UPLOAD_CHUNK_BYTES = 256 * 1024;
// Above this much unsent data the upload waits, so a 1 GiB Blob is never copied into the socket at once.
export const UPLOAD_HIGH_WATER_BYTES = 4 * 1024 * 1024;
// A browser's fetch and XHR (timeout 0) never time out on their own; the protocol's default of 60 s
// would cut long downloads, so the shim asks for the protocol's maximum unless told otherwise.
export const DEFAULT_REQUEST_TIMEOUT_MS = 86400000;
export const DEFAULT_QUEUE_TIMEOUT_MS = 30000;
// Before the hello (which tells the real limits) the shim sends at most this many posts, each at
// most this large (the smallest --max-message-bytes the reference broker takes, where an envelope
// over the limit would close the connection; a GET's fetch post is a few hundred bytes). A post
// over the broker's maxInFlight is refused unrun and waits for its turn again.
export const EARLY_IN_FLIGHT = 32;
export const EARLY_POST_BYTES = 1024;
// Early posts over HTTP (early.js): fetches queued before the WebSocket opens also go at once in one
// POST to this path, asking for a fresh stored response only. Their ids count from 2^30, apart from
// the WebSocket's; the broker takes at most this many fetch lines and bytes in one request.
export const EARLY_PATH = "/bridge/early";
export const EARLY_FIRST_ID = 1073741824;
export const EARLY_MAX_FETCHES = 64;
export const EARLY_MAX_BYTES = 256 * 1024;
// A lookup in the broker's cache takes a few milliseconds: an answer this late frees its posts for
// the WebSocket, which they would otherwise wait for without end.
export const EARLY_ANSWER_TIMEOUT_MS = 3000;
// The boot script imports the shim within this long of an answer that served the page (boot.js).
export const SHIM_IDLE_TIMEOUT_MS = 200;
// The answer's frames: 1 byte kind (text or binary, as on a WebSocket), 4 bytes big-endian length.
export const EARLY_FRAME_TEXT = 1;
export const EARLY_FRAME_BINARY = 2;
export const EARLY_FRAME_HEADER_BYTES = 5;
export const DEFAULT_BACKOFF = { initial: 250, max: 30000, factor: 2 };
export const WEBKIT_BINARY_PREFIX = "b64:";
// Flow control (docs/PROTOCOL.md): at most this much of a fetch's response body is sent ahead of
// what the page read, so a slow reader holds a bounded amount; credit goes back in steps this big.
export const FLOW_WINDOW_BYTES = 4 * 1024 * 1024;
export const FLOW_GRANT_BYTES = 512 * 1024;
export const NULL_BODY_STATUSES = [101, 103, 204, 205, 304];
export const REDIRECT_STATUSES = [301, 302, 303, 307, 308];
export const EMPTY_BYTES = new Uint8Array(0);
