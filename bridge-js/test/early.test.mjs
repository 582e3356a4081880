// Early posts over HTTP: fetches queued before the WebSocket is open also go at once in one native
// POST to /bridge/early (cache fresh-only); hits are served from its answer, misses go over the
// WebSocket once it opens. The test plays the broker's HTTP endpoint through the fake native fetch.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadBridge as loadPage, loadBridgeSources as loadSources, waitFor, tick, earlyAnswer, wholeFrame, encodeFrame, batchFrame, PAGE_URL } from "../test-support/helpers.mjs";

// Early posts are off unless a page asks: every page here asks with BridgeBrokerConfig.earlyPosts
// unless the test's own configuration or attribute says otherwise.
const asking = (options = {}) => ({ ...options, config: { earlyPosts: true, ...(options.config || {}) } });
const loadBridge = (options) => loadPage(asking(options));
const loadBridgeSources = (options) => loadSources(asking(options));

const EARLY_FIRST_ID = 2 ** 30;
// The page's preloaded-responses request at its start (push.js) takes the first 65 early ids.
const FIRST_FETCH_ID = EARLY_FIRST_ID + 65;

const fetchLines = (call) => call.lines.filter((line) => line.name === "fetch");

const head = (url, bytes, extra = {}) => ({
  url, status: 200, statusText: "OK", redirected: false, headers: [["content-type", "text/plain"], ["x-from", "cache"]],
  bodyEncoding: "binary", body: null, bodyBytes: bytes, cache: { status: "hit", age: 1 }, ...extra,
});

const notCached = (id) => ({ type: "reply", id, ok: false, error: { code: "not_cached", message: "no fresh stored response" } });

/** An answer of not_cached for every fetch line of the call. */
const allMisses = (call) => new Response(earlyAnswer(fetchLines(call).map((line) => notCached(line.id))));

/** An early answer the test gives later: early(call) returns a promise the test settles with answer(...). */
function deferredEarly() {
  const waiting = [];
  return {
    early: (call) => new Promise((resolve, reject) => waiting.push({ call, resolve, reject })),
    async next() {
      await waitFor(() => waiting.length, "an early POST");
      return waiting.shift();
    },
  };
}

/** Accepts the socket, sends the hello and answers a fetch post over the WebSocket with `text`. */
async function answerOverSocket(ws, text, status = 200) {
  const post = await ws.nextPost("fetch");
  ws.respond(post.id, { status });
  ws.pushBinary(post.id, text, true);
  ws.finish(post.id, { status, bytes: text.length });
  return post;
}

test("a fetch before the socket opens is posted early: URL and token, text/plain, identity first, fresh-only, an id from 2^30", async () => {
  const env = loadBridge({ attributes: { "data-token": "s3cret" }, early: allMisses });
  const pending = fetch("https://api.example.com/data?x=1", { headers: { "X-Trace": "7" } });
  await waitFor(() => env.earlyCalls.length, "the early POST");
  const call = env.earlyCalls[0];
  assert.equal(call.url, "http://127.0.0.1:8787/bridge/early?token=s3cret");
  // A POST of the lines through the page's own XMLHttpRequest, without credentials (a CORS simple
  // request: the browser sends the string as text/plain;charset=UTF-8).
  assert.deepEqual(call.init, { method: "POST", body: call.body, credentials: "omit", xhr: true });
  assert.equal(typeof call.body, "string");
  assert.equal(call.lines.length, 2);
  const [identity, line] = call.lines;
  assert.deepEqual(Object.keys(identity), ["type", "name", "body"], "the greeting has no id");
  assert.deepEqual(identity, { type: "post", name: "page.identity", body: { url: PAGE_URL, userAgent: navigator.userAgent, languages: ["en-US", "en", "de"] } });
  assert.deepEqual(Object.keys(line), ["type", "name", "id", "body"]);
  assert.equal(line.type, "post");
  assert.equal(line.name, "fetch");
  assert.ok(Number.isInteger(line.id) && line.id >= EARLY_FIRST_ID, `early id ${line.id}`);
  assert.equal(line.body.cache, "fresh-only");
  assert.equal("batch" in line.body, false);
  assert.equal("window" in line.body, false);
  assert.equal("group" in line.body, false);
  assert.equal(line.body.url, "https://api.example.com/data?x=1");
  assert.equal(line.body.method, "GET");
  assert.equal(line.body.responseBody, "binary");
  assert.equal(line.body.whole, 256 * 1024);
  assert.deepEqual(line.body.headers, [["x-trace", "7"]]);

  // A miss: it goes over the WebSocket as it would have, with its own id and the page's cache mode.
  const ws = await env.socket();
  ws.hello();
  const identityPost = await ws.nextPost("page.identity");
  assert.deepEqual(identityPost.body, identity.body, "the same greeting as the WebSocket's");
  const post = await answerOverSocket(ws, "over the socket");
  assert.ok(post.id < EARLY_FIRST_ID);
  assert.equal("cache" in post.body, false);
  assert.equal(post.body.batch, true);
  assert.equal(post.body.url, "https://api.example.com/data?x=1");
  const response = await pending;
  assert.equal(await response.text(), "over the socket");
  assert.equal(env.earlyCalls.length, 1);
});

