// The shim's differences from Chromium's own networking that issue #13 removed, one test each; the
// differential suite (tests/browser/test_differential.py) checks the same against the real browser.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadBridge, tick } from "../test-support/helpers.mjs";

const UPLOAD_EVENTS = ["loadstart", "progress", "load", "error", "abort", "timeout", "loadend"];
const XHR_EVENTS = ["readystatechange", "loadstart", "progress", "load", "error", "abort", "timeout", "loadend"];

function record(xhr) {
  const log = [];
  for (const type of XHR_EVENTS) {
    xhr.addEventListener(type, (event) => log.push(type === "readystatechange" ? `rs${xhr.readyState}` : `${type} ${event.loaded}/${event.total}`));
  }
  for (const type of UPLOAD_EVENTS) xhr.upload.addEventListener(type, (event) => log.push(`up:${type} ${event.loaded}/${event.total}`));
  return log;
}

const loadend = (xhr) => new Promise((resolve) => xhr.addEventListener("loadend", resolve, { once: true }));

test("aborting after the whole body arrived, before it is read, rejects the read with the signal's reason", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const controller = new AbortController();
  const pending = fetch("https://api.example.com/all", { signal: controller.signal });
  const post = await ws.nextPost("fetch");
  ws.respond(post.id);
  const response = await pending;
  ws.pushBinary(post.id, "every byte", true);
  ws.finish(post.id, { bytes: 10 });
  await tick(10);
  const reason = new RangeError("the page's own reason");
  controller.abort(reason);
  await assert.rejects(response.text(), (error) => error === reason);
  assert.equal(ws.cancels().length, 0, "the exchange was over: nothing to cancel");
});

test("aborting during the read rejects text(), json() and arrayBuffer() with the AbortError, not a TypeError", async () => {
  for (const reader of ["text", "json", "arrayBuffer", "blob"]) {
    const env = loadBridge();
    const ws = await env.open();
    const controller = new AbortController();
    const pending = fetch("https://api.example.com/slow", { signal: controller.signal });
    const post = await ws.nextPost("fetch");
    ws.respond(post.id);
    const response = await pending;
    ws.pushBinary(post.id, "partial");
    const read = response[reader]();
    await tick(5);
    controller.abort();
    await assert.rejects(read, (error) => error.name === "AbortError" && error instanceof DOMException, reader);
    assert.equal(ws.cancels().length, 1, "the post in flight is cancelled");
  }
});

test("a body read after it was read fully is not mapped to the abort reason", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const controller = new AbortController();
  const pending = fetch("https://api.example.com/done", { signal: controller.signal });
  const post = await ws.nextPost("fetch");
  ws.respond(post.id);
  const response = await pending;
  ws.pushBinary(post.id, "done", true);
  ws.finish(post.id, { bytes: 4 });
  assert.equal(await response.text(), "done");
  controller.abort();
  await assert.rejects(response.text(), (error) => error instanceof TypeError, "a used body is a TypeError, as in the browser");
});

test("a fetched response's headers are immutable, clones included", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const pending = fetch("https://api.example.com/h");
  const post = await ws.nextPost("fetch");
  ws.respond(post.id, { headers: [["x-one", "1"]] });
  const response = await pending;
  for (const target of [response, response.clone()]) {
    assert.throws(() => target.headers.set("x-one", "2"), TypeError);
    assert.throws(() => target.headers.append("x-two", "2"), TypeError);
    assert.throws(() => target.headers.delete("x-one"), TypeError);
    assert.equal(target.headers.get("x-one"), "1");
    assert.ok(target.headers instanceof Headers);
  }
});

test("a ReadableStream body without duplex: 'half' fails as Request's constructor does", async () => {
  const env = loadBridge();
  await env.open();
  const stream = new ReadableStream({ start(controller) { controller.close(); } });
  await assert.rejects(fetch("https://api.example.com/u", { method: "POST", body: stream }), TypeError);
});

test("204, 205, 304 and HEAD responses have a null body, also when the reply comes without a response event", async () => {
  for (const [method, status] of [["GET", 204], ["GET", 205], ["GET", 304], ["HEAD", 200]]) {
    const env = loadBridge();
    const ws = await env.open();
    const pending = fetch("https://api.example.com/none", { method });
    const post = await ws.nextPost("fetch");
    ws.reply(post.id, { status, statusText: "", url: "https://api.example.com/none", headers: [], bodyEncoding: "none", body: null });
    const response = await pending;
    assert.equal(response.status, status);
    assert.equal(response.body, null, `${method} ${status}`);
    assert.equal(await response.text(), "");
  }
});

test("XHR: no progress event for a response without body bytes", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const xhr = new XMLHttpRequest();
  const log = record(xhr);
  xhr.open("GET", "https://api.example.com/empty");
  xhr.send();
  const post = await ws.nextPost("fetch");
  ws.respond(post.id, { status: 204, statusText: "No Content", headers: [] });
  ws.finish(post.id, { status: 204 });
  await loadend(xhr);
  assert.deepEqual(log, ["rs1", "loadstart 0/0", "rs2", "rs4", "load 0/0", "loadend 0/0"]);
});

test("XHR: upload progress is reported every 100 ms, and load with the report of the last byte", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const xhr = new XMLHttpRequest();
  const log = record(xhr);
  xhr.open("POST", "https://api.example.com/up");
  xhr.send("0123456789");
  const post = await ws.nextPost("fetch");
  ws.event(post.id, "progress", { phase: "upload", loaded: 4, total: 10 });
  await tick(150);
  assert.deepEqual(log, ["rs1", "loadstart 0/0", "up:loadstart 0/10", "up:progress 4/10"]);
  ws.event(post.id, "progress", { phase: "upload", loaded: 10, total: 10 });
  await tick(150);
  assert.deepEqual(log.slice(4), ["up:progress 10/10", "up:load 10/10", "up:loadend 10/10"]);
  ws.respond(post.id);
  ws.finish(post.id);
  await loadend(xhr);
  assert.deepEqual(log.slice(7), ["rs2", "rs4", "load 0/0", "loadend 0/0"]);
});

