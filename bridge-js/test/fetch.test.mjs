import { test } from "node:test";
import assert from "node:assert/strict";
import { loadBridge, waitFor, tick, parseMultipart, encodeFrame, fetchAnswered } from "../test-support/helpers.mjs";

const header = (message, name) => message.body.headers.find((pair) => pair[0].toLowerCase() === name)?.[1];

test("fetch goes through the broker and streams the body: chunks are readable before END", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const pending = fetch("https://api.example.com/data?x=1#frag", { headers: { "X-Trace": "7" } });
  const post = await ws.nextPost("fetch");
  assert.equal(post.body.url, "https://api.example.com/data?x=1#frag");
  assert.equal(post.body.method, "GET");
  assert.equal(post.body.responseBody, "binary");
  assert.equal(post.body.progress, false, "fetch() has no progress API: no per-request progress events");
  assert.equal(post.body.redirect, "follow");
  assert.equal(typeof post.body.group, "string");
  assert.equal("body" in post.body, false, "a GET has no body");
  assert.equal(header(post, "x-trace"), "7");

  ws.respond(post.id, {
    status: 201,
    statusText: "Created",
    url: "https://api.example.com/final",
    redirected: true,
    headers: [["content-type", "text/plain"], ["x-dup", "a"], ["x-dup", "b"]],
  });
  const response = await pending;
  assert.ok(response instanceof Response);
  assert.equal(response.status, 201);
  assert.equal(response.statusText, "Created");
  assert.equal(response.ok, true);
  assert.equal(response.url, "https://api.example.com/final");
  assert.equal(response.redirected, true);
  assert.equal(response.type, "cors");
  assert.equal(response.headers.get("content-type"), "text/plain");
  assert.equal(response.headers.get("x-dup"), "a, b");
  assert.deepEqual(response.bridge.cache, { status: "miss" });
  const clone = response.clone();
  assert.equal(clone.url, "https://api.example.com/final", "clones keep url");
  assert.equal(clone.redirected, true);

  const reader = response.body.getReader();
  ws.pushBinary(post.id, "hello ");
  const first = await reader.read();
  assert.equal(Buffer.from(first.value).toString(), "hello ");
  assert.equal(first.value.byteOffset, 0, "chunks do not expose the frame header");
  ws.pushBinary(post.id, "world", true);
  ws.finish(post.id, { bytes: 11 });
  const second = await reader.read();
  assert.equal(Buffer.from(second.value).toString(), "world");
  assert.equal((await reader.read()).done, true);
});

test("response.text() gathers every chunk", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const pending = fetch("http://example.com/big");
  const post = await ws.nextPost("fetch");
  ws.respond(post.id);
  const response = await pending;
  for (let i = 0; i < 5; i++) ws.pushBinary(post.id, `chunk${i};`);
  ws.pushBinary(post.id, "", true);
  ws.finish(post.id);
  assert.equal(await response.text(), "chunk0;chunk1;chunk2;chunk3;chunk4;");
});

/** Runs a POST with `body`, checks the announced length and the frames, returns {post, bytes}. */
async function sendBody(ws, body, init = {}) {
  const pending = fetch("https://upload.example.com/u", { method: "POST", body, ...init });
  const post = await ws.nextPost("fetch");
  const bytes = await ws.bodyOf(post.id);
  const frames = ws.framesFor(post.id);
  for (const frame of frames) {
    assert.equal(frame.kind, 1, "kind is body chunk");
    assert.deepEqual(frame.idBytes, [0, 0, 0, 0, 0, 0, 0, post.id], "id is 64-bit big-endian");
  }
  assert.deepEqual(frames.map((frame) => frame.end), frames.map((_, index) => index === frames.length - 1), "END only on the last frame");
  ws.respond(post.id, { status: 200 });
  ws.pushBinary(post.id, "", true);
  ws.finish(post.id);
  await (await pending).arrayBuffer();
  return { post, bytes, frames };
}

