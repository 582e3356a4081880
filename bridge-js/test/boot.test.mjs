// The boot script (src/boot.js, built into bridge-boot.js): a host injects it at document start
// instead of the shim. It asks for the page's preloaded responses at once (page.preloaded, over the
// page's own XMLHttpRequest), holds the page's fetch() calls, serves those the answer has as the shim
// would, and imports the shim from the broker, which adopts its request and takes the held calls.
// The test plays the broker's early endpoint (env.pushCalls) and the shim's import (env.imports).
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  loadBoot, loadBridge, evaluateShim, runBootAgain, waitFor, tick, earlyAnswer, wholeFrame, BOOT_KEY, PAGE_URL,
} from "../test-support/helpers.mjs";

const EARLY_FIRST_ID = 2 ** 30;
const CDN = "https://cdn.example.com";

const preloadedPost = (call) => call.lines.find((line) => line.name === "page.preloaded");

const head = (url, bytes, extra = {}) => ({
  url, status: 200, statusText: "OK", redirected: false, headers: [["content-type", "text/plain"], ["x-from", "push"]],
  bodyEncoding: "binary", body: null, bodyBytes: bytes, cache: { status: "hit", age: 2 }, ...extra,
});

/** The broker's answer: a whole response for each path (its body the path), `extra` merged into the heads of those named in it. */
function answerFor(paths, extra = {}) {
  return (call) => {
    const post = preloadedPost(call);
    const frames = paths.map((path, index) => wholeFrame(post.body.firstId + index, head(CDN + path, path.length, extra[path]), path));
    frames.push({ type: "reply", id: post.id, ok: true, body: { urls: paths.map((path) => CDN + path) } });
    return new Response(earlyAnswer(frames));
  };
}

/** An answer the test gives later: `push(call)` waits for `answer(response)`. */
function deferred() {
  let release = null;
  const answered = new Promise((resolve) => (release = resolve));
  return { push: () => answered, answer: (response) => release(response) };
}

/** An import of the shim the test lets run later: `release()` evaluates it. */
function heldImport() {
  let release = null;
  const gate = new Promise((resolve) => (release = resolve));
  return { importShim: () => gate.then(evaluateShim), release: () => release() };
}

async function describe(response) {
  return {
    status: response.status, statusText: response.statusText, url: response.url, type: response.type, redirected: response.redirected,
    ok: response.ok, headers: [...response.headers], body: await response.text(), bridge: response.bridge,
  };
}

test("at document start it asks for the preloaded responses over XMLHttpRequest, as the shim would, and imports the shim once they came", { timeout: 10000 }, async () => {
  const push = deferred();
  const env = loadBoot({ config: { url: "ws://127.0.0.1:8787/bridge", token: "s3cret" }, push: push.push });
  await waitFor(() => env.pushCalls.length, "the page.preloaded request");
  const call = env.pushCalls[0];
  assert.equal(call.url, "http://127.0.0.1:8787/bridge/early?token=s3cret");
  assert.deepEqual(call.init, { method: "POST", body: call.body, credentials: "omit", xhr: true });
  assert.deepEqual(call.lines.map((line) => line.name), ["page.identity", "page.preloaded"]);
  const post = preloadedPost(call);
  assert.equal(post.id, EARLY_FIRST_ID);
  assert.equal(post.body.page, PAGE_URL);
  assert.equal(post.body.firstId, EARLY_FIRST_ID + 1);
  assert.equal(typeof globalThis[BOOT_KEY].handOver, "function");
  assert.equal(globalThis.BridgeBroker, undefined);
  await tick(20);
  assert.deepEqual(env.imports, [], "the shim's import waits for the answer");
  push.answer(answerFor([])(call));
  await waitFor(() => env.imports.length, "the shim's import");
  assert.deepEqual(env.imports, ["http://127.0.0.1:8787/bridge.js"]);

  // The same lines as the shim's own request (push.js), with the shim injected at document start.
  const shimPage = loadBridge({ script: false, injected: true, config: { url: "ws://127.0.0.1:8787/bridge", token: "s3cret", earlyPosts: true } });
  await shimPage.open();
  await waitFor(() => shimPage.pushCalls.length, "the shim's page.preloaded request");
  assert.deepEqual(shimPage.pushCalls[0].lines, call.lines);
});

