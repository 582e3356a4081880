// The bootstrap snippet (bridge-js/snippet/snippet.js, built into bridge-snippet.js): an inline
// script that opens the shim's WebSocket before the shim arrives, and the shim's adoption of it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadBridge, waitFor, tick, runSnippet, SNIPPET_KEY } from "../test-support/helpers.mjs";

const TOKEN = { "data-token": "s3cret" };

test("the snippet opens the socket the shim would open: URL, token, subprotocol, arraybuffer", async () => {
  const cases = [
    [{}, "ws://127.0.0.1:8787/bridge"],
    [{ "data-broker-url": "http://localhost:9000" }, "ws://localhost:9000/bridge"],
    [{ "data-broker-url": "https://broker.test:8443/" }, "wss://broker.test:8443/bridge"],
    [{ "data-broker-url": "ws://127.0.0.1:9/other", "data-token": "a b&c=d/é" }, null],
  ];
  for (const [attributes, expected] of cases) {
    // The shim with the same settings on its own tag, without a snippet, is the reference.
    const alone = loadBridge({ attributes });
    const own = await alone.socket();
    // As on a page without the shim yet (the snippet opens nothing where BridgeBroker is defined).
    delete globalThis.BridgeBroker;
    const snippet = runSnippet(attributes);
    globalThis.BridgeBroker = alone.bridge;
    if (expected) assert.equal(snippet.url, expected);
    assert.equal(snippet.url, own.url, JSON.stringify(attributes));
    assert.equal(snippet.protocols, "bridge.v1");
    assert.equal(snippet.binaryType, "arraybuffer");
    assert.equal(globalThis[SNIPPET_KEY].socket, snippet);
    delete globalThis[SNIPPET_KEY];
  }
});

test("the shim adopts the snippet's open socket and replays the hello and what followed, in order", async () => {
  const env = loadBridge({
    attributes: TOKEN,
    snippet: TOKEN,
    beforeShim(socket) {
      socket.accept();
      socket.hello({ maxInFlight: 2 });
      socket.push({ type: "event", name: "custom", body: 1 });
      socket.push({ type: "event", name: "custom", body: 2 });
    },
  });
  // Listeners added by the page right after the shim ran, before its first microtask.
  const seen = [];
  env.bridge.on("open", (hello) => seen.push(["open", hello.limits.maxInFlight]));
  env.bridge.on("custom", (body) => seen.push(["custom", body]));
  const replies = [1, 2, 3].map((n) => env.bridge.post("echo", n));
  const hello = await env.bridge.ready;
  assert.equal(env.sockets.length, 1, "no second socket");
  const ws = env.ws;
  assert.equal(hello.limits.maxInFlight, 2);
  assert.deepEqual(seen, [["open", 2], ["custom", 1], ["custom", 2]]);
  assert.equal(ws.texts[0].name, "page.identity", "page.identity goes first on the adopted socket");
  assert.equal(ws.texts[0].id, 1);
  // The three echoes went before the hello was replayed (early posts), ids 2 to 4.
  assert.deepEqual(ws.posts("echo").map((post) => post.id), [2, 3, 4]);
  for (const post of ws.posts("echo")) ws.reply(post.id, post.body * 10);
  assert.deepEqual(await Promise.all(replies), [10, 20, 30]);
  assert.equal(globalThis[SNIPPET_KEY], undefined, "the shim took the snippet off the page");
  assert.equal(ws.closedByClient, null);
});

test("a snippet socket still connecting is adopted: its open and hello arrive through the shim", async () => {
  const env = loadBridge({ snippet: {} });
  const reply = env.bridge.post("echo", "x");
  await tick();
  assert.equal(env.sockets.length, 1);
  const ws = env.ws;
  assert.equal(ws.sent.length, 0, "nothing sent before the open");
  ws.accept();
  assert.deepEqual(ws.texts.map((message) => message.name), ["page.identity", "echo"]);
  ws.hello();
  await env.bridge.ready;
  ws.reply(2, "y");
  assert.equal(await reply, "y");
});

test("binary messages the snippet kept are replayed to the shim's binary handling, in their place", async () => {
  // A broker sends no frame before a post; a malformed one proves the replay hands binary data over.
  const env = loadBridge({
    snippet: {},
    beforeShim(socket) {
      socket.accept();
      socket.hello();
      socket.onmessage({ type: "message", data: new Uint8Array([1, 2, 3]).buffer });
      socket.push({ type: "event", name: "after", body: null });
    },
  });
  const seen = [];
  env.bridge.on("error", (error) => seen.push(error.code));
  env.bridge.on("after", () => seen.push("after"));
  await env.bridge.ready;
  assert.deepEqual(seen, ["bad_message", "after"]);
  assert.equal(env.sockets.length, 1);
});

