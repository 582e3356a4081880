// The parts built on first use: the XMLHttpRequest and EventSource classes are created when the
// page first reads the global (or BridgeBroker's property), and work the first time, before and
// after the connection is ready.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadBridge, tick, FakeNativeXHR } from "../test-support/helpers.mjs";

const descriptor = (name) => Object.getOwnPropertyDescriptor(globalThis, name);

test("the classes are not built while the shim starts: the globals wait in accessors", () => {
  loadBridge();
  for (const name of ["XMLHttpRequest", "EventSource"]) {
    assert.equal(typeof descriptor(name).get, "function", `${name} is an accessor until first read`);
    assert.equal(descriptor(name).configurable, true);
  }
});

test("the first read builds the class once and leaves a plain data property, as the browser's own", () => {
  const env = loadBridge();
  const enumerableBefore = descriptor("XMLHttpRequest").enumerable;
  const first = globalThis.XMLHttpRequest;
  assert.notEqual(first, FakeNativeXHR);
  assert.equal(first.name, "XMLHttpRequest");
  assert.deepEqual(Object.keys(descriptor("XMLHttpRequest")).sort(), ["configurable", "enumerable", "value", "writable"]);
  assert.equal(descriptor("XMLHttpRequest").enumerable, enumerableBefore);
  assert.equal(globalThis.XMLHttpRequest, first, "the same class on every read");
  assert.equal(env.bridge.XMLHttpRequest, first, "BridgeBroker's property is the same class");
  assert.equal(env.bridge.EventSource, globalThis.EventSource, "built through BridgeBroker first, the global is that class");
  assert.equal(env.bridge.EventSource.name, "EventSource");
});

test("a page that assigns the global before reading it keeps what it assigned", () => {
  loadBridge();
  const mine = function XMLHttpRequest() {};
  globalThis.XMLHttpRequest = mine;
  assert.equal(globalThis.XMLHttpRequest, mine);
  assert.equal(descriptor("XMLHttpRequest").writable, true);
});

test("unpatch before the first read restores the native classes, patch installs the bridged ones again", () => {
  const env = loadBridge();
  env.bridge.unpatch();
  assert.equal(globalThis.XMLHttpRequest, FakeNativeXHR);
  assert.equal(globalThis.EventSource, env.bridge.NativeEventSource);
  assert.deepEqual(env.bridge.patched, { fetch: false, xhr: false, eventSource: false });
  env.bridge.patch();
  assert.equal(globalThis.XMLHttpRequest, env.bridge.XMLHttpRequest);
  env.bridge.unpatch();
  assert.equal(globalThis.XMLHttpRequest, FakeNativeXHR, "and after it was built");
});

test("data-patch=fetch leaves XMLHttpRequest and EventSource as they were, not even an accessor", () => {
  loadBridge({ attributes: { "data-patch": "fetch" } });
  assert.equal(descriptor("XMLHttpRequest").value, FakeNativeXHR);
});

test("an XMLHttpRequest built and sent before the connection is ready completes once it is", async () => {
  const env = loadBridge();
  const xhr = new XMLHttpRequest();
  xhr.open("GET", "https://api.example.com/early");
  xhr.send();
  const done = new Promise((resolve) => xhr.addEventListener("loadend", resolve, { once: true }));
  const ws = await env.open();
  const post = await ws.nextPost("fetch");
  assert.equal(post.body.url, "https://api.example.com/early");
  ws.respond(post.id, { status: 200, headers: [["content-type", "text/plain"]], url: "https://api.example.com/early" });
  ws.pushBinary(post.id, "early", true);
  ws.finish(post.id, { bytes: 5 });
  await done;
  assert.equal(xhr.status, 200);
  assert.equal(xhr.responseText, "early");
});

test("an EventSource first used after the connection is ready streams", async () => {
  const env = loadBridge();
  const ws = await env.open();
  await tick(2);
  const source = new EventSource("https://events.example.com/late");
  const messages = [];
  source.addEventListener("message", (event) => messages.push(event.data));
  const post = await ws.nextPost("fetch");
  ws.respond(post.id, { headers: [["content-type", "text/event-stream"]], url: "https://events.example.com/late" });
  ws.pushBinary(post.id, "data: late\n\n");
  await tick(5);
  assert.deepEqual(messages, ["late"]);
  source.close();
});
