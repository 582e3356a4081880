// Page-load progress, one group per load: what BridgeBroker.progress and the loading bar show.

import { global } from "./env.js";
import { clamp01, randomToken } from "./util.js";

function documentFraction() {
  const doc = global.document;
  const state = doc && doc.readyState;
  if (state === "complete" || !doc) return 1;
  if (state === "interactive") return 0.5;
  return 0.1;
}

/**
 * Page-load progress, like WKWebView's estimatedProgress. One group per load: the document itself
 * counts as one request (0.1 while parsing, 0.5 once interactive, 1 at `load`; only when the shim
 * was loaded before the document completed) and every bridged
 * request of the load as another, weighted by the broker's group.progress. The load ends, and
 * progress reaches 1, once `load` has fired and no request of the group has been in flight for
 * `settleMs`; requests started after that carry no group.
 */
export class PageProgress {
  constructor(emitter) {
    this.emitter = emitter;
    this.settleMs = 100;
    this.value = 0;
    this.load = null;
  }

  get done() {
    return !this.load || this.load.ended;
  }

  get group() {
    return this.load && !this.load.ended ? this.load.group : null;
  }

  begin(documentPhase) {
    if (this.load) clearTimeout(this.load.endTimer);
    this.load = {
      group: `load-${randomToken(16)}`,
      documentPhase,
      docFraction: documentPhase ? documentFraction() : 1,
      started: 0,
      finished: 0,
      broker: null,
      ended: false,
      endTimer: null,
    };
    this.value = 0;
    this.update(true);
    this.maybeEnd();
    return this.load.group;
  }

  /** Counts a request in the current load; call `finish()` on the ticket once it is over. */
  track() {
    const load = this.load;
    if (!load || load.ended) return { group: null, finish() {} };
    load.started++;
    clearTimeout(load.endTimer);
    load.endTimer = null;
    this.update(false);
    let finished = false;
    return {
      group: load.group,
      finish: () => {
        if (finished) return;
        finished = true;
        load.finished++;
        if (this.load !== load || load.ended) return;
        this.update(false);
        this.maybeEnd();
      },
    };
  }

  documentChanged() {
    const load = this.load;
    if (!load || !load.documentPhase || load.ended) return;
    load.docFraction = Math.max(load.docFraction, documentFraction());
    this.update(false);
    this.maybeEnd();
  }

  documentLoaded() {
    const load = this.load;
    if (!load || !load.documentPhase || load.ended) return;
    load.docFraction = 1;
    this.update(false);
    this.maybeEnd();
  }

  onGroupProgress(body) {
    const load = this.load;
    if (!load || load.ended || !body || body.group !== load.group) return;
    load.broker = body;
    this.update(false);
  }

  combined(load) {
    const documentWeight = load.documentPhase ? 1 : 0;
    const brokerRequests = load.broker && typeof load.broker.requests === "number" ? load.broker.requests : 0;
    const requests = Math.max(load.started, brokerRequests);
    let requestSum = load.finished;
    if (load.broker) requestSum = Math.max(requestSum, clamp01(Number(load.broker.progress)) * brokerRequests);
    requestSum = Math.min(requestSum, requests);
    if (documentWeight + requests === 0) return 0;
    return (documentWeight * load.docFraction + requestSum) / (documentWeight + requests);
  }

  update(force) {
    const load = this.load;
    // Monotonic while a load lasts, and 1 only once it has ended, as estimatedProgress behaves.
    const next = load.ended ? 1 : Math.min(0.99, Math.max(this.value, this.combined(load)));
    if (next === this.value && !force) return;
    this.value = next;
    this.emitter.emit("progress", { progress: next, group: load.group, done: load.ended });
  }

  maybeEnd() {
    const load = this.load;
    if (load.ended || load.endTimer || load.docFraction < 1 || load.started !== load.finished) return;
    load.endTimer = setTimeout(() => {
      load.endTimer = null;
      if (this.load !== load || load.ended || load.started !== load.finished) return;
      load.ended = true;
      this.update(true);
    }, this.settleMs);
  }
}
