// The page's preloaded responses (push.js): with early posts on, one early request at the shim's
// start asks for what a `preload` of this page stored (`page.preloaded`); the page's fetch() calls
// that ask what fetch(url) with no init asks are served from its answer, with no post on the socket.
// The test plays the broker's early endpoint through the fake native fetch (env.pushCalls).
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  loadBridge as loadPage, loadBridgeSources as loadSources, waitFor, tick, earlyAnswer, wholeFrame, encodeFrame, FakeWebSocket, PAGE_URL,
} from "../test-support/helpers.mjs";

const asking = (options = {}) => ({ ...options, config: { earlyPosts: true, ...(options.config || {}) } });
const loadBridge = (options) => loadPage(asking(options));

const EARLY_FIRST_ID = 2 ** 30;
const CDN = "https://cdn.example.com";
const DROPPED = ["url", "documentCookie", "group", "batch", "window"];

const preloadedPost = (call) => call.lines.find((line) => line.name === "page.preloaded");

const head = (url, bytes, extra = {}) => ({
  url, status: 200, statusText: "OK", redirected: false, headers: [["content-type", "text/plain"], ["x-from", "push"]],
  bodyEncoding: "binary", body: null, bodyBytes: bytes, cache: { status: "hit", age: 2 }, ...extra,
});

/**
 * The broker's answer for these resources, in preload order: each `[path, kind]`, kind "whole"
 * (a whole response whose body is the path), "vary" (the same with a vary header), "stream" (an
 * event, body frames and an ok reply), "cut" (the same without the last frame's end flag),
 * "miscounted" (a reply counting one byte more than came), "empty" (an event and a reply of no
 * bytes, no frame), or "miss" (not_cached). `replyFirst` puts the reply first.
 */
function answerFor(resources, { replyFirst = false, origin = CDN } = {}) {
  return (call) => {
    const post = preloadedPost(call);
    const frames = [];
    resources.forEach(([path, kind], index) => {
      const id = post.body.firstId + index;
      const url = origin + path;
      if (kind === "whole") frames.push(wholeFrame(id, head(url, path.length), path));
      else if (kind === "vary") frames.push(wholeFrame(id, head(url, path.length, { headers: [["content-type", "text/plain"], ["Vary", "Cookie"]] }), path));
      else if (kind === "stream" || kind === "cut" || kind === "miscounted") {
        // As the broker streams a body it reads from disk: the event, body frames (two here), the reply.
        const half = Math.floor(path.length / 2);
        frames.push({ type: "event", id, name: "response", body: head(url, path.length) });
        frames.push(encodeFrame(id, path.slice(0, half), false), encodeFrame(id, path.slice(half), kind !== "cut"));
        frames.push({ type: "reply", id, ok: true, body: head(url, kind === "miscounted" ? path.length + 1 : path.length) });
      } else if (kind === "empty") {
        frames.push({ type: "event", id, name: "response", body: head(url, 0) }, { type: "reply", id, ok: true, body: head(url, 0) });
      } else frames.push({ type: "reply", id, ok: false, error: { code: "not_cached", message: "no fresh stored response" } });
    });
    const reply = { type: "reply", id: post.id, ok: true, body: { urls: resources.map(([path]) => origin + path) } };
    return new Response(earlyAnswer(replyFirst ? [reply, ...frames] : [...frames, reply]));
  };
}

/** A push answer the test gives later: push(call) returns a promise the test settles. */
function deferredPush() {
  const waiting = [];
  return {
    push: (call) => new Promise((resolve, reject) => waiting.push({ call, resolve, reject })),
    next: () => waitFor(() => waiting[0], "the page.preloaded request"),
  };
}

/** A page whose page.preloaded request waits for the test's answer (`waiting`), with its socket open. */
async function awaitingPush() {
  const deferred = deferredPush();
  const env = loadBridge({ push: deferred.push });
  const waiting = await deferred.next();
  return { env, waiting, ws: await env.open() };
}

/**
 * Answers the next fetch post over the socket with `text`; returns the post. It must come within
 * `within` ms: sooner than the 3 s after which the shim stops waiting for an answer that never came.
 */
