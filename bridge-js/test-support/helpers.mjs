// A minimal fake browser for bridge.js: the test plays the broker through FakeWebSocket.
// bridge.js (the built, minified file the broker serves) runs in this realm
// (vm.runInThisContext), so its objects compare with the test's.
import fs from "node:fs";
import path from "node:path";
import vm from "node:vm";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const SHIM_SOURCE = fs.readFileSync(path.join(here, "..", "bridge.js"), "utf8");
// The bootstrap snippet as the build wrote it: the text a page puts in its inline script.
export const SNIPPET_SOURCE = fs.readFileSync(path.join(here, "..", "bridge-snippet.js"), "utf8");
export const SNIPPET_KEY = Symbol.for("bridge-broker.snippet");
// The boot script as the build wrote it (src/boot.js): what a host injects at document start.
export const BOOT_SOURCE = fs.readFileSync(path.join(here, "..", "bridge-boot.js"), "utf8");
export const BOOT_KEY = Symbol.for("bridge-broker.boot");
export const PAGE_URL = "http://page.test/app/index.html";
export const SCRIPT_URL = "http://127.0.0.1:8787/bridge.js";

// ------------------------------------------------------------------------------- fake DOM

export class FakeElement {
  constructor(tagName, attributes = {}) {
    this.tagName = tagName.toUpperCase();
    this.attributes = new Map(Object.entries(attributes));
    this.style = {};
    this.children = [];
    this.parentNode = null;
  }

  get src() {
    return this.attributes.has("src") ? new URL(this.attributes.get("src"), PAGE_URL).href : "";
  }

  getAttribute(name) {
    return this.attributes.has(name) ? this.attributes.get(name) : null;
  }

  hasAttribute(name) {
    return this.attributes.has(name);
  }

  setAttribute(name, value) {
    this.attributes.set(name, String(value));
  }

  appendChild(child) {
    child.parentNode = this;
    this.children.push(child);
    return child;
  }

  removeChild(child) {
    this.children = this.children.filter((item) => item !== child);
    child.parentNode = null;
    return child;
  }

  get offsetWidth() {
    return 0;
  }
}

export class FakeDocument extends EventTarget {
  constructor({ readyState = "loading", currentScript = null, scripts = [] } = {}) {
    super();
    this.readyState = readyState;
    this.currentScript = currentScript;
    this.baseURI = PAGE_URL;
    this.documentElement = new FakeElement("html");
    this.body = new FakeElement("body");
    this.documentElement.appendChild(this.body);
    this.scripts = scripts;
    this.metas = [];
    this.cookieStore = new Map();
    this.cookieWrites = [];
  }

  /** A browser's document.cookie for one host, enough for the shim: name=value, Max-Age/Expires deletion, HttpOnly refused. */
  get cookie() {
    return Array.from(this.cookieStore, ([name, value]) => (name ? `${name}=${value}` : value)).join("; ");
  }

  set cookie(text) {
    this.cookieWrites.push(String(text));
    const [pair, ...attributes] = String(text).split(";");
    const equals = pair.indexOf("=");
    const name = equals < 0 ? "" : pair.slice(0, equals).trim();
    const value = equals < 0 ? pair.trim() : pair.slice(equals + 1).trim();
    const attribute = (wanted) => attributes.map((item) => item.trim().split("=")).find(([key]) => key.toLowerCase() === wanted);
    if (attribute("httponly")) return;
    const maxAge = attribute("max-age");
    const expires = attribute("expires");
    if ((maxAge && Number(maxAge[1]) <= 0) || (!maxAge && expires && Date.parse(expires[1]) < Date.now())) this.cookieStore.delete(name);
    else this.cookieStore.set(name, value);
  }

  createElement(tagName) {
    return new FakeElement(tagName);
  }

  querySelectorAll(selector) {
    if (selector === "meta[name]") return this.metas;
    if (selector !== "script[src]") return [];
    return this.scripts.filter((script) => script.hasAttribute("src"));
  }

  /** Moves readyState on and fires what a browser fires. */
  advance(state) {
    this.readyState = state;
    this.dispatchEvent(new Event("readystatechange"));
    if (state === "complete") globalThis.dispatchEvent(new Event("load"));
  }
}

export class FakeDOMParser {
  parseFromString(text, type) {
    const parsererror = type !== "text/html" && !/^\s*</.test(text);
    return {
      fakeDocument: true,
      type,
      text,
      getElementsByTagName: (name) => (name === "parsererror" && parsererror ? [{}] : []),
    };
  }
}