test("a fetch(url) the answer has is served before the shim has loaded, the response the shim would give", { timeout: 10000 }, async () => {
  const paths = ["/a.css", "/b.js"];
  const held = heldImport();
  const env = loadBoot({ config: { url: "ws://127.0.0.1:8787/bridge" }, push: answerFor(paths), importShim: held.importShim });
  const pending = fetch(`${CDN}/a.css`);
  const response = await pending;
  assert.equal(globalThis.BridgeBroker, undefined, "served by the boot script");
  const served = await describe(response);
  assert.deepEqual(served.headers, [["content-type", "text/plain"], ["x-from", "push"]]);
  assert.equal(served.body, "/a.css");
  assert.equal(served.url, `${CDN}/a.css`);
  assert.equal(served.type, "cors");
  assert.deepEqual(served.bridge.cache, { status: "hit", age: 2 });
  assert.throws(() => response.headers.set("x", "1"), TypeError, "immutable, as a fetched response's");
  assert.equal(env.nativeCalls.length, 0);

  // The shim serving the same answer gives the same response.
  const shimPage = loadBridge({ script: false, injected: true, config: { url: "ws://127.0.0.1:8787/bridge", earlyPosts: true }, push: answerFor(paths) });
  await shimPage.open();
  assert.deepEqual(await describe(await fetch(`${CDN}/a.css`)), served);
  held.release();
});

test("the shim adopts the boot script's request: no second one, the answer's other responses served once, the held calls handed over", { timeout: 10000 }, async () => {
  const push = deferred();
  const held = heldImport();
  const env = loadBoot({ config: { url: "ws://127.0.0.1:8787/bridge" }, push: push.push, importShim: held.importShim });
  await waitFor(() => env.pushCalls.length, "the page.preloaded request");
  // Before the answer: one it will have, one it will not, and one with an init (the shim's to plan).
  const early = fetch(`${CDN}/a.css`);
  const missing = fetch(`${CDN}/other.json`);
  const posted = fetch(`${CDN}/form`, { method: "POST", body: "x=1" });
  push.answer(answerFor(["/a.css", "/b.js", "/c.js"])(env.pushCalls[0]));
  assert.equal(await (await early).text(), "/a.css");
  held.release();
  const page = await env.shim();
  const ws = await page.open();
  assert.equal(env.pushCalls.length, 1, "the shim sends no page.preloaded of its own");
  // The held calls went to the shim's fetch: over the socket, as any other.
  const first = await ws.nextPost("fetch");
  const second = await ws.nextPost("fetch");
  const byUrl = new Map([first, second].map((post) => [post.body.url, post]));
  assert.deepEqual([...byUrl.keys()].sort(), [`${CDN}/form`, `${CDN}/other.json`]);
  assert.equal(byUrl.get(`${CDN}/form`).body.method, "POST");
  for (const post of [first, second]) ws.pushWhole(post.id, head(post.body.url, 2, { cache: { status: "miss" } }), "ok");
  assert.equal(await (await missing).text(), "ok");
  assert.equal(await (await posted).text(), "ok");
  // After the shim: the answer's other responses come from it, each once; a second fetch of a served one goes over the socket.
  assert.equal(await (await fetch(`${CDN}/b.js`)).text(), "/b.js");
  assert.equal(ws.posts("fetch").length, 2);
  const again = fetch(`${CDN}/a.css`);
  const post = await ws.nextPost("fetch");
  assert.equal(post.body.url, `${CDN}/a.css`);
  ws.pushWhole(post.id, head(post.body.url, 5, { cache: { status: "hit" } }), "again");
  assert.equal(await (await again).text(), "again");
  assert.equal(page.bridge.patched.fetch, true);
});