async function answerOverSocket(ws, text, within = 1000) {
  const handed = ws.handed?.fetch ?? 0;
  await waitFor(() => ws.posts("fetch").length > handed, "a fetch post on the socket", within);
  const post = await ws.nextPost("fetch");
  ws.pushWhole(post.id, head(post.body.url, text.length, { cache: { status: "miss" } }), text);
  return post;
}

test("at its start, right after its WebSocket, the shim sends one early request: the greeting, then page.preloaded with the default fetch's template", async () => {
  let socketsThen = null;
  const env = loadBridge({
    attributes: { "data-token": "s3cret" },
    push: (call) => {
      socketsThen = FakeWebSocket.instances.length;
      return answerFor([])(call);
    },
  });
  await waitFor(() => env.pushCalls.length, "the page.preloaded request");
  assert.equal(socketsThen, 1, "sent once the WebSocket exists");
  const call = env.pushCalls[0];
  assert.equal(call.url, "http://127.0.0.1:8787/bridge/early?token=s3cret");
  // A POST of the lines through the page's own XMLHttpRequest, without credentials (a CORS simple
  // request: the browser sends the string as text/plain;charset=UTF-8).
  assert.deepEqual(call.init, { method: "POST", body: call.body, credentials: "omit", xhr: true });
  assert.deepEqual(call.lines.map((line) => line.name), ["page.identity", "page.preloaded"]);
  assert.deepEqual(call.lines[0].body, { url: PAGE_URL, userAgent: navigator.userAgent, languages: ["en-US", "en", "de"] });
  const post = call.lines[1];
  assert.deepEqual(Object.keys(post), ["type", "name", "id", "body"]);
  assert.equal(post.id, EARLY_FIRST_ID);
  assert.equal(post.body.page, PAGE_URL);
  assert.equal(post.body.firstId, EARLY_FIRST_ID + 1);
  const template = post.body.fetch;
  for (const name of [...DROPPED, "cache", "body"]) assert.equal(name in template, false, name);
  assert.deepEqual(template, {
    method: "GET", headers: [], redirect: "follow", responseBody: "binary", headerEncoding: "latin1", progress: false,
    whole: 256 * 1024, timeout: 86400000, credentials: "same-origin", mode: "cors", referrer: PAGE_URL,
    referrerPolicy: "strict-origin-when-cross-origin",
  });

  // What a default fetch() posts is the template plus the per-request fields, key for key.
  env.document.cookieStore.set("session", "1"); // the browser's own, as from the page's HTTP response
  const ws = await env.open();
  const pending = fetch(`${location.origin}/app/data.json`);
  const sent = await answerOverSocket(ws, "{}");
  await pending;
  assert.ok(sent.body.documentCookie && sent.body.group && sent.body.batch && sent.body.window, JSON.stringify(sent.body));
  const rest = { ...sent.body };
  for (const name of DROPPED) delete rest[name];
  assert.deepEqual(rest, template);
  assert.deepEqual(Object.keys(rest), Object.keys(template));
  assert.equal(env.pushCalls.length, 1, "once per page");
  assert.equal(env.earlyCalls.length, 0);
});

test("a fetch of a pushed URL is served from the answer, counted in the page's progress, with no post on the socket", async () => {
  for (const replyFirst of [false, true]) {
    const env = loadBridge({ push: answerFor([["/a.css", "whole"], ["/b.js", "whole"]], { replyFirst }) });
    await waitFor(() => env.pushCalls.length, "the page.preloaded request");
    const progress = [];
    env.bridge.on("progress", (event) => progress.push(event.progress));
    const [a, b] = await Promise.all([fetch(`${CDN}/a.css`), fetch(`${CDN}/b.js`)]);
    assert.equal(a.status, 200);
    assert.equal(a.url, `${CDN}/a.css`);
    assert.equal(a.headers.get("x-from"), "push");
    assert.deepEqual(a.bridge.cache, { status: "hit", age: 2 });
    assert.equal(await a.text(), "/a.css");
    assert.equal(await b.text(), "/b.js");
    assert.equal(env.bridge.progress, (0.1 + 2) / 3, "the document parsing, two requests done");
    assert.ok(progress.length >= 1);
    const ws = await env.socket();
    assert.equal(ws.readyState, 0, "served before the socket opened");
    ws.hello();
    await tick(5);
    assert.equal(ws.posts("fetch").length, 0);
    assert.equal(env.earlyCalls.length, 0, "no early fetch POST either");
  }
});

