// What the boot script (boot.js, built into bridge-boot.js) leaves for the shim it loads: the page's
// own fetch, the page.preloaded request it sent at document start, the broker it used and the
// fetch() calls it holds until the shim takes them (main.js).

import { global } from "./env.js";

export const BOOT_KEY = Symbol.for("bridge-broker.boot");

/**
 * The boot script's state, taken from the page (once: a second call finds nothing), or null:
 * `{nativeFetch, url, token, preloaded, handOver(fetch)}`, `preloaded` being push.js's
 * `{template, answer}` or null.
 */
export function takeBoot() {
  const boot = global[BOOT_KEY];
  if (boot === undefined) return null;
  delete global[BOOT_KEY];
  return boot && typeof boot.handOver === "function" && typeof boot.nativeFetch === "function" ? boot : null;
}
