// Parts of the shim built on first use. A page that never uses XMLHttpRequest or EventSource does
// not pay for creating their classes: V8 compiles a function when it first runs, so the code of
// what is never called is only pre-parsed (docs/BENCHMARKS.md, "The shim's bootstrap").

import { global } from "./env.js";

/** A function that builds its value on the first call and returns the same value after. */
export function once(build) {
  let built = false;
  let value;
  const get = () => {
    if (!built) {
      value = build();
      built = true;
    }
    return value;
  };
  get.built = () => built;
  return get;
}

// The getters installLazyGlobal puts on the global object, by the `once` they read.
const installedGetters = new WeakMap();

/**
 * Makes global[name] the value of `get` (a `once`) without building it yet: an accessor that, on the
 * first read, replaces itself with a plain data property holding the value (as the browser's own
 * interface objects are: writable, configurable, and as enumerable as the one it replaces). A page
 * assigning the global before reading it replaces the accessor just the same. Where the global
 * cannot be redefined, the value is built and assigned now.
 */
export function installLazyGlobal(name, get) {
  const current = Object.getOwnPropertyDescriptor(global, name);
  if (current && !current.configurable) {
    global[name] = get();
    return;
  }
  const enumerable = current ? current.enumerable : false;
  const settle = (value) => {
    Object.defineProperty(global, name, { value, writable: true, enumerable, configurable: true });
    return value;
  };
  const getter = () => settle(get());
  installedGetters.set(get, getter);
  Object.defineProperty(global, name, { get: getter, set: settle, enumerable, configurable: true });
}

/** Whether global[name] is the value of `get`, built or still waiting in installLazyGlobal's accessor. */
export function isLazyGlobal(name, get) {
  const current = Object.getOwnPropertyDescriptor(global, name);
  if (!current) return false;
  if (current.get) return current.get === installedGetters.get(get);
  return get.built() && current.value === get();
}
