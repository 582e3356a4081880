// The page's identity on the wire (docs/PROTOCOL.md, `page.identity` and the identity fields of
// `fetch`): what the shim tells the broker so the broker can send what the browser would.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadBridge, waitFor, tick, FakeElement, fetchAnswered } from "../test-support/helpers.mjs";

const header = (message, name) => message.body.headers.find((pair) => pair[0].toLowerCase() === name)?.[1];

/** Captures console.warn and the shim's error events for the test's length. */
function watchReports(env) {
  const warnings = [];
  const errors = [];
  const original = console.warn;
  console.warn = (...args) => warnings.push(args.join(" "));
  env.bridge.on("error", (error) => errors.push(error));
  return { warnings, errors, restore: () => (console.warn = original) };
}

test("page.identity is the first post, sent as soon as the socket opens, before the hello", async () => {
  const env = loadBridge({ pageUrl: "http://page.test/app/index.html?q=1#section" });
  const pending = fetch("http://page.test/api/one");
  await tick(2);
  const ws = await env.socket();
  ws.accept();
  await tick(2);
  assert.deepEqual(ws.texts[0], {
    type: "post",
    name: "page.identity",
    id: 1,
    body: {
      url: "http://page.test/app/index.html?q=1",
      userAgent: "FakeBrowser/1.0 (bridge-js tests)",
      languages: ["en-US", "en", "de"],
    },
  }, "no fragment: it is never part of a referrer");
  assert.equal(ws.texts[1].name, "fetch", "the page's first request right behind it, still before the hello");
  ws.hello();
  ws.respond(ws.texts[1].id);
  ws.finish(ws.texts[1].id);
  assert.equal((await pending).status, 200);
});

test("a broker without page.identity answers unknown_handler: the shim says nothing and works on", async () => {
  const env = loadBridge({ identityReply: "unknown_handler" });
  const reports = watchReports(env);
  try {
    const ws = await env.open();
    await waitFor(() => ws.identityAnswered.size === 1, "the refusal");
    const reply = env.bridge.post("echo", 1);
    const post = await ws.nextPost("echo");
    ws.reply(post.id, 1);
    assert.equal(await reply, 1);
    await tick(2);
    assert.deepEqual(reports.warnings, []);
    assert.deepEqual(reports.errors, []);
  } finally {
    reports.restore();
  }
});

test("a broker that refuses the identity for a reason (forbidden) is reported as an error event", async () => {
  const env = loadBridge({ identityReply: "forbidden" });
  const reports = watchReports(env);
  try {
    await env.open();
    await waitFor(() => reports.errors.length === 1, "the error event");
    assert.equal(reports.errors[0].code, "forbidden");
  } finally {
    reports.restore();
  }
});

test("a page that is not http(s) still tells its user agent; a broker's bad_request for its URL is no news, and cookie writes stay local", async () => {
  const env = loadBridge({ pageUrl: "file:///home/me/app/index.html", identityReply: "bad_request" });
  const reports = watchReports(env);
  try {
    const ws = await env.open();
    assert.equal(ws.posts("page.identity")[0].body.url, "file:///home/me/app/index.html");
    assert.equal(ws.posts("page.identity")[0].body.userAgent, "FakeBrowser/1.0 (bridge-js tests)");
    document.cookie = "a=1";
    const pending = fetch("https://api.example.com/x");
    const post = await ws.nextPost("fetch");
    assert.equal(post.body.referrer, "", "no referrer from a file: page");
    assert.equal(ws.posts("page.cookie").length, 0);
    ws.respond(post.id);
    ws.finish(post.id);
    await pending;
    assert.deepEqual([reports.warnings, reports.errors], [[], []]);
  } finally {
    reports.restore();
  }
});