test("request bodies of every kind travel as binary frames with their length", async () => {
  const env = loadBridge();
  const ws = await env.open();

  let sent = await sendBody(ws, "héllo");
  assert.deepEqual(sent.post.body.body, { binary: true, length: 6 });
  assert.equal(sent.bytes.toString(), "héllo");
  assert.equal(header(sent.post, "content-type"), "text/plain;charset=UTF-8");

  sent = await sendBody(ws, new URLSearchParams({ a: "1 2", b: "&" }));
  assert.equal(sent.bytes.toString(), "a=1+2&b=%26");
  assert.equal(header(sent.post, "content-type"), "application/x-www-form-urlencoded;charset=UTF-8");
  assert.deepEqual(sent.post.body.body, { binary: true, length: 11 });

  sent = await sendBody(ws, new Blob(["blob", "parts"], { type: "application/x-test" }));
  assert.equal(sent.bytes.toString(), "blobparts");
  assert.equal(header(sent.post, "content-type"), "application/x-test");

  sent = await sendBody(ws, new Uint8Array([1, 2, 3, 4]).buffer);
  assert.deepEqual([...sent.bytes], [1, 2, 3, 4]);
  assert.deepEqual(sent.post.body.body, { binary: true, length: 4 });

  const backing = new Uint8Array([9, 9, 5, 6, 7, 9]);
  sent = await sendBody(ws, new DataView(backing.buffer, 2, 3));
  assert.deepEqual([...sent.bytes], [5, 6, 7], "a view sends only its own bytes");

  sent = await sendBody(ws, "");
  assert.deepEqual(sent.post.body.body, { binary: true, length: 0 });
  assert.equal(sent.frames.length, 1, "an empty body is one empty END frame");
  assert.equal(sent.frames[0].payload.byteLength, 0);
});

test("a ReadableStream body streams without a length and ends with an END frame", async () => {
  const env = loadBridge();
  const ws = await env.open();
  let push;
  const stream = new ReadableStream({
    start(controller) {
      push = controller;
    },
  });
  const pending = fetch("https://upload.example.com/s", { method: "PUT", body: stream, duplex: "half" });
  const post = await ws.nextPost("fetch");
  assert.deepEqual(post.body.body, { binary: true });
  assert.equal(post.body.method, "PUT");
  push.enqueue(new TextEncoder().encode("part1,"));
  await waitFor(() => ws.framesFor(post.id).length === 1, "the first chunk, before the stream ends");
  assert.equal(ws.framesFor(post.id)[0].end, false);
  push.enqueue(new TextEncoder().encode("part2"));
  push.close();
  assert.equal((await ws.bodyOf(post.id)).toString(), "part1,part2");
  assert.equal(ws.framesFor(post.id).at(-1).payload.byteLength, 0);
  ws.respond(post.id, { status: 204, statusText: "No Content" });
  const response = await pending;
  assert.equal(response.status, 204);
  assert.equal(response.body, null);
  ws.finish(post.id, { status: 204 });
});

test("large bodies are cut into 256 KiB frames", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const data = new Uint8Array(600 * 1024).map((_, index) => index % 251);
  const sent = await sendBody(ws, new Blob([data]));
  assert.deepEqual(sent.frames.map((frame) => frame.payload.byteLength), [262144, 262144, 614400 - 524288]);
  assert.ok(Buffer.from(data).equals(sent.bytes));
  assert.deepEqual(sent.post.body.body, { binary: true, length: 614400 });
});

test("frames respect a maxMessageBytes smaller than 256 KiB", async () => {
  const env = loadBridge();
  const ws = await env.open({ maxMessageBytes: 1010 });
  const sent = await sendBody(ws, "z".repeat(2500));
  assert.deepEqual(sent.frames.map((frame) => frame.payload.byteLength), [1000, 1000, 500]);
});

test("FormData with a file is sent as multipart with the boundary of its content-type", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const form = new FormData();
  form.append("name", "Ada\nLovelace");
  form.append("upload", new File(["file contents\u00ff"], "notes.txt", { type: "text/plain" }));
  const sent = await sendBody(ws, form);
  const contentType = header(sent.post, "content-type");
  assert.match(contentType, /^multipart\/form-data; ?boundary=/);
  const parts = parseMultipart(sent.bytes, contentType);
  assert.equal(parts.length, 2);
  assert.equal(parts[0].head, 'Content-Disposition: form-data; name="name"');
  assert.equal(parts[0].body.toString(), "Ada\r\nLovelace");
  assert.equal(parts[1].head, 'Content-Disposition: form-data; name="upload"; filename="notes.txt"\r\nContent-Type: text/plain');
  assert.equal(parts[1].body.toString("utf8"), "file contents\u00ff");
  assert.equal(sent.post.body.body.length, sent.bytes.length);
});

