// Configuration: where the script came from (currentScript, or a stack trace for an ES module) and
// its data-* attributes over globalThis.BridgeBrokerConfig.

import { DEFAULT_BROKER_URL, DEFAULT_REQUEST_TIMEOUT_MS } from "./constants.js";
import { classicScript, global } from "./env.js";
import { parseList } from "./rules.js";
import { absoluteUrl, socketUrlFromScript } from "./urls.js";

function scriptUrlFromStack() {
  let stack = "";
  try {
    throw new Error("bridge-js locates itself");
  } catch (error) {
    stack = String((error && error.stack) || "");
  }
  // The first frame is this file in every engine: "(URL:line:col)" or "fn@URL:line:col".
  const match = /((?:https?|file):\/\/[^\s()@]+):\d+:\d+/.exec(stack);
  return match ? match[1] : null;
}

function findScriptElement(url) {
  const doc = global.document;
  if (!doc || typeof doc.querySelectorAll !== "function") return null;
  for (const element of Array.from(doc.querySelectorAll("script[src]"))) {
    if (element.src === url) return element;
  }
  return null;
}

function tokenFromUrl(url) {
  const parsed = url ? absoluteUrl(url) : null;
  return parsed ? parsed.searchParams.get("token") : null;
}

export function parsePatch(value) {
  if (value === undefined || value === null || value === "" || value === true) return { fetch: true, xhr: true, eventSource: true };
  if (value === false) return { fetch: false, xhr: false, eventSource: false };
  if (typeof value === "object" && !Array.isArray(value)) {
    return { fetch: Boolean(value.fetch), xhr: Boolean(value.xhr), eventSource: Boolean(value.eventSource) };
  }
  const words = parseList(value).map((word) => String(word).toLowerCase());
  return {
    fetch: words.includes("fetch"),
    xhr: words.includes("xhr") || words.includes("xmlhttprequest"),
    eventSource: words.includes("eventsource"),
  };
}

function parseLoadingBar(attribute, preset) {
  if (attribute !== null && attribute !== undefined) {
    if (attribute === "false" || attribute === "none") return null;
    return attribute && attribute !== "true" ? { color: attribute } : {};
  }
  if (preset === true) return {};
  return preset && typeof preset === "object" ? preset : null;
}

/**
 * Settings from the script tag's data-* attributes, over globalThis.BridgeBrokerConfig. `loader` is
 * the boot script's state when it imported the shim (boot-state.js): its broker URL and token stand
 * in for the script's own, which a module imported by another script need not look for.
 */
export function readConfig(loader = null) {
  const doc = global.document;
  const preset = global.BridgeBrokerConfig && typeof global.BridgeBrokerConfig === "object" ? global.BridgeBrokerConfig : {};
  let script = doc && doc.currentScript ? doc.currentScript : null;
  let scriptUrl = script && script.src ? script.src : null;
  // An ES module has no currentScript; an inline copy of the shim has one without src. A classic
  // script in a page without one was injected by a host (a WKWebView user script, DevTools'
  // addScriptToEvaluateOnNewDocument): it has no URL of its own to find, and the Error would cost
  // 4 to 5 ms of the page's main thread in Chromium, which captures a detailed stack trace with
  // every Error and re-parses the whole shim for its top frame's position.
  if (!script && !(classicScript && doc) && !loader) {
    scriptUrl = scriptUrlFromStack();
    script = scriptUrl ? findScriptElement(scriptUrl) : null;
  }
  const attr = (name) => (script && typeof script.getAttribute === "function" ? script.getAttribute(name) : null);
  const pick = (attribute, key) => (attr(attribute) !== null ? attr(attribute) : preset[key]);
  const timeout = Number(pick("data-timeout", "requestTimeout"));
  return {
    scriptUrl,
    url: pick("data-broker-url", "url") || (scriptUrl && socketUrlFromScript(scriptUrl)) || (loader && loader.url) || DEFAULT_BROKER_URL,
    token: pick("data-token", "token") || tokenFromUrl(scriptUrl) || (loader && loader.token) || null,
    transport: pick("data-transport", "transport") || "auto",
    patch: parsePatch(pick("data-patch", "patch")),
    include: pick("data-include", "include"),
    exclude: pick("data-exclude", "exclude"),
    loadingBar: parseLoadingBar(attr("data-loading-bar"), preset.loadingBar),
    autoConnect: String(pick("data-auto-connect", "autoConnect")) !== "false",
    messageHandlers: String(pick("data-message-handlers", "messageHandlers")) !== "false",
    // Off unless asked for: no gain measured on the page-load bench (docs/BENCHMARKS.md), and a
    // cold page's misses cost a lookup before they go over the WebSocket.
    earlyPosts: String(pick("data-early-posts", "earlyPosts")) === "true",
    requestTimeout: timeout > 0 ? timeout : DEFAULT_REQUEST_TIMEOUT_MS,
    backoff: preset.backoff,
    queueTimeout: preset.queueTimeout,
  };
}
