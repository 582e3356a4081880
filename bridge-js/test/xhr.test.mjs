import { test } from "node:test";
import assert from "node:assert/strict";
import { loadBridge, waitFor, tick, parseMultipart, FakeNativeXHR } from "../test-support/helpers.mjs";

const XHR_EVENTS = ["readystatechange", "loadstart", "progress", "load", "error", "abort", "timeout", "loadend"];
const UPLOAD_EVENTS = ["loadstart", "progress", "load", "error", "abort", "timeout", "loadend"];

function record(xhr, { upload = false } = {}) {
  const log = [];
  const describe = (prefix, type, event) => {
    if (type === "readystatechange") return `readystatechange ${xhr.readyState}`;
    if (type === "loadstart" || type === "progress" || type === "load" || type === "loadend") return `${prefix}${type} ${event.loaded}/${event.total}`;
    return `${prefix}${type}`;
  };
  for (const type of XHR_EVENTS) xhr.addEventListener(type, (event) => log.push(describe("", type, event)));
  if (upload) for (const type of UPLOAD_EVENTS) xhr.upload.addEventListener(type, (event) => log.push(describe("upload.", type, event)));
  return log;
}

const loadend = (xhr) => new Promise((resolve) => xhr.addEventListener("loadend", resolve, { once: true }));

test("the patched XMLHttpRequest replaces the global and keeps its constants", () => {
  const env = loadBridge();
  assert.equal(globalThis.XMLHttpRequest, env.bridge.XMLHttpRequest);
  assert.equal(XMLHttpRequest.name, "XMLHttpRequest");
  assert.equal(XMLHttpRequest.DONE, 4);
  const xhr = new XMLHttpRequest();
  assert.equal(xhr.LOADING, 3);
  assert.equal(xhr.readyState, 0);
  assert.equal(Object.prototype.toString.call(xhr), "[object XMLHttpRequest]");
});

test("GET: readystatechange 1, 2, 3 per chunk, 4, with loadstart, progress, load and loadend in order", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const xhr = new XMLHttpRequest();
  const log = record(xhr);
  xhr.open("GET", "https://api.example.com/text");
  assert.deepEqual(log, ["readystatechange 1"]);
  xhr.send();
  assert.deepEqual(log.slice(1), ["loadstart 0/0"], "loadstart fires inside send()");
  const post = await ws.nextPost("fetch");
  assert.equal(post.body.method, "GET");
  assert.equal(post.body.responseBody, "binary");
  ws.respond(post.id, { status: 200, headers: [["content-type", "text/plain"], ["content-length", "10"]], url: "https://api.example.com/text#x" });
  assert.equal(xhr.readyState, 2);
  assert.equal(xhr.status, 200);
  assert.equal(xhr.responseURL, "https://api.example.com/text");
  assert.equal(xhr.responseText, "", "no text before LOADING");
  ws.pushBinary(post.id, "hello");
  assert.equal(xhr.responseText, "hello", "text is readable while LOADING");
  ws.pushBinary(post.id, "world", true);
  ws.finish(post.id, { bytes: 10 });
  await loadend(xhr);
  assert.deepEqual(log, [
    "readystatechange 1",
    "loadstart 0/0",
    "readystatechange 2",
    "readystatechange 3",
    "progress 5/10",
    "readystatechange 3",
    "progress 10/10",
    "progress 10/10",
    "readystatechange 4",
    "load 10/10",
    "loadend 10/10",
  ]);
  assert.equal(xhr.responseText, "helloworld");
  assert.equal(xhr.response, "helloworld");
});

