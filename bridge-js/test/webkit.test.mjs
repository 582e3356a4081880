import { test } from "node:test";
import assert from "node:assert/strict";
import { loadBridge, waitFor, tick, encodeFrame, decodeFrame } from "../test-support/helpers.mjs";

const HELLO = {
  type: "hello",
  protocol: 1,
  broker: "host-app 1.0",
  handlers: ["fetch", "share"],
  limits: { maxMessageBytes: 1048576, maxInFlight: 16, binaryChunkBytes: 65536 },
};

test("outside WKWebView, window.webkit.messageHandlers.<any name>.postMessage posts to the broker", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const handlers = window.webkit.messageHandlers;
  assert.equal(handlers.share, handlers.share, "one handler object per name");
  assert.equal("whatever" in handlers, true);
  const reply = handlers.share.postMessage({ title: "Hi" });
  assert.ok(reply instanceof Promise);
  const post = await ws.nextPost("share");
  assert.deepEqual(post.body, { title: "Hi" });
  ws.reply(post.id, { shared: true });
  assert.deepEqual(await reply, { shared: true });

  const failing = handlers.missing.postMessage(1);
  const failed = await ws.nextPost("missing");
  ws.fail(failed.id, "unknown_handler");
  await assert.rejects(failing, { code: "unknown_handler" });
  assert.equal(handlers.then, handlers.then, "a property named then is a handler, not a function");
  assert.notEqual(typeof handlers.then, "function", "so awaiting messageHandlers does not hang");
});

test("data-message-handlers=false leaves window.webkit alone", () => {
  loadBridge({ attributes: { "data-message-handlers": "false" } });
  assert.equal(window.webkit, undefined);
});

test("inside a WKWebView without a bridge handler the real handlers stay and the WebSocket is used", async () => {
  const native = { postMessage() {} };
  const webkit = { messageHandlers: { native } };
  const env = loadBridge({ webkit });
  const ws = await env.open();
  assert.equal(window.webkit, webkit);
  assert.equal(window.webkit.messageHandlers.native, native);
  assert.equal(env.bridge.transport, "websocket");
  assert.ok(ws);
});

function webkitHost() {
  const sent = [];
  const webkit = {
    messageHandlers: {
      bridge: { postMessage: (message) => sent.push(message) },
      other: { postMessage() {} },
    },
  };
  return {
    webkit,
    sent,
    texts: () => sent.filter((message) => !message.startsWith("b64:")).map((message) => JSON.parse(message)),
    frames: () => sent.filter((message) => message.startsWith("b64:")).map((message) => decodeFrame(new Uint8Array(Buffer.from(message.slice(4), "base64")))),
    receive: (frame) => globalThis.__bridgeBrokerReceive(frame),
  };
}

test("with a real bridge handler, envelopes travel through WKWebView instead of a WebSocket", async () => {
  const host = webkitHost();
  const env = loadBridge({ webkit: host.webkit });
  await tick();
  assert.equal(env.sockets.length, 0, "no WebSocket inside WKWebView");
  assert.equal(window.webkit, host.webkit, "the real handlers are not replaced");
  // top and origin let a host serving several frames tell them apart (node has no window.top).
  assert.deepEqual(host.texts(), [{ type: "open", protocol: "bridge.v1", top: false, origin: new URL(window.location.href).origin }]);

  const early = env.bridge.post("share", { n: 1 });
  host.receive(JSON.stringify(HELLO));
  assert.deepEqual(await env.bridge.ready, HELLO);
  assert.equal(env.bridge.transport, "webkit");
  await waitFor(() => host.texts().length === 3, "page.identity and the queued post");
  assert.deepEqual(host.texts()[1], {
    type: "post",
    name: "page.identity",
    id: 1,
    body: { url: "http://page.test/app/index.html", userAgent: "FakeBrowser/1.0 (bridge-js tests)", languages: ["en-US", "en", "de"] },
  }, "the host has no handshake: page.identity, after its hello, is the only way it learns who the page is");
  assert.deepEqual(host.texts()[2], { type: "post", name: "share", id: 2, body: { n: 1 } });
  assert.equal(typeof host.sent[1], "string", "envelopes are JSON strings");

  // The host may hand over a JSON string or a plain object.
  host.receive({ type: "reply", id: 1, ok: true, body: {} });
  host.receive({ type: "reply", id: 2, ok: true, body: "shared" });
  assert.equal(await early, "shared");
});

test("WKWebView transport: request bodies go out as b64: frames, response bodies come back as ArrayBuffer or b64:", async () => {
  const host = webkitHost();
  const env = loadBridge({ webkit: host.webkit });
  await tick();
  host.receive(JSON.stringify(HELLO));
  await env.bridge.ready;

  const pending = fetch("http://127.0.0.1:8787/api", { method: "POST", body: "payload" });
  const post = await waitFor(() => host.texts().find((message) => message.name === "fetch"), "the fetch post");
  assert.equal(post.body.url, "http://127.0.0.1:8787/api", "no broker origin to skip inside WKWebView");
  assert.deepEqual(post.body.body, { binary: true, length: 7 });
  await waitFor(() => host.frames().length === 1, "the body frame");
  const [frame] = host.frames();
  assert.equal(frame.kind, 1);
  assert.equal(frame.end, true);
  assert.equal(frame.id, post.id);
  assert.equal(Buffer.from(frame.payload).toString(), "payload");

  host.receive(JSON.stringify({ type: "event", id: post.id, name: "response", body: { status: 200, statusText: "OK", headers: [["content-type", "text/plain"]], url: "http://127.0.0.1:8787/api" } }));
  const response = await pending;
  host.receive(encodeFrame(post.id, "from ").buffer);
  host.receive(`b64:${Buffer.from(encodeFrame(post.id, "host", true)).toString("base64")}`);
  host.receive({ type: "reply", id: post.id, ok: true, body: { status: 200, bodyEncoding: "binary", body: null } });
  assert.equal(await response.text(), "from host");
});