test("a Request object is accepted as input, with its method, headers and body", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const request = new Request("https://api.example.com/items", {
    method: "put",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify({ a: 1 }),
  });
  const pending = fetch(request);
  const post = await ws.nextPost("fetch");
  assert.equal(post.body.method, "PUT");
  assert.equal(post.body.url, "https://api.example.com/items");
  assert.equal(header(post, "content-type"), "application/json");
  assert.equal(header(post, "accept"), "application/json");
  assert.equal((await ws.bodyOf(post.id)).toString(), '{"a":1}');
  ws.respond(post.id, { headers: [["content-type", "application/json"]] });
  ws.pushBinary(post.id, '{"ok":true}', true);
  ws.finish(post.id);
  assert.deepEqual(await (await pending).json(), { ok: true });
});

test("relative URLs resolve against the page", async () => {
  const env = loadBridge({ attributes: { "data-broker-url": "ws://127.0.0.1:8787/bridge" } });
  const ws = await env.open();
  const pending = fetch("../api/list");
  const post = await ws.nextPost("fetch");
  assert.equal(post.body.url, "http://page.test/api/list");
  ws.fail(post.id, "network");
  await assert.rejects(pending, TypeError);
});

test("a broker error becomes a TypeError that keeps the code", async () => {
  const env = loadBridge();
  const ws = await env.open();
  for (const code of ["network", "forbidden", "timeout", "not_cached", "bad_request"]) {
    const pending = fetch("https://down.example.com/");
    const post = await ws.nextPost("fetch");
    ws.fail(post.id, code, `upstream said ${code}`);
    await assert.rejects(pending, (error) => {
      assert.ok(error instanceof TypeError);
      assert.match(error.message, /^Failed to fetch/);
      assert.equal(error.code, code);
      assert.equal(error.cause.code, code);
      assert.equal(error.cause.message, `upstream said ${code}`);
      return true;
    });
  }
});

test("aborting before the response sends cancel and rejects with AbortError", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const controller = new AbortController();
  const pending = fetch("https://slow.example.com/", { signal: controller.signal });
  const post = await ws.nextPost("fetch");
  controller.abort();
  await assert.rejects(pending, (error) => error instanceof DOMException && error.name === "AbortError");
  assert.deepEqual(ws.cancels(), [{ type: "cancel", id: post.id }]);
  ws.fail(post.id, "cancelled");
  await assert.rejects(fetch("https://slow.example.com/", { signal: AbortSignal.abort() }), { name: "AbortError" });
});

test("aborting after the response errors the body stream with AbortError", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const controller = new AbortController();
  const pending = fetch(new Request("https://slow.example.com/stream", { signal: controller.signal }));
  const post = await ws.nextPost("fetch");
  ws.respond(post.id);
  const response = await pending;
  const reader = response.body.getReader();
  ws.pushBinary(post.id, "partial");
  assert.equal(Buffer.from((await reader.read()).value).toString(), "partial");
  controller.abort();
  await assert.rejects(reader.read(), { name: "AbortError" });
  assert.deepEqual(ws.cancels(), [{ type: "cancel", id: post.id }]);
});

test("cancelling the body stream cancels the post", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const pending = fetch("https://example.com/huge");
  const post = await ws.nextPost("fetch");
  ws.respond(post.id);
  const response = await pending;
  await response.body.cancel();
  assert.deepEqual(ws.cancels(), [{ type: "cancel", id: post.id }]);
});

test("a connection lost in the middle of the body errors the stream with a network TypeError", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const pending = fetch("https://example.com/partial");
  const post = await ws.nextPost("fetch");
  ws.respond(post.id);
  const response = await pending;
  ws.pushBinary(post.id, "half");
  ws.drop();
  await assert.rejects(response.text(), (error) => error instanceof TypeError && error.code === "network");
});

test("HEAD, 204 and 304 responses have a null body", async () => {
  const env = loadBridge();
  const ws = await env.open();
  for (const [method, status] of [["HEAD", 200], ["GET", 204], ["GET", 304]]) {
    const pending = fetch("https://example.com/thing", { method });
    const post = await ws.nextPost("fetch");
    ws.respond(post.id, { status, statusText: "" });
    const response = await pending;
    assert.equal(response.status, status);
    assert.equal(response.body, null);
    ws.finish(post.id, { status });
  }
});

