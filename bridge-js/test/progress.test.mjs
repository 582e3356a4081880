import { test } from "node:test";
import assert from "node:assert/strict";
import { loadBridge, waitFor, tick } from "../test-support/helpers.mjs";

const near = (actual, expected, what) => assert.ok(Math.abs(actual - expected) < 1e-9, `${what}: ${actual} != ${expected}`);

async function completeFetch(ws, post, pending) {
  ws.respond(post.id);
  ws.pushBinary(post.id, "x", true);
  ws.finish(post.id);
  await (await pending).text();
}

test("a page load: one group, progress combines the document and the broker's group.progress, ends at 1", async () => {
  const env = loadBridge({ readyState: "loading" });
  const events = [];
  env.bridge.on("progress", (event) => events.push(event));
  const ws = await env.open();
  const group = env.bridge.group;
  assert.match(group, /^load-/);
  near(env.bridge.progress, 0.1, "the document is parsing");
  assert.equal(env.bridge.loading, true);

  const pendingA = fetch("https://a.example.com/1");
  const pendingB = fetch("https://a.example.com/2");
  const a = await ws.nextPost("fetch");
  const b = await ws.nextPost("fetch");
  assert.equal(a.body.group, group);
  assert.equal(b.body.group, group);
  near(env.bridge.progress, 0.1, "never goes back when requests start");

  ws.push({ type: "event", name: "group.progress", body: { group, requests: 2, finished: 0, loaded: 50, total: 100, progress: 0.5 } });
  near(env.bridge.progress, (0.1 + 1) / 3, "document 0.1 + two requests at half");
  ws.push({ type: "event", name: "group.progress", body: { group: "someone-else", requests: 1, finished: 1, progress: 1 } });
  near(env.bridge.progress, (0.1 + 1) / 3, "other groups are ignored");

  env.document.advance("interactive");
  near(env.bridge.progress, (0.5 + 1) / 3, "interactive document");
  await completeFetch(ws, a, pendingA);
  ws.push({ type: "event", name: "group.progress", body: { group, requests: 2, finished: 1, loaded: 90, total: 100, progress: 0.75 } });
  near(env.bridge.progress, (0.5 + 1.5) / 3, "one request done, the other half way");

  env.document.advance("complete");
  near(env.bridge.progress, (1 + 1.5) / 3, "after load");
  await tick(150);
  assert.equal(env.bridge.loading, true, "a request is still in flight");

  await completeFetch(ws, b, pendingB);
  assert.equal(env.bridge.progress, 0.99, "1 is kept for the end of the load");
  await waitFor(() => env.bridge.progress === 1, "the end of the load");
  assert.equal(env.bridge.loading, false);
  assert.equal(env.bridge.group, null);
  assert.deepEqual(events.at(-1), { progress: 1, group, done: true });
  const values = events.map((event) => event.progress);
  assert.deepEqual(values, [...values].sort((x, y) => x - y), "monotonic");

  const later = fetch("https://a.example.com/later");
  const latePost = await ws.nextPost("fetch");
  assert.equal("group" in latePost.body, false, "requests after the load carry no group");
  ws.fail(latePost.id, "network");
  await assert.rejects(later, TypeError);
});

test("loaded late, without the broker's group events: finished requests still drive progress", async () => {
  const env = loadBridge({ readyState: "complete" });
  const ws = await env.open();
  const pending = fetch("https://a.example.com/only");
  const post = await ws.nextPost("fetch");
  assert.equal(env.bridge.progress, 0, "loaded after the document completed: only requests count");
  await tick(150);
  assert.equal(env.bridge.loading, true);
  ws.fail(post.id, "network");
  await assert.rejects(pending, TypeError);
  await waitFor(() => env.bridge.progress === 1, "the end of the load");
});

test("XHR requests count in the page load too", async () => {
  const env = loadBridge({ readyState: "complete" });
  const ws = await env.open();
  const xhr = new XMLHttpRequest();
  xhr.open("GET", "https://a.example.com/x");
  xhr.send();
  const post = await ws.nextPost("fetch");
  assert.equal(post.body.group, env.bridge.group);
  await tick(150);
  assert.equal(env.bridge.loading, true);
  ws.respond(post.id);
  ws.finish(post.id);
  await waitFor(() => env.bridge.progress === 1, "the end of the load");
});

test("beginLoad() starts a new group for a client-side navigation", async () => {
  const env = loadBridge({ readyState: "complete" });
  const ws = await env.open();
  await waitFor(() => !env.bridge.loading, "the first load to end");
  const group = env.bridge.beginLoad();
  assert.equal(env.bridge.group, group);
  assert.equal(env.bridge.progress, 0);
  const pending = fetch("https://a.example.com/route");
  const post = await ws.nextPost("fetch");
  assert.equal(post.body.group, group);
  ws.push({ type: "event", name: "group.progress", body: { group, requests: 1, finished: 0, progress: 0.4 } });
  near(env.bridge.progress, 0.4, "no document part in a client-side load");
  await completeFetch(ws, post, pending);
  await waitFor(() => env.bridge.progress === 1, "the end of the route load");
});

test("data-loading-bar shows a fixed bar that follows progress and fades out at 1", async () => {
  const env = loadBridge({ readyState: "loading", attributes: { "data-loading-bar": "#ff0000" } });
  const bar = env.document.body.children.find((element) => element.hasAttribute("data-bridge-loading-bar"));
  assert.ok(bar, "the bar is in the page");
  assert.equal(bar.style.position, "fixed");
  assert.equal(bar.style.top, "0");
  assert.equal(bar.style.background, "#ff0000");
  assert.equal(bar.style.pointerEvents, "none");
  assert.equal(bar.style.width, "10.00%");
  assert.equal(bar.style.opacity, "1");
  assert.match(bar.style.transition, /width/);

  env.document.advance("interactive");
  assert.equal(bar.style.width, "50.00%");
  env.document.advance("complete");
  await waitFor(() => bar.style.width === "100%", "the bar to fill");
  assert.equal(bar.style.opacity, "1");
  await waitFor(() => bar.style.opacity === "0", "the bar to fade out");

  env.bridge.beginLoad();
  assert.equal(bar.style.opacity, "1", "a new load shows the bar again");
  assert.equal(bar.style.width, "0.00%");

  assert.equal(env.bridge.showLoadingBar().element, bar, "one bar per page");
  env.bridge.hideLoadingBar();
  assert.equal(env.document.body.children.includes(bar), false);
});

test("showLoadingBar() after the load has ended stays hidden until the next load", async () => {
  const env = loadBridge({ readyState: "complete" });
  await waitFor(() => !env.bridge.loading, "the load to end");
  const { element } = env.bridge.showLoadingBar({ color: "blue", height: "2px" });
  assert.equal(element.style.opacity, "0");
  assert.equal(element.style.height, "2px");
  env.bridge.beginLoad();
  assert.equal(element.style.opacity, "1");
});
