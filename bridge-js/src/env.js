// The global object (window in a page): every module reaches the page through this one name, as
// the single-file shim did through its IIFE's parameter.
export const global = typeof globalThis !== "undefined" ? globalThis : typeof self !== "undefined" ? self : this;
// Whether this is the built shim run as a classic script (a script tag, or injected by a host), not
// an ES module: bridge-js/tools/build.py wraps the modules in a function called with the script's
// `this`, the global object in a classic script and undefined in a module (and in these sources,
// which are modules).
export const classicScript = this !== undefined;
