// The global object (window in a page): every module reaches the page through this one name, as
// the single-file shim did through its IIFE's parameter.
export const global = typeof globalThis !== "undefined" ? globalThis : typeof self !== "undefined" ? self : this;