test("redirect: manual yields an opaque-redirect response and keeps the 3xx on .bridge", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const pending = fetch("https://example.com/old", { redirect: "manual" });
  const post = await ws.nextPost("fetch");
  assert.equal(post.body.redirect, "manual");
  ws.respond(post.id, { status: 302, statusText: "Found", headers: [["location", "/new"]] });
  const response = await pending;
  assert.equal(response.type, "opaqueredirect");
  assert.equal(response.status, 0);
  assert.equal(response.ok, false);
  assert.equal(response.url, "https://example.com/old");
  assert.equal(response.headers.get("location"), null);
  assert.equal(response.bridge.status, 302);
  assert.deepEqual(response.bridge.headers, [["location", "/new"]]);
  ws.finish(post.id, { status: 302 });
});

test("statuses a Response cannot hold are handled: 0 fails, 1xx and 6xx keep their number", async () => {
  const env = loadBridge();
  const ws = await env.open();
  let pending = fetch("https://example.com/zero");
  let post = await ws.nextPost("fetch");
  ws.respond(post.id, { status: 0 });
  await assert.rejects(pending, TypeError);
  assert.deepEqual(ws.cancels().map((message) => message.id), [post.id]);

  pending = fetch("https://example.com/odd");
  post = await ws.nextPost("fetch");
  ws.respond(post.id, { status: 799, statusText: "Odd" });
  const response = await pending;
  assert.equal(response.status, 799);
  assert.equal(response.ok, false);
  ws.pushBinary(post.id, "x", true);
  ws.finish(post.id);
  assert.equal(await response.text(), "x");
});

test("cache modes pass through, including only-if-cached and Apple's names", async () => {
  const env = loadBridge();
  const ws = await env.open();
  for (const cache of ["no-store", "only-if-cached", "returnCacheDataElseLoad"]) {
    const pending = fetch("https://example.com/c", { cache });
    const post = await ws.nextPost("fetch");
    assert.equal(post.body.cache, cache);
    ws.fail(post.id, "not_cached");
    await assert.rejects(pending, { code: "not_cached" });
  }
  const pending = fetch("https://example.com/c");
  const post = await ws.nextPost("fetch");
  assert.equal("cache" in post.body, false);
  ws.fail(post.id, "network");
  await assert.rejects(pending, TypeError);
});

test("timeout: the protocol maximum by default, init.timeout or data-timeout otherwise", async () => {
  let env = loadBridge();
  let ws = await env.open();
  let pending = fetch("https://example.com/t", { timeout: 1500 });
  let post = await ws.nextPost("fetch");
  assert.equal(post.body.timeout, 1500);
  ws.fail(post.id, "timeout");
  await assert.rejects(pending, { code: "timeout" });
  pending = fetch("https://example.com/t");
  post = await ws.nextPost("fetch");
  assert.equal(post.body.timeout, 86400000);
  ws.fail(post.id, "network");
  await assert.rejects(pending, TypeError);

  env = loadBridge({ attributes: { "data-timeout": "5000" } });
  ws = await env.open();
  pending = fetch("https://example.com/t");
  post = await ws.nextPost("fetch");
  assert.equal(post.body.timeout, 5000);
  ws.fail(post.id, "network");
  await assert.rejects(pending, TypeError);
});

test("data:, blob: and the broker's own origin go to the native fetch", async () => {
  const env = loadBridge();
  const ws = await env.open();
  for (const url of ["data:text/plain,hi", "blob:http://page.test/1234", "http://127.0.0.1:8787/examples/x.json"]) {
    const response = await fetch(url);
    assert.equal(await response.text(), "from the native fetch");
  }
  assert.equal(env.nativeCalls.length, 3);
  assert.equal(ws.posts("fetch").length, 0);
});

test("data-exclude and data-include decide which URLs are bridged", async () => {
  const env = loadBridge({ attributes: { "data-include": "https://api.example.com/ https://*.cdn.test/*", "data-exclude": "https://api.example.com/private/" } });
  const ws = await env.open();
  await fetch("https://api.example.com/private/key");
  await fetch("https://elsewhere.test/");
  assert.equal(env.nativeCalls.length, 2);
  const bridged = ["https://api.example.com/public", "https://img.cdn.test/a.png"].map((url) => fetch(url));
  const first = await ws.nextPost("fetch");
  const second = await ws.nextPost("fetch");
  assert.equal(first.body.url, "https://api.example.com/public");
  assert.equal(second.body.url, "https://img.cdn.test/a.png");
  ws.fail(first.id, "network");
  ws.fail(second.id, "network");
  await Promise.allSettled(bridged);
  assert.equal(env.nativeCalls.length, 2);
});