// ---------------------------------------------------------------------------- binary frames

export function encodeFrame(id, payload, end = false, kind = 1) {
  const bytes = typeof payload === "string" ? new TextEncoder().encode(payload) : new Uint8Array(payload);
  const frame = new Uint8Array(10 + bytes.byteLength);
  const view = new DataView(frame.buffer);
  view.setUint8(0, kind);
  view.setUint8(1, end ? 1 : 0);
  view.setBigUint64(2, BigInt(id));
  frame.set(bytes, 10);
  return frame;
}

/** A whole-response frame (kind 0x02): the head's length, the head as JSON, the body. */
export function wholeFrame(id, head, body) {
  const headBytes = new TextEncoder().encode(JSON.stringify(head));
  const bodyBytes = typeof body === "string" ? new TextEncoder().encode(body) : new Uint8Array(body);
  const payload = new Uint8Array(4 + headBytes.byteLength + bodyBytes.byteLength);
  new DataView(payload.buffer).setUint32(0, headBytes.byteLength);
  payload.set(headBytes, 4);
  payload.set(bodyBytes, 4 + headBytes.byteLength);
  return encodeFrame(id, payload, true, 2);
}

export function decodeFrame(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return {
    kind: view.getUint8(0),
    flags: view.getUint8(1),
    end: (view.getUint8(1) & 1) === 1,
    id: Number(view.getBigUint64(2)),
    idBytes: Array.from(bytes.subarray(2, 10)),
    payload: bytes.subarray(10),
  };
}

/**
 * The body of an answer to POST /bridge/early: each item a frame as the broker would send it on a
 * WebSocket, a JSON envelope (an object, or a string taken as is) as a text frame, a Uint8Array as a
 * binary frame; each frame is [kind 1 text / 2 binary][4-byte big-endian length][bytes].
 */
export function earlyAnswer(items) {
  const frames = items.map((item) => item instanceof Uint8Array
    ? [2, item]
    : [1, new TextEncoder().encode(typeof item === "string" ? item : JSON.stringify(item))]);
  const out = new Uint8Array(frames.reduce((total, [, bytes]) => total + 5 + bytes.byteLength, 0));
  let at = 0;
  for (const [kind, bytes] of frames) {
    out[at] = kind;
    new DataView(out.buffer).setUint32(at + 1, bytes.byteLength);
    out.set(bytes, at + 5);
    at += 5 + bytes.byteLength;
  }
  return out;
}

/** A batch message (kind 0x03) of whole responses, `[id, head, body]` each. */
export function batchFrame(responses) {
  const frames = responses.map(([id, head, body]) => wholeFrame(id, head, body));
  const payload = new Uint8Array(frames.reduce((total, frame) => total + 4 + frame.byteLength, 0));
  let at = 0;
  for (const frame of frames) {
    new DataView(payload.buffer).setUint32(at, frame.byteLength);
    payload.set(frame, at + 4);
    at += 4 + frame.byteLength;
  }
  return encodeFrame(0, payload, true, 3);
}

// --------------------------------------------------------------------------- fake WebSocket

export class FakeWebSocket {
  static instances = [];
  // How the fake broker answers the shim's page.identity once its hello is out: {} (a broker that
  // knows it), "unknown_handler" (one older than it), or null (the test answers).
  static identityReply = {};

  constructor(url, protocols) {
    this.url = url;
    this.protocols = protocols;
    this.readyState = 0;
    this.binaryType = "blob";
    this.bufferedAmount = 0;
    this.sent = [];
    this.closedByClient = null;
    this.cursor = 0;
    this.helloSent = false;
    this.identityAnswered = new Set();
    this.identityReply = FakeWebSocket.identityReply;
    FakeWebSocket.instances.push(this);
  }