test("XHR: a timeout before the first upload report fires upload timeout and loadend only, as Chromium", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const xhr = new XMLHttpRequest();
  const log = record(xhr);
  xhr.open("POST", "https://api.example.com/hang");
  xhr.timeout = 30;
  xhr.send("up");
  const post = await ws.nextPost("fetch");
  ws.event(post.id, "progress", { phase: "upload", loaded: 2, total: 2 });
  await loadend(xhr);
  await tick(150);
  assert.deepEqual(log, ["rs1", "loadstart 0/0", "up:loadstart 0/2", "rs4", "up:timeout 0/0", "up:loadend 0/0", "timeout 0/0", "loadend 0/0"]);
});

test("XHR: a network error after the whole body was sent reports the upload first, as Chromium", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const xhr = new XMLHttpRequest();
  const log = record(xhr);
  xhr.open("POST", "https://api.example.com/reset");
  xhr.send("up");
  const post = await ws.nextPost("fetch");
  ws.event(post.id, "progress", { phase: "upload", loaded: 2, total: 2 });
  ws.fail(post.id, "network");
  await loadend(xhr);
  assert.deepEqual(log, ["rs1", "loadstart 0/0", "up:loadstart 0/2", "up:progress 2/2", "up:load 2/2", "up:loadend 2/2",
    "rs4", "error 0/0", "loadend 0/0"]);
});

test("XHR: a byte order mark picks the text encoding over the charset", async () => {
  for (const [bytes, type] of [[[0xff, 0xfe, 0x68, 0x00, 0x69, 0x00], "text/plain"], [[0xfe, 0xff, 0x00, 0x68, 0x00, 0x69], "text/plain; charset=iso-8859-1"], [[0xef, 0xbb, 0xbf, 0x68, 0x69], "text/plain; charset=windows-1252"]]) {
    const env = loadBridge();
    const ws = await env.open();
    const xhr = new XMLHttpRequest();
    xhr.open("GET", "https://api.example.com/bom");
    xhr.send();
    const post = await ws.nextPost("fetch");
    ws.respond(post.id, { headers: [["content-type", type]] });
    ws.pushBinary(post.id, Buffer.from(bytes.slice(0, 1)));
    ws.pushBinary(post.id, Buffer.from(bytes.slice(1)), true);
    ws.finish(post.id);
    await loadend(xhr);
    assert.equal(xhr.responseText, "hi", type);
  }
});

test("fetch and XHR ask for header bytes as Latin-1 and give them as they come: one code unit per byte", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const pending = fetch("https://api.example.com/bytes");
  const post = await ws.nextPost("fetch");
  assert.equal(post.body.headerEncoding, "latin1");
  ws.respond(post.id, { status: 299, statusText: "Tr\u00c3\u00a8s bien", headers: [["x-name", "caf\u00e9 \u00c3\u00a9"]] });
  const response = await pending;
  assert.equal(response.statusText, "Tr\u00c3\u00a8s bien");
  assert.equal(response.headers.get("x-name"), "caf\u00e9 \u00c3\u00a9");

  const xhr = new XMLHttpRequest();
  xhr.open("GET", "https://api.example.com/bytes");
  xhr.send();
  const second = await ws.nextPost("fetch");
  assert.equal(second.body.headerEncoding, "latin1");
  ws.respond(second.id, { status: 200, statusText: "Fine", headers: [["x-name", "\u00ff"]] });
  ws.finish(second.id);
  await loadend(xhr);
  assert.equal(xhr.getResponseHeader("x-name"), "\u00ff");
  assert.equal(xhr.statusText, "Fine");
});

test("flow control: fetch asks for a window and grants credit as the page reads, only to a broker that takes it", async () => {
  const MiB = 1024 * 1024;
  const env = loadBridge();
  const ws = await env.open({}, { features: ["credit"] });
  const pending = fetch("https://api.example.com/huge");
  const post = await ws.nextPost("fetch");
  assert.equal(post.body.window, 4 * MiB);
  ws.respond(post.id, { headers: [["content-type", "application/octet-stream"]] });
  const response = await pending;
  const reader = response.body.getReader();
  for (let i = 0; i < 4; i++) ws.pushBinary(post.id, new Uint8Array(MiB));
  await tick(5);
  const credits = () => ws.texts.filter((message) => message.type === "credit");
  assert.deepEqual(credits(), [], "nothing read, nothing granted: the broker stops after the 4 MiB window");
  assert.equal((await reader.read()).value.byteLength, MiB);
  await tick(5);
  assert.deepEqual(credits(), [{ type: "credit", id: post.id, bytes: MiB }], "the mebibyte read is granted back");
  await reader.cancel();

  const old = loadBridge();
  const oldWs = await old.open();
  const second = fetch("https://api.example.com/huge");
  const oldPost = await oldWs.nextPost("fetch");
  oldWs.respond(oldPost.id);
  const oldReader = (await second).body.getReader();
  oldWs.pushBinary(oldPost.id, new Uint8Array(MiB));
  await oldReader.read();
  await tick(5);
  assert.equal(oldWs.texts.filter((message) => message.type === "credit").length, 0, "a broker without the feature gets no credit frames");
});
