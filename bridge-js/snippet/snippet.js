// The bootstrap snippet: an inline script a page puts in its <head> right before the shim's
// <script src=".../bridge.js">, so that the WebSocket to the broker opens while the shim downloads
// and compiles instead of after. It opens the socket the shim would open (the same URL, token and
// subprotocol, binaryType "arraybuffer") and keeps every event that arrives before the shim runs;
// the shim adopts that socket and replays the events in order (src/snippet.js), or closes it and
// connects as it would without the snippet. bridge-js/tools/build.py minifies this file into
// bridge-js/bridge-snippet.js (the exact text of the inline script, whose SHA-256 a page's CSP
// lists) and bridge-js/bridge-snippet.html (the tag to copy).
//
// Settings are the tag's own attributes, as on the shim's tag: data-broker-url (default
// ws://127.0.0.1:8787; http(s) becomes ws(s), a bare origin gets /bridge) and data-token. Attributes
// are not part of the script's text, so the CSP hash is the same for every page.
// The names are one letter because this text is copied into every page: d the document, s this
// script element, u the socket's URL, t the token, w the WebSocket, q the events it got so far, k
// the property it leaves them in for the shim.
(function (d, s, u, t, w, q, k) {
  k = Symbol.for("bridge-broker.snippet");
  // A shim already running (a WebKit host injects it at document start) or an earlier copy of the
  // snippet: there is nothing to open, and no socket would be left without an owner.
  if (window.BridgeBroker || window[k]) return;
  s = d.currentScript;
  u = new URL(s.getAttribute("data-broker-url") || "ws://127.0.0.1:8787", d.baseURI);
  u.protocol = u.protocol.replace("http", "ws"); // http: and https: become ws: and wss:
  if (u.pathname == "/") u.pathname = "/bridge";
  if ((t = s.getAttribute("data-token"))) u.searchParams.set("token", t);
  w = new WebSocket(u.href, "bridge.v1");
  w.binaryType = "arraybuffer";
  q = [];
  w.onopen = w.onmessage = w.onerror = w.onclose = function (e) {
    q.push(e);
  };
  window[k] = { socket: w, events: q };
})(document);