test("a whole-response hit in the early answer resolves the fetch and never goes over the WebSocket", async () => {
  const env = loadBridge({
    early: (call) => {
      const [line] = fetchLines(call);
      return new Response(earlyAnswer([wholeFrame(line.id, head(line.body.url, 11, { status: 203, statusText: "Cached" }), "hello cache")]));
    },
  });
  const response = await fetch("https://cdn.example.com/app.css");
  assert.equal(response.status, 203);
  assert.equal(response.statusText, "Cached");
  assert.equal(response.url, "https://cdn.example.com/app.css");
  assert.equal(response.headers.get("x-from"), "cache");
  assert.deepEqual(response.bridge.cache, { status: "hit", age: 1 });
  assert.equal(await response.text(), "hello cache");
  const ws = await env.socket();
  assert.equal(ws.readyState, 0, "served before the socket opened");
  ws.hello();
  await tick(5);
  assert.equal(ws.posts("fetch").length, 0, "not sent again over the socket");
  assert.equal(ws.posts("page.identity").length, 1, "the socket still greets the broker");
});

test("an event, body frames and an ok reply serve the fetch; events without an id and the greeting's error stay out of the page", async () => {
  const env = loadBridge({
    early: (call) => {
      const [line] = fetchLines(call);
      const id = line.id;
      const { body: _, bodyEncoding: __, bodyBytes: ___, ...responseHead } = head(line.body.url, 11);
      return new Response(earlyAnswer([
        { type: "error", error: { code: "bad_request", message: "page.identity wants an http(s) URL" } },
        { type: "event", id, name: "response", body: responseHead },
        { type: "event", name: "group.progress", body: { group: "g", loaded: 1 } },
        encodeFrame(id, "hello "),
        encodeFrame(id, "early", true),
        { type: "reply", id, ok: true, body: head(line.body.url, 11) },
      ]));
    },
  });
  const errors = [];
  const progress = [];
  env.bridge.on("error", (error) => errors.push(error));
  env.bridge.on("group.progress", (body) => progress.push(body));
  const response = await fetch("https://cdn.example.com/big.txt");
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("x-from"), "cache");
  assert.equal(await response.text(), "hello early");
  assert.deepEqual(progress, [], "the early connection's group progress is not the page's");
  assert.deepEqual(errors, []);
  const ws = await env.socket();
  ws.hello();
  await tick(5);
  assert.equal(ws.posts("fetch").length, 0);
});

