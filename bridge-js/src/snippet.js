// The bootstrap snippet's socket (bridge-js/snippet/snippet.js): a page's inline script opened the
// WebSocket before the shim arrived and kept the events it got; the shim adopts it when it is the
// socket it would open itself, or closes it.

import { global } from "./env.js";

const SNIPPET_KEY = Symbol.for("bridge-broker.snippet");

/** The snippet's `{socket, events}`, taken from the page (once: a second call finds nothing), or null. */
export function takeSnippet() {
  const snippet = global[SNIPPET_KEY];
  if (snippet === undefined) return null;
  delete global[SNIPPET_KEY];
  const socket = snippet && snippet.socket;
  return socket && typeof socket.close === "function" && Array.isArray(snippet.events) ? snippet : null;
}

/**
 * Whether the shim may carry on with the snippet's socket instead of opening `url`: the same URL,
 * not closing or closed, and no error or close among the events it kept (a socket that failed falls
 * back to the shim's own connect and its backoff).
 */
export function snippetAdoptable(snippet, url) {
  const socket = snippet.socket;
  return socket.url === url && (socket.readyState === 0 || socket.readyState === 1) &&
    !snippet.events.some((event) => !event || (event.type !== "open" && event.type !== "message"));
}

/** Closes a snippet's socket the shim does not adopt; nothing it got or gets reaches the page. */
export function discardSnippet(snippet) {
  const socket = snippet.socket;
  socket.onopen = socket.onmessage = socket.onerror = socket.onclose = null;
  snippet.events.length = 0;
  try {
    socket.close(1000, "bridge-js did not adopt the snippet's socket");
  } catch (_) {
    // A socket that is already closing is gone either way.
  }
}
