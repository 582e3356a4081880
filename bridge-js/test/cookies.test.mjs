// document.cookie and the broker's jar in step (bridge-js/README.md, "Cookies"): page writes are
// posted as page.cookie, a bridged response's `cookies` go through the native setter before the
// page sees the response, and those writes are not posted back.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadBridge, waitFor, tick, FakeDocument } from "../test-support/helpers.mjs";

test("a page write to document.cookie reaches the browser and is posted as page.cookie, in order before a later fetch", async () => {
  const env = loadBridge();
  const ws = await env.open();
  document.cookie = "theme=dark; Path=/; Max-Age=3600";
  assert.equal(document.cookie, "theme=dark", "the native setter ran");
  const pending = fetch("http://page.test/api");
  const cookiePost = await ws.nextPost("page.cookie");
  const fetchPost = await ws.nextPost("fetch");
  assert.deepEqual(cookiePost.body, { cookie: "theme=dark; Path=/; Max-Age=3600" }, "the exact string the page assigned");
  assert.ok(cookiePost.id < fetchPost.id, "page.cookie is sent before the fetch that follows it");
  assert.equal("documentCookie" in fetchPost.body, false, "the jar has it, with its Path: it is the jar's to send");
  ws.reply(cookiePost.id, { stored: true });
  ws.respond(fetchPost.id);
  ws.finish(fetchPost.id);
  await pending;
});

test("the wrapped accessor stays the document's: same getter, a setter named cookie, values converted as strings", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const descriptor = Object.getOwnPropertyDescriptor(FakeDocument.prototype, "cookie");
  assert.equal(descriptor.configurable, true);
  assert.equal(descriptor.set.name, "set cookie");
  assert.equal("prototype" in descriptor.set, false, "not a constructor");
  document.cookie = 42;
  assert.equal(document.cookie, "42");
  assert.deepEqual((await ws.nextPost("page.cookie")).body, { cookie: "42" });
  const other = new FakeDocument();
  other.cookie = "x=1";
  await tick(2);
  assert.equal(ws.posts("page.cookie").length, 1, "another document's write is not this page's");
});

test("a broker without page.cookie answers unknown_handler: nothing is reported", async () => {
  const env = loadBridge();
  const warnings = [];
  const original = console.warn;
  console.warn = (...args) => warnings.push(args.join(" "));
  try {
    const ws = await env.open();
    const errors = [];
    env.bridge.on("error", (error) => errors.push(error));
    document.cookie = "a=1";
    const post = await ws.nextPost("page.cookie");
    ws.fail(post.id, "unknown_handler");
    await tick(2);
    assert.deepEqual([warnings, errors], [[], []]);
  } finally {
    console.warn = original;
  }
});

test("fetch: the response's cookies are in document.cookie when the fetch resolves, and are not posted back", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const pending = fetch("http://page.test/login", { method: "POST", body: "user=a" });
  const post = await ws.nextPost("fetch");
  let seenAtResolve = null;
  const resolved = pending.then((response) => {
    seenAtResolve = document.cookie;
    return response;
  });
  ws.event(post.id, "response", {
    status: 200,
    statusText: "OK",
    headers: [["content-type", "text/plain"]],
    url: "http://page.test/login",
    cookies: ["session=abc; Path=/; SameSite=Lax", "pref=1; Max-Age=60"],
  });
  const response = await resolved;
  assert.equal(seenAtResolve, "session=abc; pref=1");
  assert.equal(response.headers.get("set-cookie"), null);
  ws.finish(post.id);
  await response.arrayBuffer();
  await tick(2);
  assert.equal(ws.posts("page.cookie").length, 0, "the jar has them already");
  assert.deepEqual(env.document.cookieWrites, ["session=abc; Path=/; SameSite=Lax", "pref=1; Max-Age=60"]);
});

test("fetch: cookies on a reply without a response event (and on a manual redirect) are applied too; a deletion deletes", async () => {
  const env = loadBridge();
  const ws = await env.open();
  env.document.cookieStore.set("session", "abc");
  const pending = fetch("http://page.test/logout");
  const post = await ws.nextPost("fetch");
  ws.reply(post.id, {
    status: 200,
    statusText: "OK",
    headers: [],
    url: "http://page.test/logout",
    body: "bye",
    bodyEncoding: "text",
    cookies: ["session=; Max-Age=0; Path=/"],
  });
  const response = await pending;
  assert.equal(await response.text(), "bye");
  assert.equal(document.cookie, "");

  const manual = fetch("http://page.test/go", { redirect: "manual" });
  const redirect = await ws.nextPost("fetch");
  ws.event(redirect.id, "response", { status: 302, statusText: "Found", headers: [["location", "/next"]], url: "http://page.test/go", cookies: ["hop=1"] });
  const opaque = await manual;
  assert.equal(opaque.type, "opaqueredirect");
  assert.equal(document.cookie, "hop=1", "a browser stores cookies from a redirect it does not follow");
  ws.finish(redirect.id, { status: 302 });
});