test("several fetches in one task share one POST; hits are served, a miss and a failed post go over the WebSocket", async () => {
  const env = loadBridge({
    early: (call) => {
      const [a, b, c, d] = fetchLines(call);
      return new Response(earlyAnswer([
        batchFrame([[b.id, head(b.body.url, 1), "b"], [a.id, head(a.body.url, 1), "a"]]),
        notCached(c.id),
        // Frames of d, but its reply is not ok: none of them reach the page.
        { type: "event", id: d.id, name: "response", body: head(d.body.url, 0) },
        encodeFrame(d.id, "partial"),
        { type: "reply", id: d.id, ok: false, error: { code: "network", message: "upstream reset" } },
      ]));
    },
  });
  const names = ["a", "b", "c", "d"];
  const pending = names.map((name) => fetch(`https://cdn.example.com/${name}`));
  await waitFor(() => env.earlyCalls.length, "the early POST");
  await tick(5);
  assert.equal(env.earlyCalls.length, 1, "one POST for the task's fetches");
  const lines = fetchLines(env.earlyCalls[0]);
  assert.deepEqual(lines.map((line) => line.body.url), names.map((name) => `https://cdn.example.com/${name}`));
  assert.deepEqual(lines.map((line) => line.id), [0, 1, 2, 3].map((n) => FIRST_FETCH_ID + n));
  assert.equal(env.earlyCalls[0].lines[0].name, "page.identity");
  const [a, b] = await Promise.all(pending.slice(0, 2));
  assert.equal(await a.text(), "a");
  assert.equal(await b.text(), "b");

  const ws = await env.socket();
  ws.hello();
  const c = await answerOverSocket(ws, "c from the socket");
  const d = await answerOverSocket(ws, "d from the socket", 201);
  assert.equal(c.body.url, "https://cdn.example.com/c");
  assert.equal(d.body.url, "https://cdn.example.com/d");
  assert.equal(await (await pending[2]).text(), "c from the socket");
  const dResponse = await pending[3];
  assert.equal(dResponse.status, 201);
  assert.equal(await dResponse.text(), "d from the socket");
  await tick(5);
  assert.equal(ws.posts("fetch").length, 2);

  // A later task's fetch, with the socket open, goes over it; ids over HTTP keep counting on a later POST.
  const later = fetch("https://cdn.example.com/e");
  await answerOverSocket(ws, "e");
  await later;
  assert.equal(env.earlyCalls.length, 1, "nothing goes early once the socket is open");
});

test("ids keep counting over the page's life, one POST per task", async () => {
  const env = loadBridge({ early: allMisses });
  const first = fetch("https://cdn.example.com/1");
  await waitFor(() => env.earlyCalls.length === 1, "the first POST");
  await tick(5);
  const second = [fetch("https://cdn.example.com/2"), fetch("https://cdn.example.com/3")];
  await waitFor(() => env.earlyCalls.length === 2, "the second POST");
  assert.deepEqual(env.earlyCalls.map((call) => fetchLines(call).map((line) => line.id)), [[FIRST_FETCH_ID], [FIRST_FETCH_ID + 1, FIRST_FETCH_ID + 2]]);
  const ws = await env.socket();
  ws.hello();
  for (let n = 0; n < 3; n++) await answerOverSocket(ws, `r${n}`);
  await Promise.all([first, ...second]);
});

test("a 404 or 405 answer turns early posts off for the page; the fetch still completes over the WebSocket; a 503 does not", async () => {
  for (const status of [404, 405, 503]) {
    const env = loadBridge({ early: () => new Response("nope", { status }) });
    const first = fetch("https://cdn.example.com/one");
    await waitFor(() => env.earlyCalls.length, "the early POST");
    await tick(5);
    const second = fetch("https://cdn.example.com/two");
    await tick(5);
    assert.equal(env.earlyCalls.length, status === 503 ? 2 : 1, `after a ${status}`);
    const ws = await env.socket();
    ws.hello();
    await answerOverSocket(ws, "one");
    await answerOverSocket(ws, "two");
    assert.equal(await (await first).text(), "one");
    assert.equal(await (await second).text(), "two");
  }
});

