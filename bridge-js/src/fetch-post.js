// The body of a `fetch` post: what a bridged fetch() sends (fetch.js), and, for fetch(pageUrl) with
// no init, the template of the page's preloaded responses, which the shim and the boot script
// (boot.js) both ask with (push.js).

import { FLOW_WINDOW_BYTES, WHOLE_RESPONSE_BYTES } from "./constants.js";
import { global } from "./env.js";
import { identityFields } from "./identity.js";
import { absoluteUrl, isHttpUrl } from "./urls.js";

/**
 * What Request gives fetch(url) with no init, for the parsed `url`: the plan of the commonest call,
 * and the template of the page's preloaded responses (defaultFetchBody). fetch.test.mjs checks it
 * against a Request's. A plan's `parsedUrl` is its `url` as fetch() parsed it, for the questions
 * asked of it later (addDocumentCookie), so that they need no parse of their own.
 */
export function defaultPlan(url) {
  return {
    request: null, url: url.href, parsedUrl: url, method: "GET", headers: [], redirect: "follow", credentials: "same-origin", mode: "cors",
    referrer: "about:client", referrerPolicy: "", cache: undefined, timeout: undefined, signal: null, stream: null,
  };
}

/**
 * The body of the `fetch` post for `plan`, without the page's document cookie (addDocumentCookie
 * adds it when the post is sure to go): what FetchRun.start sends, and, for fetch(pageUrl) with no
 * init, the template of the page's preloaded responses (defaultFetchBody, push.js).
 */
export function fetchPostBody(context, plan, group, upload) {
  const body = {
    url: plan.url,
    method: plan.method,
    headers: plan.headers,
    redirect: plan.redirect,
    responseBody: "binary",
    // Header values and statusText one code unit per byte, as the browser's Headers (ByteString).
    headerEncoding: "latin1",
    // fetch() has no progress API and the loading bar follows the group's progress, which the
    // broker reports either way: per-request progress events would be frames nobody reads.
    progress: false,
    // Flow control: the broker sends the body only this far ahead of what the page read (a
    // broker without it ignores the field, and gets no credit frames: see grantCredit).
    window: FLOW_WINDOW_BYTES,
    // A small response the broker has complete at once (a cache hit from memory) comes as one
    // frame, head and body (onWhole), instead of an event, body frames and a reply.
    whole: WHOLE_RESPONSE_BYTES,
    // Several of them may come joined in one message: one task of the page's main thread for
    // the hits the broker answered together, instead of one each.
    batch: true,
    timeout: plan.timeout != null ? Number(plan.timeout) : context.config.requestTimeout,
  };
  Object.assign(body, identityFields(plan));
  if (plan.cache !== undefined && plan.cache !== "default") body.cache = plan.cache;
  if (group) body.group = group;
  if (upload) body.body = upload.length === null ? { binary: true } : { binary: true, length: upload.length };
  return body;
}

/**
 * What fetch(location.href) with no init would post now, without its document cookie, or null on a
 * page that is not http(s). Built from what Request gives such a call (push.test.mjs checks it
 * against a real one) rather than from a Request and document.cookie: it runs at the shim's start,
 * where both cost the page milliseconds.
 */
export function defaultFetchBody(context) {
  const location = global.location;
  const url = absoluteUrl(location && location.href ? location.href : "");
  if (!isHttpUrl(url)) return null;
  return fetchPostBody(context, defaultPlan(url), null, undefined);
}
