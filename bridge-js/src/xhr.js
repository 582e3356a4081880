// The XMLHttpRequest replacement, a class built per page (it extends the page's EventTarget) that
// follows the XHR standard's algorithm; unbridged URLs go to the native XHR, forwarded call by call.

import { blobSource } from "./bodies.js";
import { concatBytes } from "./bytes.js";
import { global } from "./env.js";
import { identityFields, isForbiddenRequestHeader } from "./identity.js";
import { replyBodyBytes } from "./response.js";
import { absoluteUrl, stripFragment } from "./urls.js";
import { domException, now } from "./util.js";
import {
  DONE, HEADERS_RECEIVED, HTTP_TOKEN, LOADING, OPENED, RESPONSE_TYPES, UNSENT, UPLOAD_EVENTS, UPLOAD_REPORT_INTERVAL_MS,
  XHR_EVENTS, bomEncoding, cloneEvent, createProgressEvent, defineEventHandlers, domParserType, extractXhrBody,
  mimeCharset, mimeEssence, normalizeMethod, textDecoderFor,
  wrongResponseType,
} from "./xhr-support.js";

export function createXMLHttpRequestClass(context) {
  class XMLHttpRequestUpload extends global.EventTarget {
    constructor() {
      super();
      this.eventHandlers = {};
      this.hasListeners = false;
    }

    addEventListener(type, listener, options) {
      if (listener) this.hasListeners = true;
      return super.addEventListener(type, listener, options);
    }

    fire(type, loaded, total) {
      this.dispatchEvent(createProgressEvent(type, loaded, total));
    }
  }
  defineEventHandlers(XMLHttpRequestUpload.prototype, UPLOAD_EVENTS);

  /** XMLHttpRequest over the broker, with the XHR standard's states and event order. */
  class BridgeXMLHttpRequest extends global.EventTarget {
    constructor() {
      super();
      this.eventHandlers = {};
      this.uploadTarget = new XMLHttpRequestUpload();
      this.native = null;
      this.generation = 0;
      this.state = UNSENT;
      this.sendFlag = false;
      this.requestResponseType = "";
      this.requestTimeout = 0;
      this.credentials = false;
      this.overrideMime = null;
      this.exchange = null;
      this.ticket = null;
      this.timer = null;
      this.uploadTimer = null;
      this.resetRequest("GET", "");
      this.resetResponse();
    }

    // -- request state

    resetRequest(method, url) {
      this.method = method;
      this.url = url;
      this.requestHeaders = [];
      this.uploadComplete = false;
      this.uploadListener = false;
      this.uploadLength = 0;
      // Bytes the broker reported sent, and the count the last upload progress event gave.
      this.uploadSent = 0;
      this.uploadReported = 0;
    }

    resetResponse() {
      this.head = null;
      this.chunks = [];
      this.received = 0;
      this.downloadTotal = 0;
      this.decoder = null;
      this.decodedChunks = 0;
      this.text = "";
      this.textFinished = false;
      this.responseCache = undefined;
      this.documentCache = undefined;
    }

    live(generation) {
      return this.generation === generation;
    }

    /** Stops the current transfer without events: open(), abort() and timeouts start from here. */
    terminate() {
      this.generation++;
      clearTimeout(this.timer);
      this.timer = null;
      this.stopUploadReports();
      if (this.exchange) this.exchange.abort(domException("The request was aborted.", "AbortError"));
      this.exchange = null;
      this.finishTicket();
    }

    finishTicket() {
      if (this.ticket) this.ticket.finish();
      this.ticket = null;
    }

    fire(type, loaded, total) {
      this.dispatchEvent(createProgressEvent(type, loaded, total));
    }

    fireReadyStateChange() {
      this.dispatchEvent(new global.Event("readystatechange"));
    }

    // -- public API

    get upload() {
      return this.uploadTarget;
    }

    get readyState() {
      return this.native ? this.native.readyState : this.state;
    }

    open(method, url, async, username, password) {
      if (arguments.length < 2) {
        throw new TypeError(`Failed to execute 'open' on 'XMLHttpRequest': 2 arguments required, but only ${arguments.length} present.`);
      }
      const normalized = normalizeMethod(method);
      const parsed = absoluteUrl(url);
      if (!parsed) throw domException(`Invalid URL: ${url}`, "SyntaxError");
      // WebIDL boolean: an explicit undefined means synchronous, as in browsers.
      const isAsync = arguments.length < 3 ? true : Boolean(async);
      if (username != null) parsed.username = username;
      if (password != null) parsed.password = password;
      if (!context.shouldBridge(parsed)) return this.openNative(normalized, parsed.href, isAsync, arguments.length);
      if (!isAsync) {
        throw domException(
          "bridge-js: synchronous XMLHttpRequest cannot travel through the broker. Use an asynchronous request, " +
            "or exclude this URL with data-exclude so the native XMLHttpRequest handles it.",
          "InvalidAccessError",
        );
      }
      this.detachNative();
      this.terminate();
      this.resetRequest(normalized, parsed.href);
      this.resetResponse();
      this.sendFlag = false;
      if (this.state !== OPENED) {
        this.state = OPENED;
        this.fireReadyStateChange();
      }
    }

    setRequestHeader(name, value) {
      if (this.native) return this.native.setRequestHeader(name, value);
      if (this.state !== OPENED || this.sendFlag) throw domException("The object's state must be OPENED.", "InvalidStateError");
      const headerName = String(name);
      const headerValue = String(value).replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, "");
      if (!HTTP_TOKEN.test(headerName)) throw domException(`'${headerName}' is not a valid HTTP header field name.`, "SyntaxError");
      if (/[\0\r\n]/.test(headerValue)) throw domException(`'${headerValue}' is not a valid HTTP header field value.`, "SyntaxError");
      if (isForbiddenRequestHeader(headerName, headerValue)) return undefined;
      const existing = this.requestHeaders.find((pair) => pair[0].toLowerCase() === headerName.toLowerCase());
      if (existing) existing[1] = `${existing[1]}, ${headerValue}`;
      else this.requestHeaders.push([headerName, headerValue]);
      return undefined;
    }

    get timeout() {
      return this.native ? this.native.timeout : this.requestTimeout;
    }

    set timeout(value) {
      if (this.native) this.native.timeout = value;
      this.requestTimeout = Math.max(0, Math.floor(Number(value)) || 0);
      if (!this.native) this.armTimeout();
    }

    get withCredentials() {
      return this.native ? this.native.withCredentials : this.credentials;
    }

    set withCredentials(value) {
      if (this.native) {
        this.native.withCredentials = value;
        this.credentials = this.native.withCredentials;
        return;
      }
      if ((this.state !== UNSENT && this.state !== OPENED) || this.sendFlag) {
        throw domException("The value may only be set if the object's state is UNSENT or OPENED.", "InvalidStateError");
      }
      this.credentials = Boolean(value);
    }

    get responseType() {
      return this.native ? this.native.responseType : this.requestResponseType;
    }

    set responseType(value) {
      if (this.native) {
        this.native.responseType = value;
        this.requestResponseType = this.native.responseType;
        return;
      }
      if (!RESPONSE_TYPES.includes(value)) return; // Browsers ignore unknown values.
      if (this.state === LOADING || this.state === DONE) {
        throw domException("The response type cannot be set if the object's state is LOADING or DONE.", "InvalidStateError");
      }
      this.requestResponseType = value;
    }

    overrideMimeType(mime) {
      if (this.native) return this.native.overrideMimeType(mime);
      if (this.state === LOADING || this.state === DONE) {
        throw domException("MimeType cannot be overridden when the state is LOADING or DONE.", "InvalidStateError");
      }
      this.overrideMime = mimeEssence(mime) ? String(mime) : "application/octet-stream";
      return undefined;
    }

    send(body) {
      if (this.native) {
        this.forwardNativeUpload(this.native);
        return this.native.send(body === undefined ? null : body);
      }
      if (this.state !== OPENED || this.sendFlag) throw domException("The object's state must be OPENED.", "InvalidStateError");
      const extracted = body == null || this.method === "GET" || this.method === "HEAD" ? null : extractXhrBody(body);
      if (extracted && extracted.contentType && !this.requestHeaders.some((pair) => pair[0].toLowerCase() === "content-type")) {
        this.requestHeaders.push(["Content-Type", extracted.contentType]);
      }
      this.uploadLength = extracted ? extracted.blob.size : 0;
      this.uploadComplete = !extracted;
      this.uploadListener = this.uploadTarget.hasListeners;
      this.sendFlag = true;
      this.sendStartedAt = now();
      const generation = this.generation;
      this.fire("loadstart", 0, 0);
      if (!this.uploadComplete && this.uploadListener && this.live(generation)) this.uploadTarget.fire("loadstart", 0, this.uploadLength);
      if (!this.live(generation) || this.state !== OPENED || !this.sendFlag) return undefined;
      this.startExchange(extracted);
      if (!this.uploadComplete && this.uploadListener) this.startUploadReports();
      return undefined;
    }

    abort() {
      if (this.native) return this.native.abort();
      this.terminate();
      if ((this.state === OPENED && this.sendFlag) || this.state === HEADERS_RECEIVED || this.state === LOADING) {
        this.requestError("abort");
      }
      if (this.state === DONE) {
        this.state = UNSENT;
        this.resetResponse();
      }
      return undefined;
    }

    get status() {
      if (this.native) return this.native.status;
      return this.head ? this.head.status : 0;
    }

    get statusText() {
      if (this.native) return this.native.statusText;
      return this.head ? this.head.statusText : "";
    }

    get responseURL() {
      if (this.native) return this.native.responseURL;
      return this.head ? this.head.url : "";
    }

    getResponseHeader(name) {
      if (this.native) return this.native.getResponseHeader(name);
      if (!this.head) return null;
      const wanted = String(name).toLowerCase();
      if (wanted === "set-cookie" || wanted === "set-cookie2") return null;
      const values = this.head.headers.filter((pair) => pair[0] === wanted).map((pair) => pair[1]);
      return values.length ? values.join(", ") : null;
    }

    getAllResponseHeaders() {
      if (this.native) return this.native.getAllResponseHeaders();
      if (!this.head) return "";
      const combined = new Map();
      for (const [name, value] of this.head.headers) {
        if (name === "set-cookie" || name === "set-cookie2") continue;
        combined.set(name, combined.has(name) ? `${combined.get(name)}, ${value}` : value);
      }
      return Array.from(combined.keys()).sort().map((name) => `${name}: ${combined.get(name)}\r\n`).join("");
    }

    get responseText() {
      if (this.native) return this.native.responseText;
      if (this.requestResponseType !== "" && this.requestResponseType !== "text") throw wrongResponseType("''", "text", this.requestResponseType);
      if (this.state !== LOADING && this.state !== DONE) return "";
      return this.decodedText();
    }

    get responseXML() {
      if (this.native) return this.native.responseXML;
      if (this.requestResponseType !== "" && this.requestResponseType !== "document") throw wrongResponseType("''", "document", this.requestResponseType);
      if (this.state !== DONE) return null;
      return this.parsedDocument();
    }

    get response() {
      if (this.native) return this.native.response;
      const type = this.requestResponseType;
      if (type === "" || type === "text") return this.state === LOADING || this.state === DONE ? this.decodedText() : "";
      if (this.state !== DONE) return null;
      if (this.responseCache === undefined) this.responseCache = this.buildResponseObject(type);
      return this.responseCache;
    }

    // -- transfer through the broker

    startExchange(extracted) {
      const generation = this.generation;
      const upload = extracted ? blobSource(extracted.blob) : null;
      this.ticket = context.progress.track();
      context.identity.refresh();
      // XHR's request: credentials from withCredentials, mode cors, the client's referrer and the document's policy.
      const credentials = this.credentials ? "include" : "same-origin";
      const documentCookie = context.cookies.documentCookieFor(absoluteUrl(this.url), credentials);
      const body = {
        url: this.url,
        method: this.method,
        headers: this.requestHeaders.map((pair) => [pair[0], pair[1]]),
        redirect: "follow",
        responseBody: "binary",
        // Header values and statusText one code unit per byte, as getResponseHeader gives them.
        headerEncoding: "latin1",
        timeout: this.requestTimeout > 0 ? this.requestTimeout : context.config.requestTimeout,
        ...identityFields({ credentials, mode: "cors" }, documentCookie),
      };
      if (this.ticket.group) body.group = this.ticket.group;
      if (upload) body.body = { binary: true, length: upload.length };
      const exchange = context.client.exchange({
        name: "fetch",
        body,
        upload,
        onEvent: (name, payload) => this.live(generation) && this.onBrokerEvent(name, payload || {}),
        onBinary: (chunk) => this.live(generation) && this.onChunk(chunk),
      });
      this.exchange = exchange;
      exchange.promise.then(
        (reply) => this.live(generation) && this.onReply(reply || {}),
        (error) => this.live(generation) && this.onFailure(error),
      );
      this.armTimeout();
    }

    armTimeout() {
      clearTimeout(this.timer);
      this.timer = null;
      if (!this.sendFlag || this.requestTimeout <= 0 || this.state === DONE) return;
      const generation = this.generation;
      const remaining = Math.max(0, this.requestTimeout - (now() - this.sendStartedAt));
      this.timer = setTimeout(() => {
        if (!this.live(generation)) return;
        this.terminate();
        this.requestError("timeout");
      }, remaining);
    }

    onBrokerEvent(name, payload) {
      if (name === "response") return this.onHeaders(payload);
      if (name !== "progress") return undefined;
      if (payload.phase === "upload") {
        this.uploadSent = Math.max(this.uploadSent, Number(payload.loaded) || 0);
      } else if (typeof payload.total === "number") {
        this.downloadTotal = payload.total;
      }
      return undefined;
    }

    onHeaders(head) {
      const generation = this.generation;
      if (!this.finishUpload()) return;
      if (!this.live(generation)) return;
      // The page's cookies from this response are in document.cookie before readystatechange (2).
      context.cookies.apply(head.cookies);
      const pairs = Array.isArray(head.headers) ? head.headers : head.headers ? Object.entries(head.headers) : [];
      this.head = {
        status: Number(head.status) || 0,
        statusText: String(head.statusText || ""),
        headers: pairs.map((pair) => [String(pair[0]).toLowerCase(), String(pair[1])]),
        url: stripFragment(head.url || this.url),
      };
      const contentLength = Number(this.getResponseHeader("content-length"));
      if (contentLength > 0 && !this.downloadTotal) this.downloadTotal = contentLength;
      this.state = HEADERS_RECEIVED;
      this.fireReadyStateChange();
    }

    /**
     * Chromium reports upload progress as its network service polls it, every 100 ms, and fires
     * upload load and loadend with the progress that reports the last byte sent; the broker's
     * upload progress events are read the same way, so the page sees the same events in the same
     * order (none at all when the request fails or times out before the first report).
     */
    startUploadReports() {
      const generation = this.generation;
      this.uploadTimer = setInterval(() => {
        if (this.live(generation)) this.reportUpload();
      }, UPLOAD_REPORT_INTERVAL_MS);
    }

    stopUploadReports() {
      clearInterval(this.uploadTimer);
      this.uploadTimer = null;
    }

    reportUpload() {
      if (this.uploadComplete || this.uploadSent <= this.uploadReported) return;
      this.uploadReported = this.uploadSent;
      if (this.uploadSent >= this.uploadLength) {
        this.finishUpload();
        return;
      }
      this.uploadTarget.fire("progress", this.uploadSent, this.uploadLength);
    }

    /** Upload ends when the response starts; returns false when a listener restarted the request. */
    finishUpload() {
      this.stopUploadReports();
      if (this.uploadComplete) return true;
      this.uploadComplete = true;
      if (!this.uploadListener) return true;
      const generation = this.generation;
      const length = this.uploadLength;
      for (const type of ["progress", "load", "loadend"]) {
        this.uploadTarget.fire(type, length, length);
        if (!this.live(generation)) return false;
      }
      return true;
    }

    onChunk(chunk) {
      if (this.state !== HEADERS_RECEIVED && this.state !== LOADING) return;
      if (!chunk.byteLength) return;
      this.chunks.push(chunk);
      this.received += chunk.byteLength;
      const generation = this.generation;
      this.state = LOADING;
      this.fireReadyStateChange();
      if (this.live(generation)) this.fire("progress", this.received, this.downloadTotal);
    }

    onReply(reply) {
      clearTimeout(this.timer);
      this.exchange = null;
      this.finishTicket();
      const generation = this.generation;
      if (this.state === OPENED) this.onHeaders(reply);
      if (!this.live(generation)) return;
      const bytes = replyBodyBytes(reply);
      if (bytes && bytes.byteLength) {
        this.chunks.push(bytes);
        this.received += bytes.byteLength;
      }
      this.endOfBody(generation);
    }

    endOfBody(generation) {
      const transmitted = this.received;
      const length = this.downloadTotal;
      // Chromium sends no progress event for a response without body bytes (HEAD, 204, empty).
      if (transmitted > 0) this.fire("progress", transmitted, length);
      if (!this.live(generation)) return;
      this.state = DONE;
      this.sendFlag = false;
      this.fireReadyStateChange();
      if (!this.live(generation)) return;
      this.fire("load", transmitted, length);
      if (!this.live(generation)) return;
      this.fire("loadend", transmitted, length);
    }

    onFailure(error) {
      clearTimeout(this.timer);
      this.exchange = null;
      this.finishTicket();
      // A network error after the whole body was sent reports the upload first, as Chromium does.
      if (!this.uploadComplete && this.uploadLength > 0 && this.uploadSent >= this.uploadLength) {
        const generation = this.generation;
        this.finishUpload();
        if (!this.live(generation)) return;
      }
      this.stopUploadReports();
      this.generation++;
      this.requestError(error && error.code === "timeout" ? "timeout" : "error");
    }

    /** The XHR standard's "request error steps" for error, abort and timeout. */
    requestError(type) {
      const generation = this.generation;
      this.state = DONE;
      this.sendFlag = false;
      this.resetResponse();
      this.fireReadyStateChange();
      if (!this.live(generation)) return;
      if (!this.uploadComplete) {
        this.uploadComplete = true;
        if (this.uploadListener) {
          this.uploadTarget.fire(type, 0, 0);
          if (!this.live(generation)) return;
          this.uploadTarget.fire("loadend", 0, 0);
          if (!this.live(generation)) return;
        }
      }
      this.fire(type, 0, 0);
      if (this.live(generation)) this.fire("loadend", 0, 0);
    }

    // -- response decoding

    finalMime() {
      return this.overrideMime || this.getResponseHeader("content-type") || "";
    }

    decodedText() {
      if (!this.decoder) {
        const label = bomEncoding(this.chunks, this.state === DONE);
        if (label === undefined) return this.text; // Too few bytes yet to tell whether a BOM starts the body.
        this.decoder = textDecoderFor(label || mimeCharset(this.finalMime()));
      }
      while (this.decodedChunks < this.chunks.length) {
        this.text += this.decoder.decode(this.chunks[this.decodedChunks++], { stream: true });
      }
      if (this.state === DONE && !this.textFinished) {
        this.textFinished = true;
        this.text += this.decoder.decode();
      }
      return this.text;
    }

    bodyBytes() {
      return concatBytes(this.chunks, this.received);
    }

    buildResponseObject(type) {
      if (type === "arraybuffer") return this.bodyBytes().buffer;
      if (type === "blob") return new global.Blob(this.chunks, { type: mimeEssence(this.finalMime()) ? this.finalMime() : "" });
      if (type === "json") {
        try {
          return JSON.parse(new TextDecoder("utf-8").decode(this.bodyBytes()));
        } catch (_) {
          return null;
        }
      }
      if (type === "document") return this.parsedDocument();
      return null;
    }

    parsedDocument() {
      if (this.documentCache !== undefined) return this.documentCache;
      this.documentCache = null;
      const essence = mimeEssence(this.finalMime()) || "text/xml";
      const parserType = domParserType(essence);
      const htmlAllowed = this.requestResponseType === "document";
      if (!parserType || (parserType === "text/html" && !htmlAllowed) || typeof global.DOMParser !== "function") return null;
      const bytes = this.bodyBytes();
      const text = textDecoderFor(bomEncoding([bytes], true) || mimeCharset(this.finalMime())).decode(bytes);
      const doc = new global.DOMParser().parseFromString(text, parserType);
      const broken = parserType !== "text/html" && doc && doc.getElementsByTagName("parsererror").length > 0;
      this.documentCache = broken ? null : doc;
      return this.documentCache;
    }

    // -- native XMLHttpRequest for URLs the shim leaves alone

    openNative(method, url, isAsync, argumentCount) {
      if (!context.NativeXHR) throw domException("bridge-js: this page has no native XMLHttpRequest for this URL", "InvalidAccessError");
      this.terminate();
      this.detachNative();
      this.state = UNSENT;
      this.sendFlag = false;
      const native = new context.NativeXHR();
      this.native = native;
      this.nativeUploadForwarded = false;
      for (const type of XHR_EVENTS) {
        native.addEventListener(type, (event) => {
          if (this.native === native) this.dispatchEvent(cloneEvent(event));
        });
      }
      if (isAsync) {
        if (this.requestResponseType) native.responseType = this.requestResponseType;
        if (this.requestTimeout) native.timeout = this.requestTimeout;
      }
      if (this.credentials) native.withCredentials = true;
      if (argumentCount < 3) native.open(method, url);
      else native.open(method, url, isAsync);
    }

    forwardNativeUpload(native) {
      // Upload listeners make a cross-origin request preflighted, so they go on only when the page has some.
      if (this.nativeUploadForwarded || !this.uploadTarget.hasListeners) return;
      this.nativeUploadForwarded = true;
      for (const type of UPLOAD_EVENTS) {
        native.upload.addEventListener(type, (event) => {
          if (this.native === native) this.uploadTarget.dispatchEvent(cloneEvent(event));
        });
      }
    }

    detachNative() {
      const native = this.native;
      if (!native) return;
      this.native = null;
      try {
        native.abort();
      } catch (_) {
        // Already finished: nothing to stop.
      }
    }
  }

  defineEventHandlers(BridgeXMLHttpRequest.prototype, XHR_EVENTS);
  const states = { UNSENT, OPENED, HEADERS_RECEIVED, LOADING, DONE };
  for (const [name, value] of Object.entries(states)) {
    Object.defineProperty(BridgeXMLHttpRequest, name, { value, enumerable: true });
    Object.defineProperty(BridgeXMLHttpRequest.prototype, name, { value, enumerable: true });
  }
  Object.defineProperty(BridgeXMLHttpRequest, "name", { value: "XMLHttpRequest" });
  Object.defineProperty(BridgeXMLHttpRequest.prototype, Symbol.toStringTag, { value: "XMLHttpRequest", configurable: true });
  Object.defineProperty(XMLHttpRequestUpload.prototype, Symbol.toStringTag, { value: "XMLHttpRequestUpload", configurable: true });
  return BridgeXMLHttpRequest;
}