test("a snippet socket that failed before the shim ran is closed and the shim connects as without it", async () => {
  const env = loadBridge({ snippet: {}, beforeShim: (socket) => socket.refuse() });
  const reply = env.bridge.post("echo", "later");
  await waitFor(() => env.sockets.length === 2, "the shim's own socket");
  const [snippet, own] = env.sockets;
  assert.equal(snippet.readyState, 3);
  assert.equal(own.url, snippet.url);
  own.hello();
  const post = await own.nextPost("echo");
  assert.equal(own.texts[0].name, "page.identity");
  own.reply(post.id, "ok");
  assert.equal(await reply, "ok");
});

test("a snippet socket that closed after its hello is not adopted: nothing it got reaches the page", async () => {
  const env = loadBridge({
    snippet: {},
    beforeShim(socket) {
      socket.accept();
      socket.hello({ maxInFlight: 3 });
      socket.drop(1001, "going away");
    },
  });
  const opens = [];
  env.bridge.on("open", (hello) => opens.push(hello.limits.maxInFlight));
  await waitFor(() => env.sockets.length === 2, "the shim's own socket");
  assert.equal(env.bridge.hello, null, "the dead socket's hello was not taken");
  env.ws.hello({ maxInFlight: 9 });
  await env.bridge.ready;
  assert.deepEqual(opens, [9]);
});

test("a snippet socket that fails after the adoption reconnects with the usual backoff", async () => {
  const env = loadBridge({ snippet: {}, config: { backoff: { initial: 40, max: 40 } } });
  await tick();
  const adopted = env.ws;
  adopted.hello();
  await env.bridge.ready;
  const closes = [];
  env.bridge.on("close", (info) => closes.push(info.code));
  const started = Date.now();
  adopted.drop(1006);
  await waitFor(() => env.sockets.length === 2, "a reconnect");
  assert.ok(Date.now() - started >= 19, "after half the initial backoff at least");
  assert.deepEqual(closes, [1006]);
});

test("a snippet socket to another URL (another token) is closed, unread, and the shim opens its own", async () => {
  const env = loadBridge({
    attributes: TOKEN,
    snippet: { "data-token": "stale" },
    beforeShim(socket) {
      socket.accept();
      socket.hello({ maxInFlight: 3 });
    },
  });
  await waitFor(() => env.sockets.length === 2, "the shim's own socket");
  const [snippet, own] = env.sockets;
  assert.match(snippet.url, /token=stale$/);
  assert.equal(snippet.closedByClient.code, 1000);
  assert.equal(own.url, "ws://127.0.0.1:8787/bridge?token=s3cret");
  assert.equal(env.bridge.hello, null);
  own.hello();
  await env.bridge.ready;
  assert.equal(snippet.posts().length, 0, "nothing was sent on the snippet's socket");
});

test("inside a WKWebView with a bridge handler the snippet's socket is closed and WebKit carries the posts", async () => {
  const sent = [];
  const env = loadBridge({
    snippet: {},
    webkit: { messageHandlers: { bridge: { postMessage: (message) => sent.push(message) } } },
  });
  await tick(2);
  assert.equal(env.sockets.length, 1, "only the snippet's socket");
  assert.equal(env.sockets[0].closedByClient.code, 1000);
  assert.equal(env.bridge.transport, "webkit");
});

test("data-auto-connect=false closes the snippet's socket after the script; disconnect() closes it too", async () => {
  const env = loadBridge({ attributes: { "data-auto-connect": "false" }, snippet: {} });
  assert.equal(env.ws.closedByClient, null);
  await tick();
  assert.equal(env.sockets.length, 1);
  assert.equal(env.ws.closedByClient.code, 1000);

  const module = loadBridge({ script: false, snippet: {} });
  module.bridge.disconnect();
  assert.equal(module.sockets[0].closedByClient.code, 1000);
  await tick();
  assert.equal(module.sockets.length, 1);
});

test("an ES module importer's connect({token}) adopts the snippet when the token matches", async () => {
  const env = loadBridge({ script: false, snippet: TOKEN, beforeShim: (socket) => socket.accept() });
  env.bridge.connect({ token: "s3cret" });
  await tick();
  assert.equal(env.sockets.length, 1);
  assert.equal(env.ws.texts[0].name, "page.identity");
});

test("the snippet opens nothing after the shim (a host injected it at document start) or after another copy", async () => {
  const env = loadBridge({ snippet: {} });
  await tick();
  assert.equal(env.sockets.length, 1, "the adopted socket");
  runSnippet({});
  assert.equal(env.sockets.length, 1, "BridgeBroker is there: the shim owns the connection");
  assert.equal(globalThis[SNIPPET_KEY], undefined);

  delete globalThis.BridgeBroker;
  const first = runSnippet({});
  runSnippet({ "data-token": "another" });
  assert.equal(env.sockets.length, 2, "a second copy of the snippet leaves the first's socket in place");
  assert.equal(globalThis[SNIPPET_KEY].socket, first);
  delete globalThis[SNIPPET_KEY];
  globalThis.BridgeBroker = env.bridge;
});
