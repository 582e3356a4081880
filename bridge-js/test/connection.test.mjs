import { test } from "node:test";
import assert from "node:assert/strict";
import { loadBridge, waitFor, tick, FakeWebSocket } from "../test-support/helpers.mjs";

test("connects to the broker the script came from, with subprotocol bridge.v1 and the token", async () => {
  const env = loadBridge({ attributes: { "data-token": "s3cret" } });
  const ws = await waitFor(() => env.ws, "a socket");
  assert.equal(ws.url, "ws://127.0.0.1:8787/bridge?token=s3cret");
  assert.deepEqual(ws.protocols, ["bridge.v1"]);
  assert.equal(ws.binaryType, "arraybuffer");
  assert.equal(env.sockets.length, 1);
});

test("data-broker-url overrides the script origin; an http URL becomes ws://.../bridge", async () => {
  const env = loadBridge({ attributes: { "data-broker-url": "http://localhost:9000" } });
  const ws = await waitFor(() => env.ws, "a socket");
  assert.equal(ws.url, "ws://localhost:9000/bridge");
  assert.equal(env.bridge.url, "ws://localhost:9000/bridge");
});

test("a token in the script URL's query is used when there is no data-token", async () => {
  const env = loadBridge({ src: "https://broker.test:8443/bridge.js?token=abc" });
  const ws = await waitFor(() => env.ws, "a socket");
  assert.equal(ws.url, "wss://broker.test:8443/bridge?token=abc");
});

test("as an ES module (no currentScript) it finds its own URL and connect() can add the token first", async () => {
  const env = loadBridge({ script: false, filename: "http://127.0.0.1:9999/bridge.js", src: "http://127.0.0.1:9999/bridge.js" });
  // The importing module runs before the deferred auto-connect.
  env.bridge.connect({ token: "from-module" });
  await tick();
  assert.equal(env.sockets.length, 1);
  assert.equal(env.ws.url, "ws://127.0.0.1:9999/bridge?token=from-module");
});

test("injected by a host (a classic script without a script element) it reads no stack: the config or the default names the broker", async () => {
  // Counts the Errors made to read a stack (the teardown of the page before makes others).
  const load = (options) => {
    const NativeError = globalThis.Error;
    let made = 0;
    globalThis.Error = new Proxy(NativeError, {
      construct: (target, args, newTarget) => (made += String(args[0]).includes("locates itself"), Reflect.construct(target, args, newTarget)),
    });
    try {
      return { env: loadBridge({ script: false, injected: true, filename: "http://127.0.0.1:9999/bridge.js", ...options }), made };
    } finally {
      globalThis.Error = NativeError;
    }
  };
  const configured = load({ config: { url: "ws://127.0.0.1:7777/bridge" } });
  assert.equal(configured.made, 0);
  assert.equal((await waitFor(() => configured.env.ws, "a socket")).url, "ws://127.0.0.1:7777/bridge");
  // The stack would name http://127.0.0.1:9999; a host's script is not there.
  const bare = load({});
  assert.equal(bare.made, 0);
  assert.equal((await waitFor(() => bare.env.ws, "a socket")).url, "ws://127.0.0.1:8787/bridge");
});

test("ready resolves with the hello and exposes it", async () => {
  const env = loadBridge();
  assert.equal(env.bridge.connected, false);
  const ws = await env.open({ maxInFlight: 7 });
  const hello = await env.bridge.ready;
  assert.equal(hello.type, "hello");
  assert.equal(hello.limits.maxInFlight, 7);
  assert.equal(env.bridge.hello, hello);
  assert.equal(env.bridge.connected, true);
  assert.equal(env.bridge.transport, "websocket");
  assert.ok(ws);
});

test("post sends an envelope with integer ids from 1 (page.identity's) and resolves with the reply body", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const first = env.bridge.post("echo", { hello: "world" });
  const second = env.bridge.post("echo", [1, 2, 3]);
  const a = await ws.nextPost("echo");
  const b = await ws.nextPost("echo");
  assert.equal(ws.posts("page.identity")[0].id, 1);
  assert.deepEqual(a, { type: "post", name: "echo", id: 2, body: { hello: "world" } });
  assert.deepEqual(b, { type: "post", name: "echo", id: 3, body: [1, 2, 3] });
  ws.reply(3, "second");
  ws.reply(2, { echoed: true });
  assert.deepEqual(await first, { echoed: true });
  assert.equal(await second, "second");
});

test("a post without a body sends no body field", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const reply = env.bridge.post("cache.stats");
  const message = await ws.nextPost("cache.stats");
  assert.equal("body" in message, false);
  ws.reply(message.id, null);
  assert.equal(await reply, null);
});

test("an error reply rejects with an Error carrying the protocol code and message", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const reply = env.bridge.post("nope", {});
  const message = await ws.nextPost("nope");
  ws.fail(message.id, "unknown_handler", "no handler named nope");
  await assert.rejects(reply, (error) => {
    assert.ok(error instanceof Error);
    assert.ok(error instanceof env.bridge.BridgeError);
    assert.equal(error.code, "unknown_handler");
    assert.equal(error.message, "no handler named nope");
    return true;
  });
});