test("an identity too large to go early holds every post until the hello, so it stays the first", async () => {
  const env = loadBridge({ pageUrl: `http://page.test/app/?${"x".repeat(1200)}` });
  const reply = env.bridge.post("echo", "small");
  const ws = await env.socket();
  ws.accept();
  await tick(5);
  assert.equal(ws.texts.length, 0, "nothing before the hello");
  ws.hello();
  await waitFor(() => ws.texts.length === 2, "both posts");
  assert.deepEqual(ws.texts.map((message) => message.name), ["page.identity", "echo"]);
  ws.reply(ws.texts[1].id, "small");
  assert.equal(await reply, "small");
});

test("after history.pushState the next request is preceded by a new page.identity", async () => {
  const env = loadBridge();
  const ws = await env.open();
  globalThis.location = new URL("http://page.test/app/deeper/view#x");
  const pending = fetch("http://page.test/api/two");
  const post = await ws.nextPost("fetch");
  const identities = ws.posts("page.identity");
  assert.equal(identities.length, 2);
  assert.equal(identities[1].body.url, "http://page.test/app/deeper/view");
  assert.ok(identities[1].id < post.id, "before the request");
  assert.equal(post.body.referrer, "http://page.test/app/deeper/view", "the referrer is the URL the page has now");
  ws.respond(post.id);
  ws.finish(post.id);
  await pending;
  const again = fetch("http://page.test/api/three");
  const third = await ws.nextPost("fetch");
  assert.equal(ws.posts("page.identity").length, 2, "not again while the URL stays");
  ws.respond(third.id);
  ws.finish(third.id);
  await again;
});

test("new navigator.languages (a languagechange) are told before the next request, for Accept-Language", async () => {
  const env = loadBridge();
  const ws = await env.open();
  globalThis.navigator = { userAgent: navigator.userAgent, languages: ["de-DE", "de"] };
  env.document.cookie = "a=1"; // a cookie write is a request too: the broker stores it for the page
  const cookiePost = await ws.nextPost("page.cookie");
  const identities = ws.posts("page.identity");
  assert.equal(identities.length, 2);
  assert.deepEqual(identities[1].body.languages, ["de-DE", "de"]);
  assert.ok(identities[1].id < cookiePost.id);
});

/** Runs fetch(url, init) and returns the post's body (the request is answered and consumed). */
async function fetchPost(ws, url, init) {
  return (await fetchAnswered(ws, url, init)).post.body;
}

test("fetch sends credentials, mode, the resolved referrer and the referrer policy as the page asked", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const plain = await fetchPost(ws, "https://api.example.com/a");
  assert.equal(plain.credentials, "same-origin", "fetch's default");
  assert.equal(plain.mode, "cors");
  assert.equal(plain.referrer, "http://page.test/app/index.html", "about:client is the page's URL");
  assert.equal(plain.referrerPolicy, "strict-origin-when-cross-origin", "the default policy");

  const chosen = await fetchPost(ws, "https://api.example.com/b", {
    credentials: "include",
    mode: "no-cors",
    referrer: "",
    referrerPolicy: "unsafe-url",
  });
  assert.deepEqual(
    [chosen.credentials, chosen.mode, chosen.referrer, chosen.referrerPolicy],
    ["include", "no-cors", "", "unsafe-url"],
    'referrer "" is none',
  );
  const omit = await fetchPost(ws, "http://page.test/c", { credentials: "omit", referrer: "http://page.test/elsewhere#frag" });
  assert.equal(omit.credentials, "omit");
  assert.equal(omit.referrer, "http://page.test/elsewhere", "a same-origin referrer URL, absolute, without fragment");
  const fromRequest = await fetchPost(ws, new Request("https://api.example.com/d", { credentials: "omit", referrerPolicy: "origin" }));
  assert.equal(fromRequest.credentials, "omit");
  assert.equal(fromRequest.referrerPolicy, "origin");
});