test("POST with upload listeners: upload progress, load, loadend come before headers (reported at the latest then)", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const xhr = new XMLHttpRequest();
  const log = record(xhr, { upload: true });
  const onload = [];
  xhr.upload.onload = (event) => onload.push(event.type);
  xhr.open("POST", "https://api.example.com/upload");
  xhr.setRequestHeader("X-Kind", "test");
  xhr.send("0123456789");
  const post = await ws.nextPost("fetch");
  assert.deepEqual(post.body.body, { binary: true, length: 10 });
  assert.equal((await ws.bodyOf(post.id)).toString(), "0123456789");
  assert.deepEqual(post.body.headers, [["X-Kind", "test"], ["Content-Type", "text/plain;charset=UTF-8"]]);
  ws.event(post.id, "progress", { phase: "upload", loaded: 4, total: 10 });
  ws.event(post.id, "progress", { phase: "upload", loaded: 10, total: 10 });
  ws.respond(post.id, { status: 201, statusText: "Created" });
  ws.event(post.id, "progress", { phase: "download", loaded: 2, total: 2 });
  ws.pushBinary(post.id, "ok", true);
  ws.finish(post.id, { status: 201, bytes: 2 });
  await loadend(xhr);
  assert.deepEqual(log, [
    "readystatechange 1",
    "loadstart 0/0",
    "upload.loadstart 0/10",
    // The broker's progress came within Chromium's 100 ms report interval: one report, at the response.
    "upload.progress 10/10",
    "upload.load 10/10",
    "upload.loadend 10/10",
    "readystatechange 2",
    "readystatechange 3",
    "progress 2/2",
    "progress 2/2",
    "readystatechange 4",
    "load 2/2",
    "loadend 2/2",
  ]);
  assert.deepEqual(onload, ["load"]);
  assert.equal(xhr.status, 201);
  assert.equal(xhr.statusText, "Created");
});

test("without upload listeners no upload events fire", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const xhr = new XMLHttpRequest();
  const log = record(xhr);
  xhr.open("PUT", "https://api.example.com/u");
  xhr.send(new Uint8Array([1, 2, 3]));
  const post = await ws.nextPost("fetch");
  assert.deepEqual([...(await ws.bodyOf(post.id))], [1, 2, 3]);
  ws.event(post.id, "progress", { phase: "upload", loaded: 3, total: 3 });
  ws.respond(post.id);
  ws.finish(post.id);
  await loadend(xhr);
  assert.equal(log.filter((entry) => entry.startsWith("upload.")).length, 0);
  assert.deepEqual(log.slice(-3), ["readystatechange 4", "load 0/0", "loadend 0/0"]);
});

test("FormData is sent as multipart whose size is known at send()", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const form = new FormData();
  form.append("title", 'a "quoted"\rname');
  form.append("file", new Blob([new Uint8Array([0, 255, 10])], { type: "application/octet-stream" }), "data.bin");
  const xhr = new XMLHttpRequest();
  const starts = [];
  xhr.upload.addEventListener("loadstart", (event) => starts.push(event.total));
  xhr.open("POST", "https://api.example.com/form");
  xhr.send(form);
  const post = await ws.nextPost("fetch");
  const contentType = post.body.headers.find((pair) => pair[0] === "Content-Type")[1];
  const bytes = await ws.bodyOf(post.id);
  assert.deepEqual(starts, [bytes.length]);
  assert.equal(post.body.body.length, bytes.length);
  const parts = parseMultipart(bytes, contentType);
  assert.equal(parts[0].head, 'Content-Disposition: form-data; name="title"');
  assert.equal(parts[0].body.toString(), 'a "quoted"\r\nname');
  assert.equal(parts[1].head, 'Content-Disposition: form-data; name="file"; filename="data.bin"\r\nContent-Type: application/octet-stream');
  assert.deepEqual([...parts[1].body], [0, 255, 10]);
  ws.fail(post.id, "network");
  await loadend(xhr);
});

test("URLSearchParams and an author Content-Type", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const xhr = new XMLHttpRequest();
  xhr.open("POST", "https://api.example.com/q");
  xhr.send(new URLSearchParams({ q: "a b" }));
  let post = await ws.nextPost("fetch");
  assert.equal((await ws.bodyOf(post.id)).toString(), "q=a+b");
  assert.deepEqual(post.body.headers, [["Content-Type", "application/x-www-form-urlencoded;charset=UTF-8"]]);
  ws.fail(post.id, "network");
  await loadend(xhr);

  const json = new XMLHttpRequest();
  json.open("POST", "https://api.example.com/q");
  json.setRequestHeader("content-type", "application/json");
  json.send('{"a":1}');
  post = await ws.nextPost("fetch");
  assert.deepEqual(post.body.headers, [["content-type", "application/json"]]);
  ws.fail(post.id, "network");
  await loadend(json);
});

async function fetchWithType(ws, responseType, body, contentType, configure) {
  const xhr = new XMLHttpRequest();
  xhr.open("GET", "https://api.example.com/typed");
  xhr.responseType = responseType;
  if (configure) configure(xhr);
  xhr.send();
  const post = await ws.nextPost("fetch");
  ws.respond(post.id, { headers: contentType ? [["content-type", contentType]] : [] });
  assert.equal(xhr.response, responseType === "" || responseType === "text" ? "" : null, "no response object before DONE");
  ws.pushBinary(post.id, body, true);
  ws.finish(post.id);
  await loadend(xhr);
  return xhr;
}