test("a network failure of the POST releases its fetches to the WebSocket", async () => {
  const env = loadBridge({ early: () => Promise.reject(new TypeError("Failed to fetch")) });
  const errors = [];
  env.bridge.on("error", (error) => errors.push(error));
  const pending = fetch("https://cdn.example.com/x");
  await waitFor(() => env.earlyCalls.length, "the early POST");
  const ws = await env.socket();
  ws.hello();
  await answerOverSocket(ws, "x");
  assert.equal(await (await pending).text(), "x");
  assert.deepEqual(errors, []);
});

test("a malformed answer is reported as bad_message and serves nothing, not even the frames before the fault", async () => {
  const answers = [
    (id) => new Uint8Array([9, 0, 0, 0, 1, 0]), // an unknown frame kind
    (id) => earlyAnswer([wholeFrame(id, head("https://cdn.example.com/x", 1), "x")]).subarray(0, 20), // cut short
    (id) => earlyAnswer([wholeFrame(id, head("https://cdn.example.com/x", 1), "x"), "not json"]),
    (id) => earlyAnswer([wholeFrame(id, head("https://cdn.example.com/x", 1), "x"), encodeFrame(id, "x", true, 7)]),
    (id) => earlyAnswer([encodeFrame(id, "{", true, 2)]), // a whole frame too short for its head
  ];
  for (const make of answers) {
    const env = loadBridge({ early: (call) => new Response(make(fetchLines(call)[0].id)) });
    const errors = [];
    env.bridge.on("error", (error) => errors.push(error.code));
    let settled = false;
    const pending = fetch("https://cdn.example.com/x");
    pending.then(() => (settled = true), () => (settled = true));
    await waitFor(() => errors.length, "the report");
    await tick(5);
    assert.deepEqual(errors, ["bad_message"]);
    assert.equal(settled, false, "nothing served from a malformed answer");
    const ws = await env.socket();
    ws.hello();
    await answerOverSocket(ws, "from the socket");
    assert.equal(await (await pending).text(), "from the socket");
  }
});

test("POST, a body, a non-default cache mode and a stream are not sent early; GET with cache default and HEAD are", async () => {
  const env = loadBridge({ early: allMisses });
  const others = [
    fetch("https://api.example.com/p", { method: "POST", body: "x" }),
    fetch("https://api.example.com/put", { method: "PUT", body: "y" }),
    fetch("https://api.example.com/d", { method: "DELETE" }),
    fetch("https://api.example.com/ns", { cache: "no-store" }),
    fetch("https://api.example.com/r", { cache: "reload" }),
    fetch("https://api.example.com/oic", { cache: "only-if-cached", mode: "same-origin" }),
    fetch("https://api.example.com/s", { method: "POST", body: new ReadableStream({ start: (c) => c.close() }), duplex: "half" }),
  ];
  await tick(10);
  assert.equal(env.earlyCalls.length, 0);
  const eligible = [fetch("https://api.example.com/g", { cache: "default" }), fetch("https://api.example.com/h", { method: "HEAD" })];
  await waitFor(() => env.earlyCalls.length, "the early POST");
  assert.deepEqual(fetchLines(env.earlyCalls[0]).map((line) => [line.body.method, line.body.url]), [["GET", "https://api.example.com/g"], ["HEAD", "https://api.example.com/h"]]);
  const ws = await env.socket();
  ws.hello();
  await waitFor(() => ws.posts("fetch").length === 9, "every fetch over the socket");
  for (const post of ws.posts("fetch")) ws.fail(post.id, "network");
  await Promise.allSettled([...others, ...eligible]);
});

test("data-early-posts=\"true\" on the script tag turns early posts on", async () => {
  const env = loadPage({ attributes: { "data-early-posts": "true" }, early: allMisses });
  const pending = fetch("https://cdn.example.com/x");
  await waitFor(() => env.earlyCalls.length === 1, "the early POST");
  const ws = await env.socket();
  ws.hello();
  await answerOverSocket(ws, "x");
  assert.equal(await (await pending).text(), "x");
});

