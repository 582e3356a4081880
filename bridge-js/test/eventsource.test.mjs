import { test } from "node:test";
import assert from "node:assert/strict";
import { loadBridge, tick } from "../test-support/helpers.mjs";

const SSE = [["content-type", "text/event-stream; charset=utf-8"]];

function watch(source) {
  const log = [];
  source.addEventListener("open", () => log.push(`open ${source.readyState}`));
  source.addEventListener("message", (event) => log.push(`message ${JSON.stringify(event.data)} ${event.lastEventId}`));
  source.addEventListener("error", () => log.push(`error ${source.readyState}`));
  return log;
}

test("EventSource streams through the broker: fields, comments, CR/LF/CRLF split across frames, named events", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const source = new EventSource("https://events.example.com/stream", { withCredentials: true });
  assert.equal(source.readyState, EventSource.CONNECTING);
  assert.equal(source.withCredentials, true);
  const log = watch(source);
  const named = [];
  source.addEventListener("update", (event) => named.push([event.data, event.lastEventId, event.origin]));
  const post = await ws.nextPost("fetch");
  assert.equal(post.body.url, "https://events.example.com/stream");
  assert.deepEqual(post.body.headers, [["Accept", "text/event-stream"], ["Cache-Control", "no-cache"]]);
  assert.equal(post.body.cache, "no-store");
  ws.respond(post.id, { headers: SSE, url: "https://events.example.com/stream" });
  await tick(5);
  for (const part of ["data: one\r", "\n\r\n: comment\n", "event: update\nid: 9\ndata:two\ndata", ":  three\r\r", "data: \u00e9", "\n\nretry: x\n"]) {
    ws.pushBinary(post.id, Buffer.from(part));
  }
  await tick(5);
  assert.deepEqual(log, ["open 1", 'message "one" ', 'message "\u00e9" 9']);
  assert.deepEqual(named, [["two\n three", "9", "https://events.example.com"]]);
  source.close();
  assert.equal(source.readyState, EventSource.CLOSED);
  assert.equal(ws.cancels().length, 1, "close() cancels the upstream request");
});

test("the end of the stream reconnects after the retry time with Last-Event-ID", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const source = new EventSource("https://events.example.com/s");
  const log = watch(source);
  const post = await ws.nextPost("fetch");
  ws.respond(post.id, { headers: SSE });
  ws.pushBinary(post.id, Buffer.from("retry: 30\nid: 5\ndata: a\n\ndata: dropped"), true);
  ws.finish(post.id);
  await tick(5);
  assert.deepEqual(log, ["open 1", 'message "a" 5', "error 0"]);
  const again = await ws.nextPost("fetch");
  assert.deepEqual(again.body.headers.at(-1), ["Last-Event-ID", "5"]);
  source.close();
});

test("a 204, another status or another content type fails the connection for good", async () => {
  for (const [status, headers] of [[204, SSE], [500, SSE], [200, [["content-type", "text/plain"]]]]) {
    const env = loadBridge();
    const ws = await env.open();
    const source = new EventSource("https://events.example.com/x");
    const log = watch(source);
    const post = await ws.nextPost("fetch");
    ws.respond(post.id, { status, headers });
    await tick(50);
    assert.deepEqual(log, ["error 2"], `${status}`);
    assert.equal(ws.cancels().length, 1);
    assert.equal(ws.posts("fetch").length, 1, "no reconnection");
  }
});

test("a network error reconnects; an unbridged URL gets the native EventSource", async () => {
  const env = loadBridge();
  const ws = await env.open();
  const source = new EventSource("https://events.example.com/n");
  const log = watch(source);
  const post = await ws.nextPost("fetch");
  ws.fail(post.id, "network");
  await tick(5);
  assert.deepEqual(log, ["error 0"]);
  source.close();
  assert.throws(() => new EventSource("http://[bad"), (error) => error.name === "SyntaxError");
});