test("data-patch=none leaves fetch alone; BridgeBroker.fetch still bridges; patch() turns it on", async () => {
  const env = loadBridge({ attributes: { "data-patch": "none" } });
  const ws = await env.open();
  assert.equal(globalThis.fetch, env.nativeFetch);
  assert.deepEqual(env.bridge.patched, { fetch: false, xhr: false, eventSource: false });
  const pending = env.bridge.fetch("https://example.com/explicit");
  const post = await ws.nextPost("fetch");
  assert.equal(post.body.url, "https://example.com/explicit");
  ws.fail(post.id, "network");
  await assert.rejects(pending, TypeError);

  env.bridge.patch("fetch");
  assert.notEqual(globalThis.fetch, env.nativeFetch);
  assert.deepEqual(env.bridge.patched, { fetch: true, xhr: false, eventSource: false });
  env.bridge.unpatch();
  assert.equal(globalThis.fetch, env.nativeFetch);
});

test("invalid requests reject like the browser's fetch", async () => {
  const env = loadBridge();
  await env.open();
  await assert.rejects(fetch("https://example.com/", { method: "GET", body: "x" }), TypeError);
  await assert.rejects(fetch("https://example.com/", { method: "CONNECT" }), TypeError);
  await tick();
});

test("a whole-response frame (head and body in one) resolves the fetch with a Response holding the body", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const pending = fetch("https://cdn.example.com/app.css");
  const post = await ws.nextPost("fetch");
  assert.equal(post.body.whole, 256 * 1024, "fetch takes small complete responses as one frame");
  const head = {
    url: "https://cdn.example.com/app.css", status: 200, statusText: "OK", redirected: false,
    headers: [["content-type", "text/css"], ["age", "3"]], bodyEncoding: "binary", body: null, bodyBytes: 11, cache: { status: "hit", age: 3 },
  };
  ws.pushWhole(post.id, head, "body{x:1;} ");
  const response = await pending;
  assert.equal(response.status, 200);
  assert.equal(response.url, "https://cdn.example.com/app.css");
  assert.equal(response.headers.get("age"), "3");
  assert.deepEqual(response.bridge.cache, { status: "hit", age: 3 });
  assert.throws(() => response.headers.set("x", "1"), TypeError, "headers stay immutable");
  const clone = response.clone();
  assert.equal(await response.text(), "body{x:1;} ");
  assert.equal(await clone.text(), "body{x:1;} ");
  // The post is over: the next fetch gets the next id and nothing is left in flight.
  const next = fetch("https://cdn.example.com/empty");
  const second = await ws.nextPost("fetch");
  ws.pushWhole(second.id, { ...head, url: "https://cdn.example.com/empty", bodyBytes: 0 }, "");
  const empty = await next;
  assert.equal((await empty.arrayBuffer()).byteLength, 0);
});

test("a whole response is read from its bytes once; after that every reader, clone() and body fail as a used body does", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const head = {
    url: "https://cdn.example.com/data.json", status: 200, statusText: "OK", redirected: false,
    headers: [["content-type", "application/json"]], bodyEncoding: "binary", body: null, bodyBytes: 9,
  };
  const whole = async () => {
    const pending = fetch("https://cdn.example.com/data.json");
    const post = await ws.nextPost("fetch");
    ws.pushWhole(post.id, head, '{"a":[1]}');
    return pending;
  };
  for (const [reader, expected] of [["json", { a: [1] }], ["text", '{"a":[1]}'], ["arrayBuffer", 9], ["bytes", 9]]) {
    const response = await whole();
    assert.ok(response instanceof Response && response.constructor === Response, "a Response, whose constructor is Response");
    assert.deepEqual(Object.getOwnPropertyNames(response), [], "nothing defined on the instance");
    if (typeof response[reader] !== "function") continue;
    const value = await response[reader]();
    assert.deepEqual(reader === "arrayBuffer" || reader === "bytes" ? value.byteLength : value, expected, reader);
    assert.equal(response.bodyUsed, true, reader);
    for (const again of ["text", "json", "arrayBuffer", "blob"]) await assert.rejects(response[again](), TypeError, `${reader}, then ${again}`);
    assert.throws(() => response.clone(), TypeError, `${reader}, then clone()`);
    assert.throws(() => response.body.getReader(), TypeError, `${reader}, then the body's reader`);
  }
  // A read from the bytes gives a copy: changing it changes nothing a clone reads.
  const first = await whole();
  const copy = first.clone();
  new Uint8Array(await first.arrayBuffer()).fill(0);
  assert.equal(await copy.text(), '{"a":[1]}');
  // The body taken first: the real body is read, and then nothing else.
  const streamed = await whole();
  const chunks = [];
  for await (const chunk of streamed.body) chunks.push(...chunk);
  assert.equal(new TextDecoder().decode(Uint8Array.from(chunks)), '{"a":[1]}');
  assert.equal(streamed.bodyUsed, true);
  await assert.rejects(streamed.text(), TypeError);
  // Something else read the real body (as the Cache API does): the bytes are not read again.
  const elsewhere = await whole();
  assert.equal(await Response.prototype.text.call(elsewhere), '{"a":[1]}');
  assert.equal(elsewhere.bodyUsed, true);
  await assert.rejects(elsewhere.arrayBuffer(), TypeError);
  // blob() reads the real body, with its type.
  const blob = await (await whole()).blob();
  assert.equal(blob.type, "application/json");
  assert.equal(await blob.text(), '{"a":[1]}');
});