test("XHR: the response's cookies are in document.cookie at readystatechange 2", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const xhr = new XMLHttpRequest();
  const seen = [];
  xhr.onreadystatechange = () => seen.push([xhr.readyState, document.cookie]);
  xhr.open("POST", "/login");
  xhr.withCredentials = true;
  xhr.send("user=a");
  const post = await ws.nextPost("fetch");
  ws.event(post.id, "response", { status: 200, statusText: "OK", headers: [], url: "http://page.test/login", cookies: ["session=xyz"] });
  ws.finish(post.id);
  await waitFor(() => xhr.readyState === 4, "the XHR to finish");
  assert.deepEqual(seen[1], [2, "session=xyz"]);
  assert.equal(ws.posts("page.cookie").length, 0);
});

test("entries that are not strings, or an absent list, change nothing", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const pending = fetch("http://page.test/x");
  const post = await ws.nextPost("fetch");
  ws.event(post.id, "response", { status: 200, headers: [], url: "http://page.test/x", cookies: [7, null, "ok=1"] });
  await pending;
  assert.equal(document.cookie, "ok=1");
  const second = fetch("http://page.test/y");
  const next = await ws.nextPost("fetch");
  ws.event(next.id, "response", { status: 200, headers: [], url: "http://page.test/y", cookies: "no=1" });
  await second;
  assert.equal(document.cookie, "ok=1");
});

test("documentCookie carries only the page's cookies the jar never had: set before the shim, or natively", async () => {
  const env = loadBridge();
  const ws = await env.open();
  env.document.cookieStore.set("early", "1"); // the browser's own, as from the page's HTTP response
  env.document.cookieStore.set("", "nameless");
  document.cookie = "mine=2";
  const first = fetch("http://page.test/a");
  const post = await ws.nextPost("fetch");
  assert.equal(post.body.documentCookie, "early=1; nameless", "not mine=2, which page.cookie gave the jar");
  ws.event(post.id, "response", { status: 200, headers: [], url: "http://page.test/a", cookies: ["early=3; Path=/app"] });
  await first;
  const second = fetch("http://page.test/b");
  const next = await ws.nextPost("fetch");
  assert.equal(next.body.documentCookie, "nameless", "early came through a bridged response: the jar has it now");
  ws.respond(next.id);
  ws.finish(next.id);
  await second;
});

test("EventSource: credentials from withCredentials, the page's referrer and cookies, and its response's cookies applied before open", async () => {
  const env = loadBridge();
  const ws = await env.open();
  env.document.cookieStore.set("early", "1");
  for (const withCredentials of [false, true]) {
    const source = new EventSource("/events", { withCredentials });
    let cookieAtOpen = null;
    source.onopen = () => (cookieAtOpen = document.cookie);
    const post = await ws.nextPost("fetch");
    assert.deepEqual(
      [post.body.credentials, post.body.mode, post.body.referrer, post.body.referrerPolicy, post.body.documentCookie],
      [withCredentials ? "include" : "same-origin", "cors", "http://page.test/app/index.html", "strict-origin-when-cross-origin", "early=1"],
    );
    const cookie = `stream${withCredentials ? 2 : 1}=1`;
    ws.event(post.id, "response", { status: 200, statusText: "OK", headers: [["content-type", "text/event-stream"]], url: "http://page.test/events", cookies: [cookie] });
    await waitFor(() => cookieAtOpen !== null, "open");
    assert.ok(cookieAtOpen.endsWith(cookie), `${cookie} is in document.cookie at open: ${cookieAtOpen}`);
    source.close();
  }
});

test("document.cookie is read once for the fetches a script starts together, and afresh in a later turn", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const store = env.document.cookieStore;
  let reads = 0;
  const entries = store[Symbol.iterator].bind(store);
  store[Symbol.iterator] = () => {
    reads++;
    return entries();
  };
  store.set("early", "1");
  const started = [1, 2, 3, 4, 5].map((n) => fetch(`http://page.test/r${n}`));
  const posts = [];
  for (let n = 0; n < 5; n++) posts.push(await ws.nextPost("fetch"));
  assert.deepEqual(posts.map((post) => post.body.documentCookie), Array(5).fill("early=1"));
  assert.equal(reads, 1, "one read for the five requests started together");
  store.set("native", "3"); // the browser's own cookie, set between two turns
  const later = fetch("http://page.test/later");
  const post = await ws.nextPost("fetch");
  assert.equal(post.body.documentCookie, "early=1; native=3");
  assert.equal(reads, 2);
  for (const each of [...posts, post]) {
    ws.respond(each.id);
    ws.finish(each.id);
  }
  await Promise.all([...started, later]);
});