test("WKWebView transport: __bridgeBrokerClose fails posts in flight and the shim announces itself again", async () => {
  const host = webkitHost();
  const env = loadBridge({ webkit: host.webkit });
  await tick();
  env.bridge.connect({ backoff: { initial: 5, max: 10 } });
  host.receive(JSON.stringify(HELLO));
  await env.bridge.ready;
  const reply = env.bridge.post("share", {});
  await waitFor(() => host.texts().some((message) => message.type === "post"), "the post");
  globalThis.__bridgeBrokerClose(1001, "host reloaded");
  await assert.rejects(reply, (error) => error.code === "network" && /host reloaded/.test(error.message));
  await waitFor(() => host.texts().filter((message) => message.type === "open").length === 3, "a new open announcement");
  host.receive(JSON.stringify(HELLO));
  const again = env.bridge.post("share", { n: 2 });
  const post = await waitFor(() => host.texts().find((message) => message.type === "post" && message.body.n === 2), "the post after reopening");
  const identities = host.texts().filter((message) => message.name === "page.identity");
  assert.equal(identities.length, 2, "page.identity again on the new connection");
  assert.equal(identities[1].id, 1);
  assert.equal(post.id, 2);
  host.receive({ type: "reply", id: 2, ok: true, body: "ok" });
  assert.equal(await again, "ok");
});

/** A host in the reply mode (BridgeWebView): open and pull wait for frames, which come in their replies. */
function replyingHost(session) {
  const sent = [];
  const waiting = [];
  const webkit = {
    messageHandlers: {
      bridge: {
        postMessage(message) {
          sent.push(message);
          if (message.startsWith("{")) return new Promise((resolve) => waiting.push((answer) => resolve(Object.assign({ session }, answer))));
          if (message === `${session}:pull`) return new Promise((resolve) => waiting.push(resolve));
          return Promise.resolve(null);
        },
      },
    },
  };
  const prefix = `${session}:`;
  return {
    webkit,
    sent,
    texts: () => sent.filter((message) => message.startsWith(prefix) && message[prefix.length] === "{").map((message) => JSON.parse(message.slice(prefix.length))),
    answer: async (answer) => {
      await waitFor(() => waiting.length > 0, "a message waiting for frames");
      waiting.shift()(answer);
    },
    waitingCount: () => waiting.length,
  };
}

test("WKWebView transport, reply mode: frames come in the answers to open and pull; messages carry the connection number", async () => {
  const host = replyingHost(7);
  const env = loadBridge({ webkit: host.webkit });
  await tick();
  assert.equal(JSON.parse(host.sent[0]).type, "open");
  assert.equal(globalThis.__bridgeBrokerReceive !== undefined, true);
  await host.answer({ frames: [JSON.stringify(HELLO)] });
  assert.deepEqual(await env.bridge.ready, HELLO);
  await waitFor(() => host.sent.includes("7:pull"), "the pull after the first answer");
  const identity = await waitFor(() => host.texts().find((message) => message.name === "page.identity"), "page.identity");

  const pending = fetch("http://127.0.0.1:8787/bytes");
  const post = await waitFor(() => host.texts().find((message) => message.name === "fetch"), "the fetch post, prefixed 7:");
  const head = { status: 200, statusText: "OK", headers: [["content-type", "application/octet-stream"]], url: "http://127.0.0.1:8787/bytes" };
  const bytes = Uint8Array.from({ length: 300 }, (_, i) => (i * 31 + 7) & 0xff);
  const frame = encodeFrame(post.id, bytes, true);
  await host.answer({
    frames: [
      JSON.stringify({ type: "reply", id: identity.id, ok: true, body: {} }),
      JSON.stringify({ type: "event", id: post.id, name: "response", body: head }),
      `b64:${Buffer.from(frame).toString("base64")}`,
      JSON.stringify({ type: "reply", id: post.id, ok: true, body: { status: 200, bodyEncoding: "binary", body: null } }),
    ],
  });
  const body = new Uint8Array(await (await pending).arrayBuffer());
  assert.deepEqual(Array.from(body), Array.from(bytes), "binary bytes byte for byte");

  // The host ends the connection: posts in flight fail, and the shim opens a new one.
  const inFlight = env.bridge.post("share", {});
  await waitFor(() => host.texts().some((message) => message.name === "share"), "the post");
  await host.answer({ close: { code: 1001, reason: "the page is navigating away" } });
  await assert.rejects(inFlight, (error) => error.code === "network" && /navigating away/.test(error.message));
  await waitFor(() => host.sent.filter((message) => message.startsWith("{")).length === 2, "a new open");
});

test("WKWebView transport, top frame: posts go right after open, before the hello", async () => {
  const host = webkitHost();
  globalThis.top = globalThis;
  try {
    const env = loadBridge({ webkit: host.webkit });
    const post = env.bridge.post("share", { n: 1 });
    await waitFor(() => host.texts().length === 3, "open, page.identity and the post, with no hello yet");
    assert.deepEqual(host.texts().map((message) => message.type + (message.name ? ` ${message.name}` : "")), ["open", "post page.identity", "post share"]);
    assert.equal(host.texts()[0].top, true);
    host.receive(JSON.stringify(HELLO));
    host.receive({ type: "reply", id: 2, ok: true, body: "shared" });
    assert.equal(await post, "shared");
  } finally {
    delete globalThis.top;
  }
});
