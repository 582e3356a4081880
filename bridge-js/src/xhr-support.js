// What the XHR replacement needs besides its class: event helpers, MIME parsing, body extraction,
// and the standard's checks of methods (request headers: identity.js).

import { isBufferSource, viewBytes } from "./bytes.js";
import { global } from "./env.js";
import { domException, randomToken } from "./util.js";

export const HTTP_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const FORBIDDEN_METHODS = ["CONNECT", "TRACE", "TRACK"];
const NORMALIZED_METHODS = ["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"];

export const XHR_EVENTS = ["readystatechange", "loadstart", "progress", "abort", "error", "load", "timeout", "loadend"];
export const UPLOAD_EVENTS = ["loadstart", "progress", "abort", "error", "load", "timeout", "loadend"];
export const RESPONSE_TYPES = ["", "arraybuffer", "blob", "document", "json", "text"];
// How often Chromium's network service reports upload progress to XMLHttpRequest.
export const UPLOAD_REPORT_INTERVAL_MS = 100;
export const UNSENT = 0;
export const OPENED = 1;
export const HEADERS_RECEIVED = 2;
export const LOADING = 3;
export const DONE = 4;

export function createProgressEvent(type, loaded, total, lengthComputable) {
  const init = { lengthComputable: lengthComputable === undefined ? total > 0 : lengthComputable, loaded, total };
  if (typeof global.ProgressEvent === "function") return new global.ProgressEvent(type, init);
  const event = new global.Event(type);
  Object.defineProperties(event, {
    lengthComputable: { value: init.lengthComputable },
    loaded: { value: loaded },
    total: { value: total },
  });
  return event;
}

export function cloneEvent(event) {
  if (typeof event.loaded === "number") return createProgressEvent(event.type, event.loaded, event.total, event.lengthComputable);
  return new global.Event(event.type);
}

/** on<type> properties that behave like a browser's event handler attributes. */
export function defineEventHandlers(proto, types) {
  for (const type of types) {
    Object.defineProperty(proto, `on${type}`, {
      configurable: true,
      enumerable: true,
      get() {
        return this.eventHandlers[type] || null;
      },
      set(value) {
        const handlers = this.eventHandlers;
        if (!handlers[`listening ${type}`]) {
          handlers[`listening ${type}`] = true;
          this.addEventListener(type, (event) => {
            const handler = this.eventHandlers[type];
            if (typeof handler === "function") handler.call(this, event);
          });
        }
        handlers[type] = typeof value === "function" ? value : null;
      },
    });
  }
}

export function mimeEssence(mime) {
  return String(mime || "").split(";")[0].trim().toLowerCase();
}

export function mimeCharset(mime) {
  const match = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(String(mime || ""));
  return match ? match[1] : null;
}

function isXmlMime(essence) {
  return essence === "text/xml" || essence === "application/xml" || essence.endsWith("+xml");
}

export function domParserType(essence) {
  if (essence === "text/html") return "text/html";
  if (["text/xml", "application/xml", "application/xhtml+xml", "image/svg+xml"].includes(essence)) return essence;
  return isXmlMime(essence) ? "application/xml" : null;
}

export function textDecoderFor(label) {
  try {
    return new TextDecoder(label || "utf-8");
  } catch (_) {
    return new TextDecoder("utf-8");
  }
}

/**
 * The encoding a byte order mark names (the Encoding standard's "decode" lets it win over the
 * charset): a label, null when the body has no BOM, undefined while too few bytes arrived to tell.
 */
export function bomEncoding(chunks, final) {
  const head = [];
  for (const chunk of chunks) {
    for (let i = 0; i < chunk.byteLength && head.length < 3; i++) head.push(chunk[i]);
    if (head.length >= 3) break;
  }
  if (head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf) return "utf-8";
  if (head[0] === 0xfe && head[1] === 0xff) return "utf-16be";
  if (head[0] === 0xff && head[1] === 0xfe) return "utf-16le";
  const couldStillBe = head.length < 3 && !final && (head.length === 0 || [0xef, 0xfe, 0xff].includes(head[0])) &&
    (head.length < 2 || (head[0] === 0xef && head[1] === 0xbb));
  return couldStillBe ? undefined : null;
}

function normalizeNewlines(text) {
  return String(text).replace(/\r\n|\r|\n/g, "\r\n");
}

function escapeMultipartName(text) {
  return String(text).replace(/\n/g, "%0A").replace(/\r/g, "%0D").replace(/"/g, "%22");
}

/** multipart/form-data as HTML serialises it, built as a lazy Blob so its size is known at once. */
function multipartBody(formData) {
  const boundary = `----BridgeFormBoundary${randomToken(16)}`;
  const parts = [];
  for (const [name, value] of formData) {
    const disposition = `--${boundary}\r\nContent-Disposition: form-data; name="${escapeMultipartName(normalizeNewlines(name))}"`;
    if (typeof value === "string") {
      parts.push(`${disposition}\r\n\r\n${normalizeNewlines(value)}\r\n`);
    } else {
      const filename = escapeMultipartName(value.name === undefined ? "blob" : value.name);
      parts.push(`${disposition}; filename="${filename}"\r\nContent-Type: ${value.type || "application/octet-stream"}\r\n\r\n`, value, "\r\n");
    }
  }
  parts.push(`--${boundary}--\r\n`);
  return { blob: new global.Blob(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

function serializeDocument(doc) {
  if (typeof global.XMLSerializer === "function") return new global.XMLSerializer().serializeToString(doc);
  return doc.documentElement ? doc.documentElement.outerHTML : "";
}

/** XHR's "extract a body", synchronously, so upload loadstart can report the total. */
export function extractXhrBody(body) {
  const Blob = global.Blob;
  if (typeof Blob === "function" && body instanceof Blob) return { blob: body, contentType: body.type || null };
  if (isBufferSource(body)) return { blob: new Blob([viewBytes(body).slice()]), contentType: null };
  if (typeof global.FormData === "function" && body instanceof global.FormData) return multipartBody(body);
  if (typeof global.URLSearchParams === "function" && body instanceof global.URLSearchParams) {
    return { blob: new Blob([body.toString()]), contentType: "application/x-www-form-urlencoded;charset=UTF-8" };
  }
  if (typeof global.Document === "function" && body instanceof global.Document) {
    const html = body.contentType === "text/html";
    return { blob: new Blob([serializeDocument(body)]), contentType: html ? "text/html;charset=UTF-8" : "application/xml;charset=UTF-8" };
  }
  return { blob: new Blob([String(body)]), contentType: "text/plain;charset=UTF-8" };
}

export function normalizeMethod(method) {
  const text = String(method);
  if (!HTTP_TOKEN.test(text)) throw domException(`'${text}' is not a valid HTTP method.`, "SyntaxError");
  const upper = text.toUpperCase();
  if (FORBIDDEN_METHODS.includes(upper)) throw domException(`'${text}' HTTP method is unsupported.`, "SecurityError");
  return NORMALIZED_METHODS.includes(upper) ? upper : text;
}

export function wrongResponseType(first, second, actual) {
  return domException(`The value is only accessible if the object's 'responseType' is ${first} or '${second}' (was '${actual}').`, "InvalidStateError");
}