test("document.cookie is read for a fetch that goes on, not for one served from the answer", async () => {
  const { env, waiting, ws } = await awaitingPush();
  // Counts the page's reads of document.cookie (the fake document's getter iterates its store).
  const store = env.document.cookieStore;
  const iterate = store[Symbol.iterator].bind(store);
  let reads = 0;
  store[Symbol.iterator] = () => {
    reads++;
    return iterate();
  };
  store.set("theme", "dark");
  const served = fetch(`${location.origin}/app/a.css`);
  const other = fetch(`${location.origin}/app/c.json`);
  await tick(10);
  assert.equal(reads, 0, "held for the answer: nothing read yet");
  waiting.resolve(answerFor([["/app/a.css", "whole"]], { origin: location.origin })(waiting.call));
  assert.equal(await (await served).text(), "/app/a.css");
  const post = await answerOverSocket(ws, "c");
  assert.equal(await (await other).text(), "c");
  assert.equal(post.body.url, `${location.origin}/app/c.json`);
  assert.equal(post.body.documentCookie, "theme=dark", "the one that went carries the page's cookies");
  assert.equal(reads, 1, "read once: for the fetch that went, not for the one served");
});

test("a fetch asking anything else than fetch(url) goes its usual way at once, even while the answer is awaited", async () => {
  const { env, waiting: { call, resolve }, ws } = await awaitingPush();
  const paths = ["/h", "/i", "/n", "/p", "/r", "/t"];
  const others = [
    fetch(`${CDN}/h`, { headers: { "X-Trace": "1" } }),
    fetch(`${CDN}/i`, { credentials: "include" }),
    fetch(`${CDN}/n`, { cache: "no-store" }),
    fetch(`${CDN}/p`, { method: "POST", body: "x" }),
    fetch(`${CDN}/r`, { referrerPolicy: "no-referrer" }),
    fetch(`${CDN}/t`, { timeout: 5000 }),
  ];
  // Neither an XHR nor a fetch post of the page's own is a fetch() to serve.
  const xhr = new XMLHttpRequest();
  xhr.open("GET", `${CDN}/x`);
  xhr.send();
  const posted = env.bridge.post("fetch", { url: `${CDN}/b` });
  await waitFor(() => ws.posts("fetch").length === others.length + 2, "every other request on the socket", 500);
  resolve(answerFor([...paths, "/x", "/b"].map((path) => [path, "whole"]))(call));
  for (const post of ws.posts("fetch")) ws.pushWhole(post.id, head(post.body.url, 6), "socket");
  for (const pending of others) assert.equal(await (await pending).text(), "socket");
  assert.equal((await posted).status, 200);
  await waitFor(() => xhr.readyState === 4, "the XHR");
  assert.equal(xhr.responseText, "socket");
});