test("a batch frame of whole responses resolves each fetch in order; a malformed one is reported and the rest wait on", async () => {
  const env = loadBridge();
  const errors = [];
  env.bridge.on("error", (error) => errors.push(error.code));
  const ws = await env.open();
  const head = (name, bytes) => ({ url: `https://cdn.example.com/${name}`, status: 200, statusText: "OK", redirected: false,
    headers: [["content-type", "text/plain"]], bodyEncoding: "binary", body: null, bodyBytes: bytes, cache: { status: "hit", age: 0 } });
  const names = ["a", "b", "c"];
  const pending = names.map((name) => fetch(`https://cdn.example.com/${name}`));
  const posts = [];
  for (const _ of names) posts.push(await ws.nextPost("fetch"));
  assert.ok(posts.every((post) => post.body.batch === true && post.body.whole === 256 * 1024), "fetch lets its whole responses come joined");
  const order = [];
  pending.forEach((promise, index) => promise.then(() => order.push(names[index])));
  ws.pushBatch([[posts[1].id, head("b", 2), "bb"], [posts[0].id, head("a", 1), "a"]]);
  const [a, b] = await Promise.all(pending.slice(0, 2));
  assert.deepEqual(order, ["b", "a"], "in the batch's order");
  assert.equal(await a.text(), "a");
  assert.equal(await b.text(), "bb");
  // A length that runs past the batch's end: reported, nothing resolved from it.
  const cut = new Uint8Array(8);
  new DataView(cut.buffer).setUint32(0, 999);
  ws.onmessage({ data: encodeFrame(0, cut, true, 3).buffer });
  // A frame of another kind inside a batch: reported too.
  const body = encodeFrame(posts[2].id, "x", true, 1);
  const wrong = new Uint8Array(4 + body.byteLength);
  new DataView(wrong.buffer).setUint32(0, body.byteLength);
  wrong.set(body, 4);
  ws.onmessage({ data: encodeFrame(0, wrong, true, 3).buffer });
  assert.deepEqual(errors, ["bad_message", "bad_message"]);
  ws.pushBatch([[posts[2].id, head("c", 3), "ccc"]]);
  assert.equal(await (await pending[2]).text(), "ccc");
});

test("a whole response to a fetch with a signal still fails its unread body on abort", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const controller = new AbortController();
  const pending = fetch("https://cdn.example.com/a.js", { signal: controller.signal });
  const post = await ws.nextPost("fetch");
  ws.pushWhole(post.id, { url: "https://cdn.example.com/a.js", status: 200, statusText: "OK", redirected: false, headers: [],
    bodyEncoding: "binary", body: null, bodyBytes: 3, cache: { status: "hit", age: 0 } }, "abc");
  const response = await pending;
  controller.abort();
  await assert.rejects(response.text(), (error) => error.name === "AbortError");
  // And without the abort the same body reads whole.
  const again = fetch("https://cdn.example.com/b.js", { signal: new AbortController().signal });
  const second = await ws.nextPost("fetch");
  ws.pushWhole(second.id, { url: "https://cdn.example.com/b.js", status: 200, statusText: "OK", redirected: false, headers: [],
    bodyEncoding: "binary", body: null, bodyBytes: 3, cache: { status: "hit", age: 0 } }, "xyz");
  assert.equal(await (await again).text(), "xyz");
});