test("the document's <meta name=referrer> is the policy of requests that set none; the last valid one wins", async () => {
  const env = loadBridge();
  const ws = await env.open();
  env.document.metas.push(new FakeElement("meta", { name: "referrer", content: "no-referrer" }));
  assert.equal((await fetchPost(ws, "https://api.example.com/1")).referrerPolicy, "no-referrer");
  env.document.metas.push(new FakeElement("meta", { name: "Referrer", content: " never-heard-of " }));
  assert.equal((await fetchPost(ws, "https://api.example.com/2")).referrerPolicy, "no-referrer", "an invalid value changes nothing");
  env.document.metas.push(new FakeElement("meta", { name: "referrer", content: "always" }));
  assert.equal((await fetchPost(ws, "https://api.example.com/3")).referrerPolicy, "unsafe-url", "Chromium's legacy keywords");
  env.document.metas.push(new FakeElement("meta", { name: "description", content: "origin" }));
  assert.equal((await fetchPost(ws, "https://api.example.com/4")).referrerPolicy, "unsafe-url");
  const own = await fetchPost(ws, "https://api.example.com/5", { referrerPolicy: "same-origin" });
  assert.equal(own.referrerPolicy, "same-origin", "the request's own policy wins");
});

test("a page cannot forge its identity through fetch headers: forbidden names are dropped, as Chromium drops them", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const body = await fetchPost(ws, "https://api.example.com/h", {
    method: "POST",
    body: "x",
    headers: [
      ["Cookie", "session=forged"],
      ["User-Agent", "forged"],
      ["Referer", "https://forged.example/"],
      ["Origin", "https://forged.example"],
      ["Sec-Fetch-Site", "same-origin"],
      ["Proxy-Authorization", "x"],
      ["X-HTTP-Method-Override", "TRACE"],
      ["Accept-Language", "fr"],
      ["Accept", "application/json"],
      ["X-Mine", "1"],
    ],
  });
  const names = body.headers.map((pair) => pair[0].toLowerCase()).sort();
  assert.deepEqual(names, ["accept", "accept-language", "content-type", "x-mine"], "a page may set Accept and Accept-Language, as in Chromium");
  assert.equal(header({ body }, "accept-language"), "fr");
});

test("documentCookie goes with requests to the page's scheme and host only, and not with credentials omit", async () => {
  const env = loadBridge();
  const ws = await env.open();
  env.document.cookieStore.set("theme", "dark");
  assert.equal((await fetchPost(ws, "http://page.test/api")).documentCookie, "theme=dark");
  assert.equal((await fetchPost(ws, "http://page.test:8080/api")).documentCookie, "theme=dark", "cookies are per host, not per port");
  assert.equal("documentCookie" in (await fetchPost(ws, "https://page.test/api")), false, "another scheme");
  assert.equal("documentCookie" in (await fetchPost(ws, "http://api.page.test/api")), false, "another host");
  assert.equal("documentCookie" in (await fetchPost(ws, "http://page.test/api", { credentials: "omit" })), false);
  env.document.cookieStore.clear();
  assert.equal("documentCookie" in (await fetchPost(ws, "http://page.test/api")), false, "nothing when the page has none");
});

test("XHR sends credentials from withCredentials, mode cors, the page as referrer and the document's policy; User-Agent is dropped", async () => {
  const env = loadBridge();
  const ws = await env.open();
  env.document.cookieStore.set("a", "1");
  env.document.metas.push(new FakeElement("meta", { name: "referrer", content: "origin" }));
  for (const withCredentials of [false, true]) {
    const xhr = new XMLHttpRequest();
    xhr.open("GET", "/api/x");
    xhr.withCredentials = withCredentials;
    xhr.setRequestHeader("User-Agent", "forged");
    xhr.setRequestHeader("X-Mine", "1");
    xhr.send();
    const post = await ws.nextPost("fetch");
    assert.equal(post.body.credentials, withCredentials ? "include" : "same-origin");
    assert.equal(post.body.mode, "cors");
    assert.equal(post.body.referrer, "http://page.test/app/index.html");
    assert.equal(post.body.referrerPolicy, "origin");
    assert.equal(post.body.documentCookie, "a=1");
    assert.deepEqual(post.body.headers, [["X-Mine", "1"]]);
    ws.respond(post.id);
    ws.finish(post.id);
    await waitFor(() => xhr.readyState === 4, "the XHR to finish");
  }
});
