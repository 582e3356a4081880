// The recorders' pieces for early requests (POST /bridge/early), filled into pages as
// {{EARLY_FRAMES}}: watchEarlyRequests, and the frames of an answer, each as {kind, first} (its kind
// and its first byte), a text frame's envelope added through describe(envelope).
function earlyFrames(buffer, describe) {
  const bytes = new Uint8Array(buffer);
  const frames = [];
  for (let at = 0; at + 5 <= bytes.length; ) {
    const length = new DataView(buffer, at + 1, 4).getUint32(0);
    const frame = {kind: bytes[at], first: bytes[at + 5]};
    if (frame.kind === 1) Object.assign(frame, describe(JSON.parse(new TextDecoder().decode(bytes.subarray(at + 5, at + 5 + length)))));
    frames.push(frame);
    at += 5 + length;
  }
  return frames;
}

// Stands in front of the browser's fetch and XMLHttpRequest before the shim saves them (the shim
// sends its early requests through XMLHttpRequest, or fetch where a page has none): calls
// take(body, answered) for each early request, `answered` a promise of {status, buffer}.
function watchEarlyRequests(take) {
  const browserFetch = window.fetch;
  window.fetch = function (input, init) {
    const promise = browserFetch.call(this, input, init);
    if (String(input).includes("/bridge/early")) {
      take(String(init.body), promise.then((response) => response.clone().arrayBuffer().then((buffer) => ({status: response.status, buffer}))));
    }
    return promise;
  };
  const open = XMLHttpRequest.prototype.open;
  const send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.open = function (method, url) {
    this.earlyUrl = String(url);
    return open.apply(this, arguments);
  };
  XMLHttpRequest.prototype.send = function (body) {
    if (this.earlyUrl && this.earlyUrl.includes("/bridge/early")) {
      take(String(body), new Promise((resolve) => this.addEventListener("loadend", () => {
        resolve({status: this.status, buffer: this.response instanceof ArrayBuffer ? this.response : new ArrayBuffer(0)});
      })));
    }
    return send.apply(this, arguments);
  };
}