test("a page's kept reference to the boot script's fetch goes to the shim once it took over", { timeout: 10000 }, async () => {
  const env = loadBoot({ config: { url: "ws://127.0.0.1:8787/bridge" } });
  const bootFetch = globalThis.fetch;
  const page = await env.shim();
  assert.notEqual(globalThis.fetch, bootFetch);
  const ws = await page.open();
  const pending = bootFetch(`${CDN}/late.json`);
  const post = await ws.nextPost("fetch");
  assert.equal(post.body.url, `${CDN}/late.json`);
  ws.pushWhole(post.id, head(post.body.url, 2), "{}");
  assert.equal(await (await pending).text(), "{}");
});

test("when the shim cannot be loaded the held calls go to the page's own fetch, which is the page's fetch again", { timeout: 10000 }, async () => {
  const env = loadBoot({ config: { url: "ws://127.0.0.1:8787/bridge" }, importShim: () => Promise.reject(new TypeError("Failed to fetch dynamically imported module")) });
  const pending = fetch(`${CDN}/data.json`, { headers: { accept: "application/json" } });
  assert.equal(await (await pending).text(), "from the native fetch");
  assert.equal(env.nativeCalls.length, 1);
  assert.equal(String(env.nativeCalls[0].input), `${CDN}/data.json`);
  assert.equal(globalThis.fetch, env.nativeFetch);
});

test("a broker without the early endpoint: nothing is served early, the shim loads and takes every call", { timeout: 10000 }, async () => {
  const env = loadBoot({ config: { url: "ws://127.0.0.1:8787/bridge" }, push: () => new Response("no such path", { status: 404 }) });
  const pending = fetch(`${CDN}/a.css`);
  const page = await env.shim();
  const ws = await page.open();
  const post = await ws.nextPost("fetch");
  assert.equal(post.body.url, `${CDN}/a.css`);
  ws.pushWhole(post.id, head(post.body.url, 4), "late");
  assert.equal(await (await pending).text(), "late");
});

test("what the shim would not serve from the answer the boot script leaves to it: an excluded URL, cookies to set, a body a Response cannot hold", { timeout: 10000 }, async () => {
  const paths = ["/skip.js", "/cookie.js", "/empty.js"];
  const extra = { "/cookie.js": { cookies: ["theme=dark; Path=/"] }, "/empty.js": { status: 204, statusText: "No Content" } };
  const held = heldImport();
  const env = loadBoot({ config: { url: "ws://127.0.0.1:8787/bridge", exclude: `${CDN}/skip*` }, push: answerFor(paths, extra), importShim: held.importShim });
  await waitFor(() => env.pushCalls.length, "the page.preloaded request");
  const calls = paths.map((path) => fetch(CDN + path));
  await tick(20);
  let settled = 0;
  for (const call of calls) call.then(() => settled++);
  await tick(10);
  assert.equal(settled, 0, "held for the shim");
  held.release();
  const page = await env.shim();
  await page.open();
  const [skipped, cookie, empty] = await Promise.all(calls);
  assert.equal(await skipped.text(), "from the native fetch", "excluded: the page's own fetch, as the shim does");
  assert.equal(await cookie.text(), "/cookie.js");
  assert.match(env.document.cookie, /theme=dark/);
  assert.equal(empty.status, 204);
  assert.equal(await empty.text(), "");
});

test("a second copy of the boot script, or one in a page that has the shim, does nothing", { timeout: 10000 }, async () => {
  const env = loadBoot({ config: { url: "ws://127.0.0.1:8787/bridge" } });
  await waitFor(() => env.pushCalls.length, "the page.preloaded request");
  const state = globalThis[BOOT_KEY];
  const bootFetch = globalThis.fetch;
  const again = loadBootAgain();
  assert.equal(globalThis[BOOT_KEY], state);
  assert.equal(globalThis.fetch, bootFetch);
  assert.equal(env.pushCalls.length, 1);
  assert.deepEqual(again, []);
  await env.shim();

  const shimPage = loadBridge({ script: false, injected: true, config: { url: "ws://127.0.0.1:8787/bridge" } });
  const patched = globalThis.fetch;
  assert.deepEqual(loadBootAgain(), []);
  assert.equal(globalThis.fetch, patched);
  assert.equal(globalThis[BOOT_KEY], undefined);
  assert.equal(shimPage.pushCalls.length, 0);
});

