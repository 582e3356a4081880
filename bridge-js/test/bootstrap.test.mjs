// The shim's start: the connection opens first, while the rest initialises, and a page's first
// posts leave as soon as the socket is open, within the limits any broker takes, before the hello.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadBridge, waitFor, tick, FakeWebSocket } from "../test-support/helpers.mjs";

const EARLY_IN_FLIGHT = 32;
// page.identity is the first of them, on every connection.
const EARLY_ECHOES = EARLY_IN_FLIGHT - 1;

test("a classic script opens its WebSocket in the first microtask after it ran, after it patched the page", async () => {
  let patchedWhenCreated = null;
  const Original = FakeWebSocket;
  class Probe extends Original {
    constructor(...args) {
      super(...args);
      patchedWhenCreated = globalThis.BridgeBroker !== undefined;
    }
  }
  const env = loadBridge({ WebSocket: Probe });
  assert.equal(env.sockets.length, 0, "no socket while the script runs (its big functions would be on the stack)");
  let seenByNextMicrotask = null;
  queueMicrotask(() => {
    seenByNextMicrotask = env.sockets.length;
  });
  await tick();
  assert.equal(seenByNextMicrotask, 1, "the socket exists before a microtask queued after the script");
  assert.equal(patchedWhenCreated, true);
});

test("a module import waits a microtask, so connect({token}) is the first handshake", async () => {
  const env = loadBridge({ script: false, filename: "http://127.0.0.1:9999/bridge.js", src: "http://127.0.0.1:9999/bridge.js" });
  assert.equal(env.sockets.length, 0, "no socket while the importing module may still configure it");
  await tick();
  assert.equal(env.sockets.length, 1);
});

test("data-auto-connect=false opens nothing", async () => {
  const env = loadBridge({ attributes: { "data-auto-connect": "false" } });
  await tick(5);
  assert.equal(env.sockets.length, 0);
});

test("before the hello at most 32 posts go, the rest once the hello gives the real limit", async () => {
  const env = loadBridge();
  const replies = Array.from({ length: 40 }, (_, n) => env.bridge.post("echo", n));
  const ws = await env.socket();
  ws.accept();
  await tick(5);
  assert.deepEqual(ws.texts[0], { type: "post", name: "page.identity", id: 1, body: ws.texts[0].body }, "page.identity goes first");
  assert.equal(ws.posts("echo").length, EARLY_ECHOES);
  assert.deepEqual(ws.posts("echo").map((post) => post.id), Array.from({ length: EARLY_ECHOES }, (_, n) => n + 2));
  ws.hello({ maxInFlight: 64 });
  await waitFor(() => ws.posts("echo").length === 40, "the posts after the hello");
  for (const post of ws.posts("echo")) ws.reply(post.id, post.body);
  assert.deepEqual(await Promise.all(replies), Array.from({ length: 40 }, (_, n) => n));
});

test("a hello with a lower maxInFlight holds the next posts until enough replies came", async () => {
  const env = loadBridge();
  const replies = Array.from({ length: 6 }, (_, n) => env.bridge.post("echo", n));
  const ws = await env.socket();
  ws.accept();
  await tick(2);
  assert.equal(ws.posts("echo").length, 6);
  ws.hello({ maxInFlight: 4 });
  const more = env.bridge.post("echo", "later");
  await tick(2);
  assert.equal(ws.posts("echo").length, 6, "6 in flight (page.identity was answered), over the limit of 4: the new post waits");
  for (const id of [2, 3, 4]) ws.reply(id, id - 1);
  await waitFor(() => ws.posts("echo").length === 7, "the post after three replies");
  for (const id of [5, 6, 7, 8]) ws.reply(id, id - 1);
  assert.deepEqual(await Promise.all([...replies, more]), [1, 2, 3, 4, 5, 6, 7]);
});