test("a fetch held for the answer goes on when its URL is not in it: over the open socket, or in an early fetch POST", async () => {
  // The socket is open: held meanwhile, then over it.
  let { env, waiting, ws } = await awaitingPush();
  const held = fetch(`${CDN}/c`);
  await tick(10);
  assert.equal(ws.posts("fetch").length, 0, "held while the answer is awaited");
  waiting.resolve(answerFor([["/a", "whole"]])(waiting.call));
  const post = await answerOverSocket(ws, "c from the socket");
  assert.equal(post.body.url, `${CDN}/c`);
  assert.equal(await (await held).text(), "c from the socket");

  // The socket is not open yet: the fetch goes in an early fetch POST, as without the push.
  const deferred = deferredPush();
  const earlyLines = [];
  env = loadBridge({
    push: deferred.push,
    early: (call) => {
      const line = call.lines.find((item) => item.name === "fetch");
      earlyLines.push(line);
      return new Response(earlyAnswer([wholeFrame(line.id, head(line.body.url, 5), "early")]));
    },
  });
  waiting = await deferred.next();
  const pending = fetch(`${CDN}/d`);
  await tick(10);
  assert.equal(env.earlyCalls.length, 0, "held while the answer is awaited");
  waiting.resolve(answerFor([["/a", "whole"]])(waiting.call));
  assert.equal(await (await pending).text(), "early");
  assert.equal(earlyLines.length, 1);
  assert.equal(earlyLines[0].body.url, `${CDN}/d`);
  assert.equal(earlyLines[0].body.cache, "fresh-only");
});

test("a network error, another status, a malformed answer or a refused post release the held fetches; 404 turns early requests off", async () => {
  const malformed = () => new Response(new Uint8Array([9, 0, 0, 0, 1, 0]));
  const noReply = (call) => new Response(earlyAnswer([wholeFrame(preloadedPost(call).body.firstId, head(`${CDN}/x`, 1), "x")]));
  const noUrls = (call) => new Response(earlyAnswer([{ type: "reply", id: preloadedPost(call).id, ok: true, body: {} }]));
  const refused = (call) => new Response(earlyAnswer([
    wholeFrame(preloadedPost(call).body.firstId, head(`${CDN}/x`, 1), "x"),
    { type: "reply", id: preloadedPost(call).id, ok: false, error: { code: "unknown_handler", message: "no page.preloaded" } },
  ]));
  const cases = [
    ["network", () => Promise.reject(new TypeError("Failed to fetch")), []],
    ["503", () => new Response("busy", { status: 503 }), []],
    ["404", () => new Response("no such path", { status: 404 }), []],
    ["malformed", malformed, ["bad_message"]],
    ["no reply", noReply, ["bad_message"]],
    ["no urls", noUrls, ["bad_message"]],
    ["refused", refused, []],
  ];
  for (const [name, push, reported] of cases) {
    const deferred = deferredPush();
    const env = loadBridge({ push: deferred.push, early: (call) => new Response(earlyAnswer([])) });
    const errors = [];
    env.bridge.on("error", (error) => errors.push(error.code));
    const waiting = await deferred.next();
    const pending = fetch(`${CDN}/x`);
    await tick(5);
    Promise.resolve().then(() => push(waiting.call)).then(waiting.resolve, waiting.reject);
    // Released before the socket opens: an early fetch POST unless the 404 turned them off.
    if (name === "404") {
      await tick(20);
      assert.equal(env.earlyCalls.length, 0, name);
    } else await waitFor(() => env.earlyCalls.length, `the early fetch POST after ${name}`, 1000);
    const ws = await env.open();
    await answerOverSocket(ws, "socket");
    assert.equal(await (await pending).text(), "socket", name);
    assert.deepEqual(errors, reported, name);
  }
});

test("an answer that never comes releases the held fetches after a while; a late answer serves nothing", async () => {
  const { env, waiting, ws } = await awaitingPush();
  const pending = fetch(`${CDN}/slow`);
  await tick(20);
  assert.equal(ws.posts("fetch").length, 0);
  await answerOverSocket(ws, "socket", 5000);
  assert.equal(await (await pending).text(), "socket");
  waiting.resolve(answerFor([["/slow", "whole"]])(waiting.call));
  await tick(5);
  const again = fetch(`${CDN}/slow`);
  await answerOverSocket(ws, "again");
  assert.equal(await (await again).text(), "again");
});