test("responseType '', text, json, arraybuffer, blob and document", async () => {
  const env = loadBridge();
  const ws = await env.open();

  let xhr = await fetchWithType(ws, "", "plain", "text/plain");
  assert.equal(xhr.response, "plain");
  assert.equal(xhr.responseXML, null, "text/plain is no XML document");

  xhr = await fetchWithType(ws, "text", "ünïcode", "text/plain; charset=utf-8");
  assert.equal(xhr.responseText, "ünïcode");

  xhr = await fetchWithType(ws, "json", '{"n":[1,2]}', "application/json");
  assert.deepEqual(xhr.response, { n: [1, 2] });
  assert.throws(() => xhr.responseText, { name: "InvalidStateError" });
  xhr = await fetchWithType(ws, "json", "{broken", "application/json");
  assert.equal(xhr.response, null);

  xhr = await fetchWithType(ws, "arraybuffer", new Uint8Array([1, 2, 250]), "application/octet-stream");
  assert.ok(xhr.response instanceof ArrayBuffer);
  assert.deepEqual([...new Uint8Array(xhr.response)], [1, 2, 250]);

  xhr = await fetchWithType(ws, "blob", "blob!", "image/png");
  assert.ok(xhr.response instanceof Blob);
  assert.equal(xhr.response.type, "image/png");
  assert.equal(await xhr.response.text(), "blob!");

  xhr = await fetchWithType(ws, "document", "<p>hi</p>", "text/html");
  assert.equal(xhr.response.type, "text/html");
  assert.equal(xhr.responseXML, xhr.response);
  xhr = await fetchWithType(ws, "", "<root/>", "application/xml");
  assert.equal(xhr.responseXML.type, "application/xml");
  assert.equal(xhr.responseXML.text, "<root/>");
  xhr = await fetchWithType(ws, "", "<p>html</p>", "text/html");
  assert.equal(xhr.responseXML, null, "HTML is parsed only for responseType document");
  xhr = await fetchWithType(ws, "document", "not xml", "application/xml");
  assert.equal(xhr.response, null, "a parse error gives null");
});

test("overrideMimeType changes the charset used for the text", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const xhr = await fetchWithType(ws, "", new Uint8Array([0x63, 0x61, 0x66, 0xe9]), "text/plain", (request) =>
    request.overrideMimeType("text/plain; charset=windows-1252"),
  );
  assert.equal(xhr.responseText, "café");
});

test("response headers: lower-case, sorted, duplicates combined, CRLF; Set-Cookie hidden", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const xhr = new XMLHttpRequest();
  xhr.open("GET", "https://api.example.com/h");
  assert.equal(xhr.getAllResponseHeaders(), "");
  assert.equal(xhr.getResponseHeader("content-type"), null);
  xhr.send();
  const post = await ws.nextPost("fetch");
  ws.respond(post.id, {
    headers: [["X-B", "2"], ["content-type", "text/plain"], ["x-b", "3"], ["Set-Cookie", "a=1"], ["a-first", "1"]],
  });
  assert.equal(xhr.getAllResponseHeaders(), "a-first: 1\r\ncontent-type: text/plain\r\nx-b: 2, 3\r\n");
  assert.equal(xhr.getResponseHeader("X-b"), "2, 3");
  assert.equal(xhr.getResponseHeader("set-cookie"), null);
  assert.equal(xhr.getResponseHeader("missing"), null);
  ws.finish(post.id);
  await loadend(xhr);
});

test("setRequestHeader combines repeats, ignores forbidden names and rejects invalid ones", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const xhr = new XMLHttpRequest();
  assert.throws(() => xhr.setRequestHeader("A", "1"), { name: "InvalidStateError" });
  xhr.open("GET", "https://api.example.com/h");
  xhr.setRequestHeader("X-Many", "1");
  xhr.setRequestHeader("x-many", " 2 ");
  xhr.setRequestHeader("Cookie", "stolen=1");
  xhr.setRequestHeader("Sec-Fetch-Mode", "cors");
  assert.throws(() => xhr.setRequestHeader("bad name", "1"), { name: "SyntaxError" });
  assert.throws(() => xhr.setRequestHeader("X-Ok", "a\r\nInjected: 1"), { name: "SyntaxError" });
  xhr.send();
  assert.throws(() => xhr.setRequestHeader("Late", "1"), { name: "InvalidStateError" });
  const post = await ws.nextPost("fetch");
  assert.deepEqual(post.body.headers, [["X-Many", "1, 2"]]);
  ws.fail(post.id, "network");
  await loadend(xhr);
});

