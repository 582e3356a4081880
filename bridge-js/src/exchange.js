// One post of the client (client.js): its state from queued to settled, and the promise the caller holds.

/** One post: queued until the connection is ready, then in flight until its reply. */
export class Exchange {
  constructor(client, spec) {
    this.client = client;
    this.spec = spec;
    this.id = null;
    this.state = "new"; // new, queued, sent, settled
    this.transport = null;
    this.bodyJson = undefined;
    this.bodyFinished = false;
    this.queueTimer = null;
    this.detachSignal = null;
    // Sent before the connection's hello; queued again after such a post was refused (client.js).
    this.early = false;
    this.retry = false;
    // The connection's first post (Client.greeting): it never waits out the queue timeout.
    this.greeting = false;
    // The early HTTP post (early.js) that carries it while it waits in the queue: flushQueue skips it.
    this.held = null;
    this.promise = new Promise((resolve, reject) => {
      this.resolvePromise = resolve;
      this.rejectPromise = reject;
    });
  }

  /**
   * Makes `bodyJson` from the spec's body, once, after the spec's `finishBody(body)` where it has
   * one: a fetch's reads the page's document cookie (a call into the browser), which a fetch served
   * from the page's preloaded responses (push.js) is never sent and never needs. Returns the error
   * when the body is not JSON (the caller rejects the post with it), else null.
   */
  finishBody() {
    if (this.bodyFinished) return null;
    this.bodyFinished = true;
    const spec = this.spec;
    try {
      if (spec.finishBody) spec.finishBody(spec.body);
      this.bodyJson = spec.body === undefined ? undefined : JSON.stringify(spec.body);
      return null;
    } catch (error) {
      return error;
    }
  }

  get expectsReply() {
    return this.spec.reply !== false;
  }

  get settled() {
    return this.state === "settled";
  }

  /** Stops the post: dequeues it or sends a cancel frame, and rejects its promise with `reason`. */
  abort(reason) {
    this.client.cancel(this, reason);
  }

  resolve(value) {
    if (this.settle()) this.resolvePromise(value);
  }

  reject(error) {
    if (this.settle()) this.rejectPromise(error);
  }

  settle() {
    if (this.settled) return false;
    this.state = "settled";
    clearTimeout(this.queueTimer);
    if (this.detachSignal) this.detachSignal();
    return true;
  }
}