  send(data) {
    if (this.readyState !== 1) throw new Error(`send() on a socket in state ${this.readyState}`);
    this.sent.push(typeof data === "string" ? data : new Uint8Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength)));
    if (this.helloSent && typeof data === "string" && data.includes('"page.identity"')) queueMicrotask(() => this.answerIdentity());
  }

  /** As a broker: its hello first, then the replies to the page.identity posts it read. */
  answerIdentity() {
    if (this.identityReply === null || this.readyState !== 1) return;
    for (const post of this.posts("page.identity")) {
      if (this.identityAnswered.has(post.id)) continue;
      this.identityAnswered.add(post.id);
      if (typeof this.identityReply === "string") this.fail(post.id, this.identityReply, "no handler named page.identity");
      else this.reply(post.id, this.identityReply);
    }
  }

  close(code, reason) {
    this.readyState = 3;
    this.closedByClient = { code, reason };
  }

  // -- what the test sees

  get texts() {
    return this.sent.filter((item) => typeof item === "string").map((item) => JSON.parse(item));
  }

  get frames() {
    return this.sent.filter((item) => typeof item !== "string").map(decodeFrame);
  }

  posts(name) {
    return this.texts.filter((message) => message.type === "post" && (name === undefined || message.name === name));
  }

  cancels() {
    return this.texts.filter((message) => message.type === "cancel");
  }

  framesFor(id) {
    return this.frames.filter((frame) => frame.id === id);
  }

  /** The bytes of the body sent for post `id`, once its END frame is there. */
  async bodyOf(id) {
    await waitFor(() => this.framesFor(id).some((frame) => frame.end), `END frame for post ${id}`);
    const frames = this.framesFor(id);
    return Buffer.concat(frames.map((frame) => Buffer.from(frame.payload)));
  }

  /** Waits for the next post (of `name`) this socket has not handed out yet. */
  async nextPost(name) {
    return waitFor(() => {
      const posts = this.posts(name);
      if (posts.length > (this.handed?.[name] ?? 0)) {
        this.handed = this.handed || {};
        this.handed[name] = (this.handed[name] ?? 0) + 1;
        return posts[this.handed[name] - 1];
      }
      return null;
    }, `a post named ${name}`);
  }

  // -- what the test does as the broker

  accept() {
    this.readyState = 1;
    this.onopen?.({ type: "open" });
  }

  /** A handshake the broker refused or never answered: error, then close 1006. */
  refuse() {
    this.onerror?.({ type: "error" });
    this.drop(1006);
  }

  hello(limits = {}, extra = {}) {
    if (this.readyState === 0) this.accept();
    this.push({
      type: "hello",
      protocol: 1,
      broker: "bridge-broker 0.1.0",
      handlers: ["cache.clear", "echo", "fetch"],
      limits: { maxMessageBytes: 16 * 1024 * 1024, maxInFlight: 64, binaryChunkBytes: 65536, ...limits },
      ...extra,
    });
    this.helloSent = true;
    this.answerIdentity();
  }

  push(message) {
    this.onmessage?.({ type: "message", data: JSON.stringify(message) });
  }

  pushBinary(id, payload, end = false) {
    this.onmessage?.({ type: "message", data: encodeFrame(id, payload, end).buffer });
  }

  reply(id, body) {
    this.push({ type: "reply", id, ok: true, body });
  }

  /** A whole-response frame (kind 0x02): the reply body `head` as JSON, then `body`. */
  pushWhole(id, head, body) {
    this.onmessage?.({ type: "message", data: wholeFrame(id, head, body).buffer });
  }

  /** A batch frame (kind 0x03) of whole responses, `[id, head, body]` each, as one message. */
  pushBatch(responses) {
    this.onmessage?.({ type: "message", data: batchFrame(responses).buffer });
  }

  fail(id, code, message = `${code} happened`) {
    this.push({ type: "reply", id, ok: false, error: { code, message } });
  }

  event(id, name, body) {
    this.push({ type: "event", id, name, body });
  }

  /** The `response` event of a fetch post. */
  respond(id, { status = 200, statusText = "OK", headers = [["content-type", "text/plain"]], url, redirected = false } = {}) {
    this.event(id, "response", { url, status, statusText, headers, redirected, cache: { status: "miss" } });
  }

  /** A fetch reply after a binary body. */
  finish(id, { status = 200, url, bytes = 0 } = {}) {
    this.reply(id, { url, status, statusText: "OK", headers: [], redirected: false, body: null, bodyEncoding: "binary", bodyBytes: bytes, cache: { status: "miss" } });
  }

  drop(code = 1006, reason = "") {
    this.readyState = 3;
    this.onclose?.({ type: "close", code, reason, wasClean: false });
  }
}

// ------------------------------------------------------------------------ fake native XHR

export class FakeNativeXHR extends EventTarget {
  static instances = [];