test("early posts are off by default, and with data-early-posts=\"false\" or BridgeBrokerConfig.earlyPosts = false", async () => {
  const off = [
    () => loadPage({ early: allMisses }),
    () => loadBridge({ attributes: { "data-early-posts": "false" }, early: allMisses }),
    () => loadBridge({ config: { earlyPosts: false }, early: allMisses }),
  ];
  for (const load of off) {
    const env = load();
    const pending = fetch("https://cdn.example.com/x");
    await tick(10);
    assert.equal(env.earlyCalls.length, 0);
    const ws = await env.socket();
    ws.hello();
    await answerOverSocket(ws, "x");
    assert.equal(await (await pending).text(), "x");
  }
});

test("a fetch aborted while held rejects with AbortError, its early answer is ignored and it is never sent on the socket", async () => {
  const deferred = deferredEarly();
  const env = loadBridge({ early: deferred.early });
  const errors = [];
  env.bridge.on("error", (error) => errors.push(error));
  const controller = new AbortController();
  const aborted = fetch("https://cdn.example.com/aborted", { signal: controller.signal });
  const kept = fetch("https://cdn.example.com/kept");
  const { call, resolve } = await deferred.next();
  controller.abort();
  await assert.rejects(aborted, (error) => error.name === "AbortError");
  const [gone, stays] = fetchLines(call);
  resolve(new Response(earlyAnswer([wholeFrame(gone.id, head(gone.body.url, 1), "g"), notCached(stays.id)])));
  const ws = await env.socket();
  ws.hello();
  const post = await answerOverSocket(ws, "kept");
  assert.equal(post.body.url, "https://cdn.example.com/kept");
  assert.equal(await (await kept).text(), "kept");
  await tick(5);
  assert.equal(ws.posts("fetch").length, 1, "the aborted fetch never went over the socket");
  assert.deepEqual(errors, []);
});

test("nothing is sent early once the socket is open, even a fetch that waits in the queue", async () => {
  const env = loadBridge({ early: allMisses });
  const ws = await env.socket();
  ws.accept(); // open, before the hello: at most 32 posts go until it comes
  const echoes = Array.from({ length: 32 }, (_, n) => env.bridge.post("echo", n));
  const queued = fetch("https://cdn.example.com/queued");
  await tick(5);
  assert.equal(ws.posts("fetch").length, 0, "the fetch waits for the hello");
  ws.hello();
  const after = fetch("https://cdn.example.com/after-hello");
  await answerOverSocket(ws, "1");
  await answerOverSocket(ws, "2");
  for (const post of ws.posts("echo")) ws.reply(post.id, post.body);
  await Promise.all([queued, after, ...echoes]);
  assert.equal(env.earlyCalls.length, 0);
});

test("posts held when the socket opens wait for the early answer; other posts go meanwhile, misses follow", async () => {
  const deferred = deferredEarly();
  const env = loadBridge({ early: deferred.early });
  const hit = fetch("https://cdn.example.com/hit");
  const miss = fetch("https://cdn.example.com/miss");
  const { call, resolve } = await deferred.next();
  const echo = env.bridge.post("echo", "not held");
  const ws = await env.socket();
  ws.hello();
  const echoPost = await ws.nextPost("echo");
  ws.reply(echoPost.id, echoPost.body);
  assert.equal(await echo, "not held");
  await tick(5);
  assert.equal(ws.posts("fetch").length, 0, "held fetches wait for their answer");
  const [hitLine, missLine] = fetchLines(call);
  resolve(new Response(earlyAnswer([notCached(missLine.id), wholeFrame(hitLine.id, head(hitLine.body.url, 3), "hit")])));
  assert.equal(await (await hit).text(), "hit");
  const post = await answerOverSocket(ws, "miss");
  assert.equal(post.body.url, "https://cdn.example.com/miss");
  assert.equal(await (await miss).text(), "miss");
  await tick(5);
  assert.equal(ws.posts("fetch").length, 1);
});