/** Runs the built boot script once more in the current page; returns what it imported. */
function loadBootAgain() {
  const imports = [];
  const previous = globalThis.__bridgeTestImport;
  globalThis.__bridgeTestImport = (url) => {
    imports.push(url);
    return new Promise(() => {});
  };
  try {
    runBootAgain();
  } finally {
    globalThis.__bridgeTestImport = previous;
  }
  return imports;
}

test("a shim the page includes itself takes over before the answer: the boot script imports nothing", { timeout: 10000 }, async () => {
  const push = deferred();
  const env = loadBoot({ config: { url: "ws://127.0.0.1:8787/bridge" }, push: push.push });
  await waitFor(() => env.pushCalls.length, "the page.preloaded request");
  const early = fetch(`${CDN}/a.css`);
  await evaluateShim(); // as a script tag of the page would run it, while the answer is on its way
  const page = await env.shim();
  await page.open();
  push.answer(answerFor(["/a.css"])(env.pushCalls[0]));
  assert.equal(await (await early).text(), "/a.css");
  await tick(20);
  assert.deepEqual(env.imports, []);
  assert.equal(env.pushCalls.length, 1);
});

test("when the answer served the page, the shim's import waits for an idle moment; a call the answer cannot serve brings it at once", { timeout: 10000 }, async () => {
  const idle = [];
  globalThis.requestIdleCallback = (callback, options) => idle.push({ callback, options });
  try {
    const env = loadBoot({ config: { url: "ws://127.0.0.1:8787/bridge" }, push: answerFor(["/a.css"]) });
    assert.equal(await (await fetch(`${CDN}/a.css`)).text(), "/a.css");
    await tick(20);
    assert.deepEqual(env.imports, [], "not yet: the page is reading what was served");
    assert.equal(idle.length, 1);
    assert.deepEqual(idle[0].options, { timeout: 200 });
    const other = fetch(`${CDN}/other.json`);
    await waitFor(() => env.imports.length, "the shim's import");
    const page = await env.shim();
    const ws = await page.open();
    const post = await ws.nextPost("fetch");
    ws.pushWhole(post.id, head(post.body.url, 2), "{}");
    assert.equal(await (await other).text(), "{}");
    idle[0].callback();
    await tick(20);
    assert.deepEqual(env.imports, ["http://127.0.0.1:8787/bridge.js"], "imported once");

    // Nothing served (a page never preloaded): at once, no idle wait.
    idle.length = 0;
    const cold = loadBoot({ config: { url: "ws://127.0.0.1:8787/bridge" } });
    await waitFor(() => cold.imports.length, "the shim's import");
    assert.equal(idle.length, 0);
    await cold.shim();
  } finally {
    delete globalThis.requestIdleCallback;
  }
});

test("a held call the page aborts before the shim has loaded rejects with its reason once the shim takes it", { timeout: 10000 }, async () => {
  const held = heldImport();
  const env = loadBoot({ config: { url: "ws://127.0.0.1:8787/bridge" }, importShim: held.importShim });
  await waitFor(() => env.pushCalls.length, "the page.preloaded request");
  const controller = new AbortController();
  const pending = fetch(`${CDN}/slow.json`, { signal: controller.signal });
  let outcome = null;
  pending.then(() => (outcome = "resolved"), (error) => (outcome = error));
  controller.abort();
  await tick(20);
  assert.equal(outcome, null, "held: the boot script does not watch signals");
  held.release();
  const page = await env.shim();
  await page.open();
  await waitFor(() => outcome, "the call's outcome");
  assert.equal(outcome.name, "AbortError");
  assert.equal(page.ws.posts("fetch").length, 0, "never sent");
});