  constructor() {
    super();
    this.readyState = 0;
    this.status = 0;
    this.statusText = "";
    this.responseType = "";
    this.response = "";
    this.responseText = "";
    this.responseURL = "";
    this.responseXML = null;
    this.timeout = 0;
    this.withCredentials = false;
    this.upload = new EventTarget();
    this.headers = [];
    FakeNativeXHR.instances.push(this);
  }

  open(method, url, async = true) {
    this.opened = { method, url, async };
    this.readyState = 1;
    this.dispatchEvent(new Event("readystatechange"));
  }

  setRequestHeader(name, value) {
    this.headers.push([name, value]);
  }

  send(body) {
    this.sentBody = body;
    // The broker's early endpoint, as the fake native fetch plays it (the boot script posts with XHR).
    const early = FakeNativeXHR.early;
    if (early && this.opened.method === "POST" && new URL(this.opened.url).pathname === "/bridge/early") {
      Promise.resolve(early(this.opened.url, body, { method: "POST", body, credentials: this.withCredentials ? "include" : "omit", xhr: true }))
        .then(async (response) => {
          this.status = response.status;
          const bytes = await response.arrayBuffer();
          this.response = this.responseType === "arraybuffer" ? bytes : new TextDecoder().decode(bytes);
          this.readyState = 4;
          this.onload?.(new Event("load"));
        }, () => {
          this.readyState = 4;
          this.onerror?.(new Event("error"));
        });
    }
  }

  abort() {
    this.aborted = true;
  }

  overrideMimeType() {}

  getResponseHeader() {
    return null;
  }

  getAllResponseHeaders() {
    return "";
  }

  /** Plays a complete native response. */
  complete(text) {
    this.readyState = 4;
    this.status = 200;
    this.responseText = this.response = text;
    this.dispatchEvent(new Event("readystatechange"));
    const load = new Event("load");
    Object.assign(load, { loaded: text.length, total: text.length, lengthComputable: true });
    this.dispatchEvent(load);
  }
}

// ------------------------------------------------------------------------------- utilities

/**
 * Runs the page's fetch(url, init) over the open socket `ws` and answers it (`answer`: what
 * ws.respond takes); returns the post and the response, its body read.
 */
export async function fetchAnswered(ws, url, init, answer) {
  const pending = fetch(url, init);
  const post = await ws.nextPost("fetch");
  ws.respond(post.id, answer);
  ws.finish(post.id);
  const response = await pending;
  await response.arrayBuffer();
  return { post, response };
}