test("open() validates the method and URL like a browser", () => {
  loadBridge();
  const xhr = new XMLHttpRequest();
  assert.throws(() => xhr.open("GET"), TypeError);
  assert.throws(() => xhr.open("TRACE", "https://a.test/"), { name: "SecurityError" });
  assert.throws(() => xhr.open("GE T", "https://a.test/"), { name: "SyntaxError" });
  assert.throws(() => xhr.open("GET", "http://[bad"), { name: "SyntaxError" });
  xhr.open("post", "https://a.test/");
  assert.equal(xhr.readyState, 1);
});

test("a synchronous XHR through the broker fails at open() with InvalidAccessError", () => {
  loadBridge();
  const xhr = new XMLHttpRequest();
  assert.throws(() => xhr.open("GET", "https://api.example.com/sync", false), (error) => {
    assert.ok(error instanceof DOMException);
    assert.equal(error.name, "InvalidAccessError");
    assert.match(error.message, /synchronous XMLHttpRequest/);
    return true;
  });
  assert.throws(() => xhr.open("GET", "https://api.example.com/sync", undefined), { name: "InvalidAccessError" });
  assert.equal(xhr.readyState, 0);
});

test("a network error fires readystatechange 4, error and loadend with status 0", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const xhr = new XMLHttpRequest();
  const log = record(xhr, { upload: true });
  xhr.open("POST", "https://down.example.com/");
  xhr.send("x");
  const post = await ws.nextPost("fetch");
  ws.fail(post.id, "network", "refused");
  await loadend(xhr);
  assert.deepEqual(log, [
    "readystatechange 1",
    "loadstart 0/0",
    "upload.loadstart 0/1",
    "readystatechange 4",
    "upload.error",
    "upload.loadend 0/0",
    "error",
    "loadend 0/0",
  ]);
  assert.equal(xhr.status, 0);
  assert.equal(xhr.responseText, "");
});

test("timeout cancels the post and fires timeout; a broker timeout does the same", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const xhr = new XMLHttpRequest();
  const log = record(xhr);
  const ontimeout = [];
  xhr.ontimeout = (event) => ontimeout.push(event.type);
  xhr.open("GET", "https://slow.example.com/");
  xhr.timeout = 30;
  xhr.send();
  const post = await ws.nextPost("fetch");
  assert.equal(post.body.timeout, 30);
  ws.respond(post.id);
  await loadend(xhr);
  assert.deepEqual(log, ["readystatechange 1", "loadstart 0/0", "readystatechange 2", "readystatechange 4", "timeout", "loadend 0/0"]);
  assert.deepEqual(ontimeout, ["timeout"]);
  assert.deepEqual(ws.cancels(), [{ type: "cancel", id: post.id }]);
  assert.equal(xhr.status, 0);
  assert.equal(xhr.readyState, 4);

  const second = new XMLHttpRequest();
  const secondLog = record(second);
  second.open("GET", "https://slow.example.com/");
  second.send();
  const secondPost = await ws.nextPost("fetch");
  ws.fail(secondPost.id, "timeout");
  await loadend(second);
  assert.deepEqual(secondLog.slice(-3), ["readystatechange 4", "timeout", "loadend 0/0"]);
});

test("abort() cancels the post, fires abort and loadend, and leaves readyState 0", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const xhr = new XMLHttpRequest();
  const log = record(xhr);
  xhr.open("GET", "https://slow.example.com/");
  xhr.send();
  const post = await ws.nextPost("fetch");
  ws.respond(post.id);
  ws.pushBinary(post.id, "partial");
  xhr.abort();
  assert.deepEqual(log.slice(-3), ["readystatechange 4", "abort", "loadend 0/0"]);
  assert.equal(xhr.readyState, 0);
  assert.equal(xhr.status, 0);
  assert.deepEqual(ws.cancels(), [{ type: "cancel", id: post.id }]);
  ws.pushBinary(post.id, "late", true);
  ws.fail(post.id, "cancelled");
  await tick(5);
  assert.equal(log.filter((entry) => entry === "error").length, 0, "the cancelled reply is ignored");
});

