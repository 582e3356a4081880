// Errors: BridgeError carries the protocol's code; fetch() reports failures as TypeErrors, as browsers do.

import { domException } from "./util.js";

/** The error every failed post rejects with: `code` is the protocol's error code. */
export class BridgeError extends Error {
  constructor(code, message, extra) {
    super(message);
    this.name = "BridgeError";
    this.code = code;
    if (extra) Object.assign(this, extra);
  }
}

export function errorFromBroker(error) {
  const code = error && typeof error.code === "string" ? error.code : "internal";
  const message = error && typeof error.message === "string" ? error.message : "the broker gave no message";
  return new BridgeError(code, message);
}

export function abortReason(signal) {
  if (signal && signal.reason !== undefined) return signal.reason;
  return domException("The operation was aborted.", "AbortError");
}

/** Fetch reports every failure without a response as a TypeError; the broker's code stays on it. */
export function fetchFailure(error) {
  const failure = new TypeError(`Failed to fetch: ${error.message} [${error.code}]`);
  failure.cause = error;
  failure.code = error.code;
  return failure;
}