export async function waitFor(predicate, what = "condition", timeoutMs = 3000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = predicate();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

export const tick = (ms = 0) => new Promise((resolve) => setTimeout(resolve, ms));

/** Splits a multipart/form-data body into {headers, body} parts. */
export function parseMultipart(buffer, contentType) {
  const boundary = /boundary=([^;]+)/.exec(contentType)[1];
  const text = Buffer.from(buffer).toString("latin1");
  const sections = text.split(`--${boundary}`);
  if (sections.at(-1) !== "--\r\n") throw new Error(`multipart does not end with the closing boundary: ${JSON.stringify(sections.at(-1))}`);
  return sections.slice(1, -1).map((section) => {
    if (!section.startsWith("\r\n") || !section.endsWith("\r\n")) throw new Error(`malformed part ${JSON.stringify(section)}`);
    const inner = section.slice(2, -2);
    const split = inner.indexOf("\r\n\r\n");
    return { head: inner.slice(0, split), body: Buffer.from(inner.slice(split + 4), "latin1") };
  });
}

// --------------------------------------------------------------------------------- loading

let current = null;

/**
 * Loads a fresh copy of bridge.js into a fresh fake page.
 * options: attributes (data-* of the script tag), script (false: no currentScript, as an ES module;
 * with injected: true, a classic script a host injected, which has none either),
 * filename, readyState, webkit (a fake window.webkit), config (globalThis.BridgeBrokerConfig),
 * pageUrl (location.href), identityReply (how the fake broker answers page.identity, see FakeWebSocket),
 * snippet (the data-* attributes of a bootstrap snippet that runs first, as an inline script before
 * the shim's tag) and beforeShim(socket) (what the snippet's socket gets before the shim runs),
 * early (how the fake broker answers the shim's POST /bridge/early through the native fetch:
 * `(call) => Response or a promise of one`, call being {url, body, init, lines}; by default 404, a
 * broker without the endpoint, so the shim stops asking; env.earlyCalls records the calls, which
 * are not in env.nativeCalls), push (how it answers the one early request of page.preloaded, in
 * env.pushCalls and not in env.earlyCalls: by default the answer for a page never preloaded).
 */
export function loadBridge(options = {}) {
  const page = setUpPage(options);
  if (options.snippet) {
    runSnippet(options.snippet);
    options.beforeShim?.(FakeWebSocket.instances.at(-1));
  }
  // As an ES module the file's top-level `this` is undefined, which the built wrapper passes on
  // (env.js: classicScript); `injected` is a classic script with no script element (a host's).
  const source = options.script === false && !options.injected ? SHIM_SOURCE.replace(CLASSIC_CALL, "}).call(undefined);") : SHIM_SOURCE;
  if (options.script === false && !options.injected && source === SHIM_SOURCE) throw new Error("bridge.js does not end in its classic-script wrapper");
  vm.runInThisContext(source, { filename: options.filename ?? page.scriptUrl });
  return current = pageEnvironment(page);
}

const CLASSIC_CALL = /\}\)\.call\(this\);(?=\s*(\/\/# sourceMappingURL=\S*\s*)?$)/;

/** Runs the bootstrap snippet as the inline script `<script ...attributes>` of the current page. */
export function runSnippet(attributes = {}) {
  const document = globalThis.document;
  const previous = document.currentScript;
  document.currentScript = new FakeElement("script", attributes);
  try {
    vm.runInThisContext(SNIPPET_SOURCE, { filename: PAGE_URL });
  } finally {
    document.currentScript = previous;
  }
  return FakeWebSocket.instances.at(-1);
}

/**
 * Runs the boot script (bridge-boot.js) as a host injects it at document start: a classic script with
 * no element, in a fresh fake page (options as loadBridge's). Its one dynamic import, of the shim
 * from the broker, goes to `options.importShim(url)`, by default `evaluateShim` (the built shim run
 * as the module the browser would evaluate, a task later); env.imports lists the URLs. env.shim()
 * waits for the shim and returns its page environment (as loadBridge's).
 */
export function loadBoot(options = {}) {
  const page = setUpPage({ script: false, ...options });
  const imports = [];
  const importShim = options.importShim ?? evaluateShim;
  globalThis.__bridgeTestImport = (url) => {
    imports.push(url);
    return importShim(url);
  };
  const source = BOOT_SOURCE.replace(BOOT_IMPORT, "__bridgeTestImport(");
  if (source === BOOT_SOURCE) throw new Error("bridge-boot.js has no dynamic import of the shim");
  vm.runInThisContext(source, { filename: "http://127.0.0.1:8787/bridge-boot.js" });
  return {
    ...page,
    imports,
    async shim() {
      await waitFor(() => globalThis.BridgeBroker, "the shim the boot script imported");
      return current = pageEnvironment(page);
    },
  };
}

const BOOT_IMPORT = "import(";

/** Runs the boot script once more in the current page (its import through globalThis.__bridgeTestImport). */
export function runBootAgain() {
  vm.runInThisContext(BOOT_SOURCE.replace(BOOT_IMPORT, "__bridgeTestImport("), { filename: "http://127.0.0.1:8787/bridge-boot.js" });
}

/** The built shim evaluated as an ES module (top-level `this` undefined), a task after the import. */
export async function evaluateShim() {
  await tick();
  vm.runInThisContext(SHIM_SOURCE.replace(CLASSIC_CALL, "}).call(undefined);"), { filename: SCRIPT_URL });
  return {};
}

let sourceImports = 0;

/**
 * Loads the readable sources (src/main.js and what it imports) as real ES modules into a fresh fake
 * page, the way a browser would import them unbuilt. Each call is a new main.js instance (its URL
 * gets a query); the other modules only declare, so sharing them between loads changes nothing.
 */
export async function loadBridgeSources(options = {}) {
  const page = setUpPage({ script: false, ...options });
  const main = pathToFileURL(path.join(here, "..", "src", "main.js"));
  main.search = `?load=${++sourceImports}`;
  await import(main.href);
  return current = pageEnvironment(page);
}

const NATIVE_COOKIE = Object.getOwnPropertyDescriptor(FakeDocument.prototype, "cookie");

function setUpPage(options) {
  if (current) current.teardown();
  // Each page starts with the browser's own accessor, which the shim wraps.
  Object.defineProperty(FakeDocument.prototype, "cookie", NATIVE_COOKIE);
  FakeWebSocket.identityReply = options.identityReply === undefined ? {} : options.identityReply;
  FakeWebSocket.instances = [];
  FakeNativeXHR.instances = [];
  for (const name of ["BridgeBroker", "webkit", "__bridgeBrokerReceive", "__bridgeBrokerClose", "BridgeBrokerConfig", SNIPPET_KEY, BOOT_KEY]) delete globalThis[name];

  const nativeCalls = [];
  const earlyCalls = [];
  const pushCalls = [];
  const answerEarly = options.early ?? (() => new Response("no such path", { status: 404 }));
  const answerPush = options.push ?? preloadedNothing;
  /** The broker's early endpoint: a POST of lines, from the native fetch or XMLHttpRequest. */
  function earlyEndpoint(url, body, init) {
    const call = { url, body, init, lines: body.split("\n").map((line) => JSON.parse(line)) };
    // The one request of the page's preloaded responses (push.js) is apart from the early fetches.
    if (call.lines.some((line) => line.name === "page.preloaded")) {
      pushCalls.push(call);
      return answerPush(call);
    }
    earlyCalls.push(call);
    return answerEarly(call);
  }
  FakeNativeXHR.early = earlyEndpoint;
  const pageEvents = new EventTarget();
  globalThis.window = globalThis;
  globalThis.addEventListener = pageEvents.addEventListener.bind(pageEvents);
  globalThis.removeEventListener = pageEvents.removeEventListener.bind(pageEvents);
  globalThis.dispatchEvent = pageEvents.dispatchEvent.bind(pageEvents);
  globalThis.location = new URL(options.pageUrl ?? PAGE_URL);
  globalThis.navigator = { userAgent: "FakeBrowser/1.0 (bridge-js tests)", languages: ["en-US", "en", "de"] };
  globalThis.WebSocket = options.WebSocket ?? FakeWebSocket;
  globalThis.XMLHttpRequest = FakeNativeXHR;
  globalThis.DOMParser = FakeDOMParser;
  globalThis.fetch = async function nativeFetch(input, init) {
    if (init?.method === "POST" && new URL(String(input)).pathname === "/bridge/early") return earlyEndpoint(String(input), String(init.body), init);
    nativeCalls.push({ input, init });
    return new Response("from the native fetch");
  };
  const nativeFetch = globalThis.fetch;

  const scriptUrl = options.src ?? SCRIPT_URL;
  const script = new FakeElement("script", { src: scriptUrl, ...(options.attributes || {}) });
  const document = new FakeDocument({
    readyState: options.readyState ?? "loading",
    currentScript: options.script === false ? null : script,
    scripts: [script],
  });
  document.baseURI = globalThis.location.href;
  globalThis.document = document;
  if (options.webkit) globalThis.webkit = options.webkit;
  if (options.config) globalThis.BridgeBrokerConfig = options.config;
  return { scriptUrl, script, document, nativeFetch, nativeCalls, earlyCalls, pushCalls };
}

/** The broker's answer to page.preloaded for a page never preloaded: no URLs, nothing else. */
export function preloadedNothing(call) {
  const post = call.lines.find((line) => line.name === "page.preloaded");
  return new Response(earlyAnswer([{ type: "reply", id: post.id, ok: true, body: { urls: [] } }]));
}

function pageEnvironment({ script, document, nativeFetch, nativeCalls, earlyCalls, pushCalls }) {
  const bridge = globalThis.BridgeBroker;
  return {
    bridge,
    document,
    script,
    nativeFetch,
    nativeCalls,
    earlyCalls,
    pushCalls,
    get ws() {
      return FakeWebSocket.instances.at(-1);
    },
    get sockets() {
      return FakeWebSocket.instances;
    },
    /** The latest socket, once the auto-connect (a microtask after the script) created it. */
    socket() {
      return waitFor(() => FakeWebSocket.instances.at(-1), "a WebSocket");
    },
    /** Waits for the auto-connect, accepts the socket and sends hello. */
    async open(limits, extra) {
      const socket = await waitFor(() => FakeWebSocket.instances.at(-1), "a WebSocket");
      socket.hello(limits, extra);
      await bridge.ready;
      return socket;
    },
    teardown() {
      bridge.hideLoadingBar();
      bridge.disconnect();
      current = null;
    },
  };
}