test("complete responses without vary serve, whole or streamed from the broker's disk; a vary head, a cut or miscounted stream and not_cached go over the socket", async () => {
  const kinds = [["/v", "vary"], ["/s", "stream"], ["/m", "miss"], ["/w", "whole"], ["/c", "cut"], ["/n", "miscounted"], ["/e", "empty"]];
  const env = loadBridge({ push: answerFor(kinds) });
  await waitFor(() => env.pushCalls.length, "the page.preloaded request");
  const ws = await env.open();
  await tick(5);
  const pending = kinds.map(([path]) => fetch(CDN + path));
  const socket = ["/v", "/m", "/c", "/n"];
  await waitFor(() => ws.posts("fetch").length === socket.length, "four fetches on the socket");
  await tick(5);
  assert.deepEqual(ws.posts("fetch").map((post) => post.body.url), socket.map((path) => CDN + path));
  for (const post of ws.posts("fetch")) ws.pushWhole(post.id, head(post.body.url, 6), "socket");
  const responses = await Promise.all(pending);
  assert.deepEqual(await Promise.all(responses.map((response) => response.text())), ["socket", "/s", "socket", "/w", "socket", "socket", ""]);
  // A streamed response serves as the whole one would: its head, its url, its cache status.
  const streamed = responses[1];
  assert.equal(streamed.status, 200);
  assert.equal(streamed.url, `${CDN}/s`);
  assert.equal(streamed.headers.get("x-from"), "push");
  assert.deepEqual(streamed.bridge.cache, { status: "hit", age: 2 });
});

test("each pushed response serves one fetch: a second fetch of its URL, at once or later, goes over the socket", async () => {
  const { env, waiting, ws } = await awaitingPush();
  const first = fetch(`${CDN}/once`);
  const second = fetch(`${CDN}/once`);
  waiting.resolve(answerFor([["/once", "whole"]])(waiting.call));
  assert.equal(await (await first).text(), "/once");
  await answerOverSocket(ws, "second");
  assert.equal(await (await second).text(), "second");
  const third = fetch(`${CDN}/once`);
  await answerOverSocket(ws, "third");
  assert.equal(await (await third).text(), "third");
  assert.equal(ws.posts("fetch").length, 2);
});

test("a fetch aborted while held rejects with AbortError and is never served; the response stays for the next fetch", async () => {
  const { env, waiting, ws } = await awaitingPush();
  const controller = new AbortController();
  const aborted = fetch(`${CDN}/a`, { signal: controller.signal });
  await tick(5);
  controller.abort();
  await assert.rejects(aborted, (error) => error.name === "AbortError");
  waiting.resolve(answerFor([["/a", "whole"]])(waiting.call));
  await tick(5);
  assert.equal(ws.posts("fetch").length, 0, "never sent");
  assert.equal(await (await fetch(`${CDN}/a`)).text(), "/a");
  assert.equal(ws.posts("fetch").length, 0);
});

test("no request without early posts, inside a WKWebView, or on a page that is not http(s)", async () => {
  const loads = [
    () => loadPage({ push: answerFor([["/x", "whole"]]) }),
    () => loadBridge({ config: { earlyPosts: false }, push: answerFor([["/x", "whole"]]) }),
    () => loadBridge({ pageUrl: "file:///app/index.html", push: answerFor([["/x", "whole"]]) }),
  ];
  for (const load of loads) {
    const env = load();
    const ws = await env.open();
    const pending = fetch(`${CDN}/x`);
    await answerOverSocket(ws, "socket");
    assert.equal(await (await pending).text(), "socket");
    assert.equal(env.pushCalls.length, 0);
    assert.equal(env.earlyCalls.length, 0);
  }
  const sent = [];
  const webkit = { messageHandlers: { bridge: { postMessage: (message) => sent.push(message) } } };
  const env = loadBridge({ webkit, push: answerFor([["/x", "whole"]]) });
  const pending = fetch(`${CDN}/x`);
  await tick(10);
  assert.equal(env.bridge.transport, "webkit");
  assert.equal(env.pushCalls.length, 0);
  env.bridge.disconnect();
  await assert.rejects(pending, TypeError);
});

test("the sources as ES modules push too", async () => {
  const env = await loadSources(asking({ push: answerFor([["/m.js", "whole"]]) }));
  assert.equal(await (await fetch(`${CDN}/m.js`)).text(), "/m.js");
  assert.equal(env.pushCalls.length, 1);
});
