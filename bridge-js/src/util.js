// Small helpers every part uses: own-property checks, timers, random tokens, error reporting.

import { global } from "./env.js";

export const hasOwn = (object, key) => Object.prototype.hasOwnProperty.call(object, key);
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
export const clamp01 = (value) => (value > 1 ? 1 : value > 0 ? value : 0);

/** Runs `fn` in a microtask: after the current script or task, before the next one. */
export function soon(fn) {
  if (typeof global.queueMicrotask === "function") global.queueMicrotask(fn);
  else Promise.resolve().then(fn);
}

export function now() {
  const performance = global.performance;
  return performance && typeof performance.now === "function" ? performance.now() : Date.now();
}

export function randomToken(length) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const bytes = new Uint8Array(length);
  if (global.crypto && typeof global.crypto.getRandomValues === "function") global.crypto.getRandomValues(bytes);
  else for (let i = 0; i < length; i++) bytes[i] = Math.floor(Math.random() * 256);
  let token = "";
  for (const byte of bytes) token += alphabet[byte % alphabet.length];
  return token;
}

export function reportError(error) {
  if (typeof global.reportError === "function") global.reportError(error);
  else if (global.console) global.console.error(error);
}

export function safeCall(fn, ...args) {
  try {
    return fn(...args);
  } catch (error) {
    reportError(error);
    return undefined;
  }
}

export function isReadableStream(value) {
  return typeof global.ReadableStream === "function" && value instanceof global.ReadableStream;
}

export function isRequest(value) {
  return typeof global.Request === "function" && value instanceof global.Request;
}

export function domException(message, name) {
  return new global.DOMException(message, name);
}