test("every protocol error code reaches the caller unchanged", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const codes = ["bad_message", "bad_request", "too_many_in_flight", "forbidden", "network", "timeout", "cancelled", "not_cached", "too_large", "internal"];
  const results = codes.map((code) => env.bridge.post("echo", code).catch((error) => error.code));
  for (const code of codes) {
    const message = await ws.nextPost("echo");
    ws.fail(message.id, message.body);
    assert.equal(message.body, code);
  }
  assert.deepEqual(await Promise.all(results), codes);
});

test("send() is fire-and-forget: no id; its failure arrives as an error event", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const errors = [];
  env.bridge.on("error", (error) => errors.push(error));
  assert.equal(env.bridge.send("log", { line: "hi" }), undefined);
  const message = await ws.nextPost("log");
  assert.deepEqual(message, { type: "post", name: "log", body: { line: "hi" } });
  ws.push({ type: "error", error: { code: "unknown_handler", message: "no handler named log" } });
  assert.equal(errors.length, 1);
  assert.equal(errors[0].code, "unknown_handler");
  ws.push({ type: "error", error: { code: "duplicate_id", message: "id 4 is in flight" }, duplicateId: 4 });
  assert.equal(errors[1].duplicateId, 4);
});

test("posts made while connecting are queued and sent once the socket is open, before the hello", async () => {
  const env = loadBridge();
  const early = env.bridge.post("echo", "early");
  const ws = await waitFor(() => env.ws, "a socket");
  await tick(5);
  assert.equal(ws.sent.length, 0, "nothing is sent before the socket is open");
  ws.accept();
  const message = await ws.nextPost("echo");
  assert.equal(message.body, "early");
  ws.hello();
  ws.reply(message.id, "ok");
  assert.equal(await early, "ok");
});

test("a dropped connection rejects in-flight posts with network, reconnects, and ids restart at 1", async () => {
  const env = loadBridge();
  await waitFor(() => env.ws, "a socket");
  env.bridge.connect({ backoff: { initial: 10, max: 20 } });
  const first = await env.open();
  const inFlight = env.bridge.post("echo", "lost");
  await first.nextPost("echo");
  const closes = [];
  env.bridge.on("close", (info) => closes.push(info));
  first.drop(1006);
  await assert.rejects(inFlight, (error) => {
    assert.equal(error.code, "network");
    assert.match(error.message, /closed \(code 1006\) before the reply to post #2 "echo"/);
    return true;
  });
  assert.deepEqual(closes, [{ code: 1006, reason: "" }]);
  const queued = env.bridge.post("echo", "after");
  const second = await waitFor(() => env.sockets.length === 3 && env.ws, "a reconnect");
  assert.notEqual(second, first);
  second.hello();
  const message = await second.nextPost("echo");
  assert.equal(second.posts("page.identity")[0].id, 1, "the new connection's page.identity is 1 again");
  assert.equal(message.id, 2);
  assert.equal(message.body, "after");
  second.reply(2, "delivered");
  assert.equal(await queued, "delivered");
});

test("reconnects back off exponentially with jitter, capped at max", async () => {
  const env = loadBridge();
  await waitFor(() => env.ws, "a socket");
  // Without the cap the third delay would be at least 12.5 s (half of 40 * 25 * 25): the bound
  // below is 5 s, so that a loaded machine's late timer cannot fail it while a missing cap does.
  env.bridge.connect({ backoff: { initial: 40, max: 80, factor: 25 } });
  const times = [];
  for (let attempt = 0; attempt < 3; attempt++) {
    const socket = env.ws;
    const started = Date.now();
    socket.drop();
    await waitFor(() => env.ws !== socket, "the next attempt", 10000);
    times.push(Date.now() - started);
  }
  assert.ok(times[0] >= 19, `first delay ${times[0]} >= half of 40`);
  assert.ok(times[1] >= 39, `second delay ${times[1]} >= half of the cap`);
  assert.ok(times[2] >= 39 && times[2] < 5000, `third delay ${times[2]} stays under the cap`);
});

test("aborting a post sends a cancel frame and rejects with an AbortError; the late reply is ignored", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const controller = new AbortController();
  const reply = env.bridge.post("slow", {}, { signal: controller.signal });
  const message = await ws.nextPost("slow");
  controller.abort();
  await assert.rejects(reply, (error) => {
    assert.ok(error instanceof DOMException);
    assert.equal(error.name, "AbortError");
    return true;
  });
  assert.deepEqual(ws.cancels(), [{ type: "cancel", id: message.id }]);
  ws.fail(message.id, "cancelled");
  const next = env.bridge.post("echo", 1);
  const nextMessage = await ws.nextPost("echo");
  assert.equal(nextMessage.id, message.id + 1);
  ws.reply(nextMessage.id, 1);
  assert.equal(await next, 1);
});