test("disconnect() rejects held fetches; a late answer changes nothing", async () => {
  const deferred = deferredEarly();
  const env = loadBridge({ early: deferred.early });
  const pending = fetch("https://cdn.example.com/x");
  const { call, resolve } = await deferred.next();
  env.bridge.disconnect();
  await assert.rejects(pending, TypeError);
  const [line] = fetchLines(call);
  resolve(new Response(earlyAnswer([wholeFrame(line.id, head(line.body.url, 1), "x")])));
  await tick(5);
  assert.equal(env.ws.posts("fetch").length, 0);
});

test("the broker's limits: at most 64 fetch lines and 256 KiB a POST; the rest go over the WebSocket", async () => {
  const hitAll = (call) => new Response(earlyAnswer(fetchLines(call).map((line) => wholeFrame(line.id, head(line.body.url, 2), "ok"))));
  let env = loadBridge({ early: hitAll });
  let pending = Array.from({ length: 70 }, (_, n) => fetch(`https://cdn.example.com/${n}`));
  await waitFor(() => env.earlyCalls.length, "the early POST");
  assert.equal(fetchLines(env.earlyCalls[0]).length, 64);
  let ws = await env.socket();
  ws.hello();
  for (let n = 64; n < 70; n++) assert.equal((await answerOverSocket(ws, `ws${n}`)).body.url, `https://cdn.example.com/${n}`);
  const texts = await Promise.all(pending.map(async (promise) => (await promise).text()));
  assert.deepEqual(texts, Array.from({ length: 70 }, (_, n) => (n < 64 ? "ok" : `ws${n}`)));
  assert.equal(env.earlyCalls.length, 1);

  env = loadBridge({ early: hitAll });
  const long = "x".repeat(20 * 1024);
  pending = Array.from({ length: 20 }, (_, n) => fetch(`https://cdn.example.com/${n}?${long}`));
  await waitFor(() => env.earlyCalls.length, "the early POST");
  const sent = fetchLines(env.earlyCalls[0]).length;
  assert.ok(Buffer.byteLength(env.earlyCalls[0].body) <= 256 * 1024);
  assert.ok(sent >= 10 && sent < 20, `${sent} fetch lines`);
  ws = await env.socket();
  ws.hello({ maxMessageBytes: 1024 * 1024 });
  for (let n = sent; n < 20; n++) await answerOverSocket(ws, `ws${n}`);
  const rest = await Promise.all(pending.map(async (promise) => (await promise).text()));
  assert.deepEqual(rest, Array.from({ length: 20 }, (_, n) => (n < sent ? "ok" : `ws${n}`)));
});

test("an early answer that never comes frees its fetches for the WebSocket after a while", async () => {
  const deferred = deferredEarly();
  const env = loadBridge({ early: deferred.early });
  const pending = fetch("https://cdn.example.com/slow");
  await deferred.next();
  const ws = await env.socket();
  ws.hello();
  await tick(20);
  assert.equal(ws.posts("fetch").length, 0);
  const post = await waitFor(() => ws.posts("fetch")[0], "the fetch over the socket", 5000);
  ws.pushWhole(post.id, head(post.body.url, 4), "late");
  assert.equal(await (await pending).text(), "late");
});

test("the sources as ES modules post early too", async () => {
  const env = await loadBridgeSources({ early: (call) => {
    const [line] = fetchLines(call);
    return new Response(earlyAnswer([wholeFrame(line.id, head(line.body.url, 7), "sources")]));
  } });
  const response = await fetch("https://cdn.example.com/m.js");
  assert.equal(await response.text(), "sources");
  assert.equal(env.earlyCalls.length, 1);
});

test("inside a WKWebView with a bridge handler nothing goes early: the host carries the posts", async () => {
  const sent = [];
  const webkit = { messageHandlers: { bridge: { postMessage: (message) => sent.push(message) } } };
  const env = loadBridge({ webkit, early: allMisses });
  const pending = fetch("https://cdn.example.com/x");
  await tick(10);
  assert.equal(env.bridge.transport, "webkit");
  assert.equal(env.earlyCalls.length, 0);
  assert.equal(sent.length, 1, "only the transport's open: a subframe waits for the host's answer");
  env.bridge.disconnect();
  await assert.rejects(pending, TypeError);
});
