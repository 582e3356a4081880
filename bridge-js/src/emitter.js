// The emitter behind BridgeBroker.on(): a listener that throws is reported, so one page handler
// cannot break the dispatch of the others.

import { safeCall } from "./util.js";

export class Emitter {
  constructor() {
    this.listeners = new Map();
  }

  on(name, listener) {
    if (typeof listener !== "function") return () => {};
    const key = String(name);
    if (!this.listeners.has(key)) this.listeners.set(key, []);
    this.listeners.get(key).push(listener);
    return () => this.off(key, listener);
  }

  off(name, listener) {
    const list = this.listeners.get(String(name));
    if (!list) return;
    const index = list.indexOf(listener);
    if (index >= 0) list.splice(index, 1);
  }

  has(name) {
    const list = this.listeners.get(String(name));
    return Boolean(list && list.length);
  }

  emit(name, ...args) {
    const list = this.listeners.get(String(name));
    if (!list) return;
    for (const listener of list.slice()) safeCall(listener, ...args);
  }
}