test("aborting a queued post sends nothing; an already aborted signal rejects at once", async () => {
  const env = loadBridge();
  const controller = new AbortController();
  const queued = env.bridge.post("slow", {}, { signal: controller.signal });
  controller.abort();
  await assert.rejects(queued, { name: "AbortError" });
  await assert.rejects(env.bridge.post("slow", {}, { signal: AbortSignal.abort() }), { name: "AbortError" });
  const ws = await env.open();
  await tick(5);
  assert.equal(ws.posts("slow").length, 0);
});

test("events with an id go to the post's onEvent; events without one go to on() listeners", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const postEvents = [];
  const pushed = [];
  env.bridge.on("request.progress", (body) => pushed.push(body));
  env.bridge.addEventListener("request.progress", (body) => pushed.push({ again: body.n }));
  const reply = env.bridge.post("work", {}, { onEvent: (name, body) => postEvents.push([name, body]) });
  const message = await ws.nextPost("work");
  ws.event(message.id, "step", { n: 1 });
  ws.push({ type: "event", name: "request.progress", body: { n: 9 } });
  ws.reply(message.id, "done");
  await reply;
  ws.event(message.id, "late", {});
  assert.deepEqual(postEvents, [["step", { n: 1 }]]);
  assert.deepEqual(pushed, [{ n: 9 }, { again: 9 }]);
});

test("binary frames of a post reach its onBinary with the END flag", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const chunks = [];
  const reply = env.bridge.post("blob", {}, { onBinary: (bytes, end) => chunks.push([Buffer.from(bytes).toString(), end]) });
  const message = await ws.nextPost("blob");
  ws.pushBinary(message.id, "ab");
  ws.pushBinary(message.id + 100, "not mine", true);
  ws.pushBinary(message.id, "cd", true);
  ws.reply(message.id, null);
  await reply;
  assert.deepEqual(chunks, [["ab", false], ["cd", true]]);
});

test("a post larger than maxMessageBytes is refused locally with too_large", async () => {
  const env = loadBridge();
  const ws = await env.open({ maxMessageBytes: 200 });
  await assert.rejects(env.bridge.post("echo", "x".repeat(300)), { code: "too_large" });
  await assert.rejects(env.bridge.post("echo", "é".repeat(90)), { code: "too_large" }, "counts UTF-8 bytes");
  assert.equal(ws.posts("echo").length, 0);
  const small = env.bridge.post("echo", "fits");
  const message = await ws.nextPost("echo");
  ws.reply(message.id, "fits");
  assert.equal(await small, "fits");
});

test("no more than maxInFlight posts are in flight; the rest wait for a reply", async () => {
  const env = loadBridge();
  const ws = await env.open({ maxInFlight: 2 });
  const replies = [1, 2, 3].map((n) => env.bridge.post("echo", n));
  await tick(5);
  assert.deepEqual(ws.posts("echo").map((message) => message.body), [1, 2]);
  ws.reply(2, "one");
  await waitFor(() => ws.posts("echo").length === 3, "the third post");
  ws.reply(3, "two");
  ws.reply(4, "three");
  assert.deepEqual(await Promise.all(replies), ["one", "two", "three"]);
});

test("a body that is not JSON rejects with bad_message", async () => {
  const env = loadBridge();
  await env.open();
  const cyclic = {};
  cyclic.self = cyclic;
  await assert.rejects(env.bridge.post("echo", cyclic), { code: "bad_message" });
  await assert.rejects(env.bridge.post(""), TypeError);
});

test("queued posts fail with network when no broker answers within queueTimeout", async () => {
  const env = loadBridge({ config: { queueTimeout: 30, backoff: { initial: 5, max: 10 } } });
  const reply = env.bridge.post("echo", 1);
  const socket = await waitFor(() => env.ws, "a socket");
  socket.drop();
  await assert.rejects(reply, (error) => error.code === "network" && /could not reach the broker/.test(error.message));
});

test("disconnect() closes the socket, rejects queued posts and stops reconnecting", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const inFlight = env.bridge.post("echo", 1);
  await ws.nextPost("echo");
  env.bridge.disconnect();
  await assert.rejects(inFlight, { code: "network" });
  assert.equal(ws.closedByClient.code, 1000);
  await assert.rejects(env.bridge.post("echo", 2), { code: "network" });
  await tick(30);
  assert.equal(FakeWebSocket.instances.length, 1);
  assert.equal(env.bridge.state, "closed");
});

test("malformed frames from the broker are reported, not thrown", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const errors = [];
  env.bridge.on("error", (error) => errors.push(error.code));
  ws.onmessage({ data: "not json" });
  ws.onmessage({ data: new Uint8Array([1, 2, 3]).buffer });
  ws.push({ type: "future-envelope" });
  assert.deepEqual(errors, ["bad_message", "bad_message"]);
});

test("loading the script twice keeps the first instance", async () => {
  const env = loadBridge();
  const { SHIM_SOURCE } = await import("../test-support/helpers.mjs");
  const vm = await import("node:vm");
  vm.runInThisContext(SHIM_SOURCE, { filename: "http://127.0.0.1:8787/bridge.js" });
  assert.equal(globalThis.BridgeBroker, env.bridge);
  await tick();
  assert.equal(env.sockets.length, 1);
});