test("open() during a request stops it silently and the object can be reused", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const xhr = new XMLHttpRequest();
  const log = record(xhr);
  xhr.open("GET", "https://a.example.com/1");
  xhr.send();
  const first = await ws.nextPost("fetch");
  xhr.open("GET", "https://a.example.com/2");
  assert.deepEqual(ws.cancels(), [{ type: "cancel", id: first.id }]);
  xhr.send();
  const second = await ws.nextPost("fetch");
  ws.respond(first.id);
  ws.respond(second.id);
  ws.pushBinary(second.id, "two", true);
  ws.finish(second.id);
  await loadend(xhr);
  assert.equal(xhr.responseText, "two");
  assert.equal(log.filter((entry) => entry === "abort").length, 0);
  assert.equal(log.filter((entry) => entry === "readystatechange 1").length, 1, "still OPENED: no second readystatechange");
});

test("on* handlers and listeners both run; responseType cannot change once loading", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const xhr = new XMLHttpRequest();
  const calls = [];
  xhr.onload = function (event) {
    calls.push(["onload", this === xhr, event.type]);
  };
  xhr.addEventListener("load", () => calls.push(["listener"]));
  xhr.onreadystatechange = () => calls.push(["rsc", xhr.readyState]);
  xhr.onreadystatechange = () => calls.push(["rsc2", xhr.readyState]);
  xhr.open("GET", "https://api.example.com/x");
  xhr.send();
  const post = await ws.nextPost("fetch");
  ws.respond(post.id);
  ws.pushBinary(post.id, "x");
  assert.throws(() => {
    xhr.responseType = "json";
  }, { name: "InvalidStateError" });
  ws.pushBinary(post.id, "", true);
  ws.finish(post.id);
  await loadend(xhr);
  assert.deepEqual(calls, [["rsc2", 1], ["rsc2", 2], ["rsc2", 3], ["rsc2", 4], ["onload", true, "load"], ["listener"]]);
  assert.equal(xhr.onload !== null, true);
});

test("requests carry the page-load group and the timeout default", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const xhr = new XMLHttpRequest();
  xhr.open("GET", "https://api.example.com/g");
  xhr.send();
  const post = await ws.nextPost("fetch");
  assert.equal(post.body.group, env.bridge.group);
  assert.equal(post.body.timeout, 86400000);
  ws.fail(post.id, "network");
  await loadend(xhr);
});

test("excluded URLs use the native XMLHttpRequest, with its events forwarded", async () => {
  const env = loadBridge({ attributes: { "data-exclude": "https://legacy.example.com/" } });
  const ws = await env.open();
  const xhr = new XMLHttpRequest();
  const log = record(xhr);
  xhr.responseType = "text";
  xhr.open("GET", "https://legacy.example.com/sync", false);
  const native = FakeNativeXHR.instances.at(-1);
  assert.deepEqual(native.opened, { method: "GET", url: "https://legacy.example.com/sync", async: false });
  xhr.setRequestHeader("X-A", "1");
  assert.deepEqual(native.headers, [["X-A", "1"]]);
  xhr.send("body");
  assert.equal(native.sentBody, "body");
  native.complete("native text");
  assert.equal(xhr.readyState, 4);
  assert.equal(xhr.responseText, "native text");
  assert.equal(xhr.status, 200);
  assert.deepEqual(log, ["readystatechange 1", "readystatechange 4", "load 11/11"]);
  assert.equal(ws.posts("fetch").length, 0);
});

test("the broker's own origin and non-http URLs use the native XMLHttpRequest", () => {
  loadBridge();
  const xhr = new XMLHttpRequest();
  xhr.open("GET", "http://127.0.0.1:8787/examples/data.json");
  assert.equal(FakeNativeXHR.instances.length, 1);
  const other = new XMLHttpRequest();
  other.open("GET", "data:text/plain,hi");
  assert.equal(FakeNativeXHR.instances.length, 2);
});

test("data-patch=fetch leaves XMLHttpRequest native", () => {
  const env = loadBridge({ attributes: { "data-patch": "fetch" } });
  assert.equal(globalThis.XMLHttpRequest, FakeNativeXHR);
  assert.deepEqual(env.bridge.patched, { fetch: true, xhr: false, eventSource: false });
});

test("withCredentials can be set before send only", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const xhr = new XMLHttpRequest();
  xhr.withCredentials = true;
  assert.equal(xhr.withCredentials, true);
  xhr.open("GET", "https://api.example.com/c");
  xhr.send();
  assert.throws(() => {
    xhr.withCredentials = false;
  }, { name: "InvalidStateError" });
  const post = await waitFor(() => ws.posts("fetch")[0], "the post");
  ws.fail(post.id, "network");
  await loadend(xhr);
});
