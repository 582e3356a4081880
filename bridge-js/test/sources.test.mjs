// The readable sources under src/ are real ES modules: a browser (or node) can import src/main.js
// unbuilt and get the same shim as the built bridge.js that the other tests load.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadBridge, loadBridgeSources, tick, waitFor } from "../test-support/helpers.mjs";

test("src/main.js imported as an ES module defines BridgeBroker, patches the page and talks to the broker", async () => {
  const env = await loadBridgeSources({ config: { url: "ws://127.0.0.1:9999/bridge", token: "t" } });
  assert.equal(typeof env.bridge.post, "function");
  assert.equal(globalThis.XMLHttpRequest, env.bridge.XMLHttpRequest);
  assert.deepEqual(env.bridge.patched, { fetch: true, xhr: true, eventSource: true });
  const ws = await env.open();
  assert.equal(ws.url, "ws://127.0.0.1:9999/bridge?token=t");
  const reply = env.bridge.post("echo", { a: 1 });
  const post = await ws.nextPost("echo");
  assert.equal(ws.texts[0].name, "page.identity");
  assert.deepEqual(post, { type: "post", name: "echo", id: 2, body: { a: 1 } });
  ws.reply(2, { ok: true });
  assert.deepEqual(await reply, { ok: true });
});

test("the sources keep the double-include guard: a second import leaves the first instance", async () => {
  const env = await loadBridgeSources();
  await waitFor(() => env.sockets.length === 1, "the first instance's socket");
  const first = globalThis.BridgeBroker;
  await import(new URL("../src/main.js?again", import.meta.url).href);
  await tick(10);
  assert.equal(globalThis.BridgeBroker, first);
  assert.equal(env.sockets.length, 1);
});

test("the built file and the sources define the same API", async () => {
  const built = loadBridge();
  const builtKeys = Reflect.ownKeys(built.bridge).map(String).sort();
  const sources = await loadBridgeSources();
  assert.deepEqual(Reflect.ownKeys(sources.bridge).map(String).sort(), builtKeys);
});