test("early posts the broker refuses with too_many_in_flight are sent again, in order, not rejected", async () => {
  const env = loadBridge({ identityReply: null });
  const replies = Array.from({ length: 5 }, (_, n) => env.bridge.post("echo", `p${n}`));
  const ws = await env.socket();
  ws.accept();
  await tick(2);
  assert.equal(ws.posts("page.identity").length, 1);
  assert.equal(ws.posts("echo").length, 5);
  // A broker whose limit is 3: its hello comes first, then it refuses posts 4 to 6 unrun.
  ws.hello({ maxInFlight: 3 });
  for (const id of [4, 5, 6]) ws.fail(id, "too_many_in_flight", "3 posts in flight");
  await tick(2);
  assert.equal(ws.posts("echo").length, 5, "nothing more while 3 are in flight");
  ws.reply(1, {});
  ws.reply(2, "p0");
  await waitFor(() => ws.posts("echo").length === 7, "two refused posts again");
  const again = ws.posts("echo").slice(5);
  assert.deepEqual(again.map((post) => post.body), ["p2", "p3"], "in their original order");
  assert.deepEqual(again.map((post) => post.id), [7, 8], "with new ids");
  ws.reply(7, "p2");
  await waitFor(() => ws.posts("echo").length === 8, "the last refused post");
  assert.equal(ws.posts("echo")[7].body, "p4");
  ws.reply(3, "p1");
  ws.reply(8, "p3");
  ws.reply(9, "p4");
  assert.deepEqual(await Promise.all(replies), ["p0", "p1", "p2", "p3", "p4"]);
});

test("too_many_in_flight after the hello still rejects", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const reply = env.bridge.post("echo", 1);
  const post = await ws.nextPost("echo");
  ws.fail(post.id, "too_many_in_flight");
  await assert.rejects(reply, { code: "too_many_in_flight" });
});

test("fire-and-forget posts, uploads and large posts wait for the hello, and so do the posts after them", async () => {
  const cases = {
    "fire-and-forget": (bridge) => bridge.send("log", "no id"),
    "a post over 1 KiB": (bridge) => bridge.post("echo", "x".repeat(1100)),
    "an upload": (bridge) => bridge.fetch("http://origin.test/upload", { method: "POST", body: "abc" }),
  };
  for (const [name, make] of Object.entries(cases)) {
    const env = loadBridge();
    const ws = await env.socket();
    Promise.resolve(make(env.bridge)).catch(() => {});
    await tick(2); // a fetch reads its body before it posts
    env.bridge.post("echo", "after").catch(() => {});
    ws.accept();
    await tick(5);
    assert.deepEqual(ws.texts.map((message) => message.name), ["page.identity"], `${name}: nothing but page.identity goes before the hello`);
    ws.hello();
    await waitFor(() => ws.posts("echo").some((post) => post.body === "after"), `${name}: the post after it`);
    assert.equal(ws.posts().length, 3, `${name}: both go after the hello`);
  }
});

test("a socket that closes before the hello rejects the early posts with network and keeps the queue", async () => {
  const env = loadBridge({ config: { backoff: { initial: 5, max: 10 } } });
  const replies = Array.from({ length: 34 }, (_, n) => env.bridge.post("echo", n));
  const first = await env.socket();
  first.accept();
  await tick(2);
  assert.equal(first.posts("echo").length, EARLY_ECHOES);
  first.drop(1006);
  const settled = await Promise.allSettled(replies.slice(0, EARLY_ECHOES));
  assert.ok(settled.every((result) => result.status === "rejected" && result.reason.code === "network"));
  const second = await waitFor(() => env.sockets.length === 2 && env.sockets[1], "a new socket");
  second.accept();
  await waitFor(() => second.posts("echo").length === 3, "the three posts that were still queued");
  assert.equal(second.texts[0].name, "page.identity", "the new connection's first post is page.identity again");
  second.hello();
  for (const post of second.posts("echo")) second.reply(post.id, post.body);
  assert.deepEqual(await Promise.all(replies.slice(EARLY_ECHOES)), [31, 32, 33]);
});