test("a whole-response frame whose head is cut or not JSON is reported, and the fetch waits on", async () => {
  const env = loadBridge();
  const errors = [];
  env.bridge.on("error", (error) => errors.push(error.code));
  const ws = await env.open();
  const pending = fetch("https://cdn.example.com/c.js");
  const post = await ws.nextPost("fetch");
  const cut = new Uint8Array(16);
  new DataView(cut.buffer).setUint32(0, 999);
  ws.onmessage({ data: encodeFrame(post.id, cut, true, 2).buffer });
  ws.pushWhole(post.id, "not an object", "");
  assert.deepEqual(errors, ["bad_message", "bad_message"]);
  ws.pushWhole(post.id, { url: "https://cdn.example.com/c.js", status: 404, statusText: "", redirected: false, headers: [],
    bodyEncoding: "binary", body: null, bodyBytes: 2, cache: { status: "hit", age: 0 } }, "no");
  const response = await pending;
  assert.equal(response.status, 404);
  assert.equal(await response.text(), "no");
});

test("BridgeBroker.post of a fetch with whole: a whole frame comes through onEvent and onBinary as the usual frames would", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const seen = [];
  const reply = env.bridge.post("fetch", { url: "https://cdn.example.com/x", responseBody: "binary", whole: 1024 }, {
    onEvent: (name, body) => seen.push([name, body.status]),
    onBinary: (bytes, end) => seen.push(["binary", Buffer.from(bytes).toString(), end]),
  });
  const post = await ws.nextPost("fetch");
  const head = { url: "https://cdn.example.com/x", status: 200, statusText: "", redirected: false, headers: [],
    bodyEncoding: "binary", body: null, bodyBytes: 2, cache: { status: "hit", age: 1 } };
  ws.pushWhole(post.id, head, "ok");
  assert.deepEqual(await reply, head);
  assert.deepEqual(seen, [["response", 200], ["binary", "ok", true]]);
});

test("fetch(url) with no init posts what Request gives it: the same as fetch(url, {}), which builds one", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const urls = ["https://api.example.com/a?x=1#frag", "/relative/path", "http://page.test/same-host"];
  for (const url of urls) {
    const first = (await fetchAnswered(ws, url)).post;
    const second = (await fetchAnswered(ws, url, {})).post;
    assert.deepEqual({ ...first.body, group: null }, { ...second.body, group: null }, url);
  }
  // A URL with credentials is refused as Request refuses it.
  await assert.rejects(fetch("https://user:secret@api.example.com/"), TypeError);
  await tick(5);
  assert.equal(ws.posts("fetch").length, urls.length * 2);
});

test("a response of the document's origin is basic, whatever form its URL takes; any other origin's is cors", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const cases = [
    ["http://page.test/data", "basic"],
    ["http://page.test:80/data", "basic"], // the default port, written out: parsed, same origin
    ["HTTP://PAGE.TEST/data", "basic"],
    ["http://page.test.other.example/data", "cors"],
    ["http://page.test:8080/data", "cors"],
    ["https://page.test/data", "cors"],
  ];
  for (const [url, type] of cases) {
    const { response } = await fetchAnswered(ws, "http://page.test/ask", undefined, { url });
    assert.equal(response.type, type, url);
  }
});

test("a bridged fetch(url) parses its own URL twice at most, not once per question about the page or the broker", async () => {
  const env = loadBridge();
  const ws = await env.open();
  // The first request works out what the page's URL and the broker's say, once.
  await fetchAnswered(ws, "http://page.test/one");
  const NativeURL = globalThis.URL;
  let parses = 0;
  globalThis.URL = class extends NativeURL {
    constructor(...args) {
      super(...args);
      parses++;
    }
  };
  try {
    // To the page's host (so its cookies are asked about), with no init (so no Request is built).
    const pending = fetch("http://page.test/two");
    const post = await ws.nextPost("fetch");
    assert.equal(post.body.url, "http://page.test/two");
    assert.ok(parses <= 2, `${parses} URL parses before the post went (11 with the shim of 2026-11-28 morning)`);
    ws.respond(post.id);
    ws.finish(post.id);
    await pending;
  } finally {
    globalThis.URL = NativeURL;
  }
});
