// The differential suite's scenarios (tests/browser/test_differential.py): each is a small async
// function run in headless Chromium twice against one origin, once with the browser's own
// networking and once through the shim, and the two results must be equal. A result holds only
// what a page can observe and what is the same on every run (no times, no error messages, which
// are worded differently by design). Deliberate differences are listed in test_differential.py and
// bridge-js/README.md ("Differences from the browser").
"use strict";

(function () {
  const CRLF = "\r\n";

  // -- helpers

  /** Percent-encodes a string whose every code unit is a byte (0-255). */
  function bytesParam(text) {
    let out = "";
    for (let i = 0; i < text.length; i++) out += "%" + text.charCodeAt(i).toString(16).padStart(2, "0");
    return out;
  }

  /** An /raw URL answering exactly `statusLine`, `headers` (a list of "Name: value") and `body`. */
  function raw(statusLine, headers, body, options) {
    const opts = options || {};
    const list = headers.slice();
    if (body !== null && !opts.noLength) list.push("Content-Length: " + body.length);
    list.push("Cache-Control: " + (opts.cache || "no-store"));
    // The origin closes the connection after a raw answer: said, so that no client reuses it.
    if (!list.some((line) => /^connection:/i.test(line))) list.push("Connection: close");
    // `notModified`: the whole answer (a status line and fields) to a request with If-None-Match.
    const conditional = opts.notModified ? "n=" + bytesParam(opts.notModified + CRLF) + "&" : "";
    return "/raw?" + conditional + "x=" + bytesParam(statusLine + CRLF + list.map((line) => line + CRLF).join("") + CRLF + (body || "")) +
      (opts.tag ? "&t=" + opts.tag : "");
  }

  function ok(body, headers) {
    return raw("HTTP/1.1 200 OK", ["Content-Type: text/plain"].concat(headers || []), body);
  }

  function sleep(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }

  function fnv32(bytes) {
    let hash = 0x811c9dc5;
    for (let i = 0; i < bytes.length; i++) { hash ^= bytes[i]; hash = Math.imul(hash, 0x01000193) >>> 0; }
    return hash >>> 0;
  }

  function path(url) {
    if (!url) return url;
    const parsed = new URL(url);
    return parsed.origin === location.origin ? parsed.pathname + parsed.search.slice(0, 40) + parsed.hash : url;
  }

  function codes(text) {
    return Array.from(text, (c) => c.charCodeAt(0));
  }

  // Cache-Status is the broker's own header (RFC 9211), on every response it returns: deliberate.
  function headerList(headers) {
    return Array.from(headers).filter(([name]) => name !== "cache-status" && name !== "date" && name !== "server");
  }

  function described(r) {
    return { status: r.status, statusText: r.statusText, ok: r.ok, redirected: r.redirected, type: r.type,
      url: path(r.url), bodyNull: r.body === null, bodyUsed: r.bodyUsed };
  }

  async function full(r) {
    return Object.assign(described(r), { headers: headerList(r.headers), text: await r.text() });
  }

  function failure(error) {
    return { threw: error && error.name, ctor: error && error.constructor && error.constructor.name };
  }

  async function outcome(promise) {
    try {
      return { value: await promise };
    } catch (error) {
      return failure(error);
    }
  }

  async function echo(init, url) {
    const r = await fetch(url || "/echo", init);
    const body = await r.json();
    return { status: r.status, redirected: r.redirected, url: path(r.url), method: body.method, body: body.body,
      length: body.length, type: body.headers["content-type"] || null, xTest: body.headers["x-test"] || null };
  }

  /** An XHR run to its loadend: the events in order (runs of progress as one), and what it exposes. */
  function xhr(options) {
    const o = options || {};
    return new Promise((resolve) => {
      const request = new XMLHttpRequest();
      const log = [];
      const push = (entry) => {
        if (entry.endsWith("progress") && log[log.length - 1] === entry) return;
        log.push(entry);
      };
      request.onreadystatechange = () => push("rs" + request.readyState);
      for (const name of ["loadstart", "progress", "abort", "error", "load", "timeout", "loadend"]) {
        request.addEventListener(name, (event) => {
          push(name + (name === "loadend" || name === "load" ? ":" + event.loaded + "/" + event.total : ""));
          if (name === "loadend") setTimeout(finish, 0);
        });
        if (o.upload) request.upload.addEventListener(name, () => push("up:" + name));
      }
      function finish() {
        let response;
        try {
          const value = request.response;
          if (value instanceof ArrayBuffer) response = ["arraybuffer", value.byteLength, fnv32(new Uint8Array(value))];
          else if (typeof Blob === "function" && value instanceof Blob) response = ["blob", value.size, value.type];
          else if (value && typeof value === "object" && value.nodeType) response = ["document", value.documentElement && value.documentElement.nodeName];
          else response = value;
        } catch (error) {
          response = failure(error);
        }
        resolve({ log, status: request.status, statusText: request.statusText, readyState: request.readyState,
          url: path(request.responseURL), response,
          headers: (request.getAllResponseHeaders() || "").split("\r\n").filter((line) => line && !/^(cache-status|date|server):/.test(line)),
          picked: o.pick ? request.getResponseHeader(o.pick) : undefined });
      }
      request.open(o.method || "GET", o.url || "/echo");
      if (o.responseType) request.responseType = o.responseType;
      if (o.timeout) request.timeout = o.timeout;
      if (o.mime) request.overrideMimeType(o.mime);
      for (const [name, value] of o.headers || []) request.setRequestHeader(name, value);
      request.send(o.body === undefined ? null : o.body);
      if (o.abortAfter !== undefined) setTimeout(() => request.abort(), o.abortAfter);
    });
  }

  const S = [];
  const add = (name, run) => S.push([name, run]);

  // -- status codes and reason phrases

  for (const code of [200, 201, 202, 203, 226, 299, 400, 401, 403, 404, 405, 409, 410, 418, 422, 429, 451, 499,
    500, 501, 502, 503, 504, 599]) {
    add(`status ${code}`, async () => full(await fetch(raw(`HTTP/1.1 ${code} Reason ${code}`, ["Content-Type: text/plain"], "s" + code))));
  }
  add("custom reason phrase on 299", async () => described(await fetch(raw("HTTP/1.1 299 Custom Reason", [], "x"))));
  add("custom reason phrase on 200", async () => described(await fetch(raw("HTTP/1.1 200 Fine By Me", [], "x"))));
  // A response's type is "basic" when it is same-origin with the document, wherever <base> points.
  add("a same-origin response is basic with a <base> of another origin", async () => {
    const base = document.createElement("base");
    base.href = "http://other.invalid/dir/";
    document.head.prepend(base);
    try {
      return full(await fetch(location.origin + ok("based")));
    } finally {
      base.remove();
    }
  });
  add("custom reason phrase of a response served from the cache", async () => {
    const url = raw("HTTP/1.1 200 Fine By Me", ["Content-Type: text/plain"], "cached", { cache: "max-age=600", tag: "reason-cache" });
    await (await fetch(url)).text();
    const again = await fetch(url);
    return [again.status, again.statusText, await again.text()];
  });
  // A fresh hit comes through the shim as one whole-response frame (docs/PROTOCOL.md): the same
  // Response in every way a page can look at it.
  add("a response served from the cache, read every way", async () => {
    const url = raw("HTTP/1.1 200 OK", ["Content-Type: application/json", "X-Kept: 1", "Vary: Accept"], '{"hit":true}',
      { cache: "max-age=600", tag: "whole-hit" });
    await (await fetch(url)).text();
    const hits = [];
    for (const read of ["text", "json", "arrayBuffer", "blob", "bytes", "stream", "clone"]) {
      const r = await fetch(url);
      const shape = Object.assign(described(r), { headers: headerList(r.headers).filter(([name]) => name !== "age") });
      if (read === "stream") {
        const reader = r.body.getReader();
        let bytes = [];
        for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) bytes = bytes.concat(Array.from(chunk.value));
        shape.read = [bytes.length, fnv32(bytes), r.bodyUsed];
      } else if (read === "clone") {
        const copy = r.clone();
        shape.read = [await r.text(), await copy.text(), copy.url === r.url, copy.headers.get("x-kept")];
      } else {
        const value = await r[read]();
        shape.read = read === "json" ? value : read === "text" ? value : [value.constructor.name, value.size || value.byteLength];
      }
      shape.again = await outcome(r.text());
      hits.push(shape);
    }
    return hits;
  });
  // The shim reads a whole response's body from its bytes (response.js) until the page takes its
  // `body`: what comes after such a read must fail as the browser's own does.
  add("a response from the cache read from its bytes, then every way again", async () => {
    const url = raw("HTTP/1.1 200 OK", ["Content-Type: application/json"], '{"hit":2}', { cache: "max-age=600", tag: "bytes-hit" });
    await (await fetch(url)).text();
    const results = [];
    for (const first of ["text", "json", "arrayBuffer", "bytes"]) {
      const r = await fetch(url);
      if (typeof r[first] !== "function") continue;
      const value = await r[first]();
      const read = first === "text" || first === "json" ? value : [value.constructor.name, value.byteLength];
      const after = [];
      for (const again of ["text", "json", "arrayBuffer", "blob", "formData"]) after.push(await outcome(r[again]()));
      let cloned;
      try {
        r.clone();
        cloned = "cloned";
      } catch (error) {
        cloned = failure(error);
      }
      let reader;
      try {
        r.body.getReader();
        reader = "reader";
      } catch (error) {
        reader = failure(error);
      }
      results.push({ first, read, used: r.bodyUsed, after, cloned, bodyNull: r.body === null, reader });
    }
    const r = await fetch(url);
    const copy = r.clone();
    const [a, b] = [await r.json(), await copy.text()];
    const c = await fetch(url);
    const blob = await c.blob();
    results.push({ clone: [a, b, r.bodyUsed, copy.bodyUsed], blob: [blob.size, blob.type, await outcome(c.text())] });
    const bad = raw("HTTP/1.1 200 OK", ["Content-Type: application/json"], "{not json", { cache: "max-age=600", tag: "bytes-bad-json" });
    await (await fetch(bad)).text();
    const j = await fetch(bad);
    results.push({ badJson: await outcome(j.json()), used: j.bodyUsed });
    // The Cache API reads the response's real body: the page cannot read it after that.
    if (typeof caches !== "undefined") {
      const kept = await fetch(url);
      const cache = await caches.open("bytes-hit");
      const put = await outcome(cache.put("/kept-" + Date.now(), kept));
      results.push({ cached: [put, kept.bodyUsed, await outcome(kept.text())] });
    }
    return results;
  });
  add("abort after a response from the cache arrived, before reading it", async () => {
    const url = raw("HTTP/1.1 200 OK", ["Content-Type: text/plain"], "stored", { cache: "max-age=600", tag: "whole-abort" });
    await (await fetch(url)).text();
    const controller = new AbortController();
    const r = await fetch(url, { signal: controller.signal });
    controller.abort();
    const kept = await fetch(url, { signal: new AbortController().signal });
    return [await outcome(r.text()), await kept.text()];
  });
  add("a 304 revalidation keeps the cached response's reason phrase", async () => {
    const url = raw("HTTP/1.1 200 Fine By Me", ["Content-Type: text/plain", 'ETag: "r1"'], "cached",
      { cache: "no-cache", tag: "reason-304", notModified: 'HTTP/1.1 304 Still The Same' + CRLF + 'ETag: "r1"' + CRLF + "Connection: close" + CRLF });
    await (await fetch(url)).text();
    const again = await fetch(url);
    return [again.status, again.statusText, await again.text()];
  });
  add("empty reason phrase", async () => described(await fetch(raw("HTTP/1.1 404 ", [], "x"))));
  add("no reason phrase at all", async () => described(await fetch(raw("HTTP/1.1 201", [], "x"))));
  add("reason phrase with bytes above 0x7F", async () => {
    const r = await fetch(raw("HTTP/1.1 200 Tr\xc3\xa8s bien", [], "x"));
    return codes(r.statusText);
  });
  for (const code of [204, 205, 304]) {
    add(`null body status ${code}`, async () => {
      const r = await fetch(raw(`HTTP/1.1 ${code} Nothing`, ["Content-Type: text/plain"], null));
      return Object.assign(described(r), { text: await r.text() });
    });
  }
  add("103 early hints before the response", async () => {
    const url = "/raw?x=" + bytesParam("HTTP/1.1 103 Early Hints\r\nLink: </x.css>; rel=preload\r\n\r\n" +
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nCache-Control: no-store\r\nConnection: close\r\n\r\nhints");
    return full(await fetch(url));
  });
  add("100 continue before the response", async () => {
    const url = "/raw?x=" + bytesParam("HTTP/1.1 100 Continue\r\n\r\n" +
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nCache-Control: no-store\r\nConnection: close\r\n\r\nok");
    return full(await fetch(url));
  });

  // -- HEAD, empty and large bodies, framing

  add("HEAD has a null body and keeps Content-Length", async () => {
    const r = await fetch("/bytes?n=1234", { method: "HEAD" });
    return Object.assign(described(r), { length: r.headers.get("content-length"), text: await r.text() });
  });
  add("HEAD of a 404", async () => full(await fetch(raw("HTTP/1.1 404 Not Found", [], "missing"), { method: "HEAD" })));
  add("empty 200 body is empty, not null", async () => full(await fetch(ok(""))));
  add("body without Content-Length, ended by close", async () =>
    full(await fetch(raw("HTTP/1.1 200 OK", ["Content-Type: text/plain", "Connection: close"], "until close", { noLength: true }))));
  add("chunked body", async () =>
    full(await fetch(raw("HTTP/1.1 200 OK", ["Transfer-Encoding: chunked"], "3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n", { noLength: true }))));
  add("three mebibytes arrive byte for byte", async () => {
    const bytes = new Uint8Array(await (await fetch("/bytes?n=3145728")).arrayBuffer());
    return [bytes.length, fnv32(bytes)];
  });
  add("one byte body", async () => Array.from(new Uint8Array(await (await fetch("/bytes?n=1")).arrayBuffer())));
  add("blob() of a typed body", async () => {
    const blob = await (await fetch(raw("HTTP/1.1 200 OK", ["Content-Type: image/x-test"], "12345"))).blob();
    return [blob.size, blob.type];
  });
  add("json() of invalid JSON rejects with SyntaxError", async () => outcome((await fetch(ok("{nope"))).json()));
  add("formData() of urlencoded text", async () => {
    const r = await fetch(raw("HTTP/1.1 200 OK", ["Content-Type: application/x-www-form-urlencoded"], "a=1&b=x+y"));
    return Array.from(await r.formData());
  });

  // -- response headers

  add("duplicate response headers are combined", async () =>
    (await fetch(ok("x", ["X-Dup: one", "X-Dup: two", "x-dup: three"]))).headers.get("x-dup"));
  add("header iteration is sorted and lower-case", async () =>
    headerList((await fetch(ok("x", ["Zeta: 1", "alpha: 2", "Mid-Name: 3"]))).headers));
  add("Set-Cookie is not exposed", async () => {
    const r = await fetch(ok("x", ["Set-Cookie: a=1; Path=/diff-none", "X-After: yes"]));
    return [r.headers.get("set-cookie"), r.headers.getSetCookie().length, r.headers.has("set-cookie"), r.headers.get("x-after")];
  });
  add("header whitespace is trimmed", async () => (await fetch(ok("x", ["X-Space:    padded value   "]))).headers.get("x-space"));
  add("empty header value", async () => {
    const r = await fetch(ok("x", ["X-Empty:"]));
    return [r.headers.has("x-empty"), r.headers.get("x-empty")];
  });
  add("UTF-8 header value is one code unit per byte", async () =>
    codes((await fetch(ok("x", ["X-Name: caf\xc3\xa9"]))).headers.get("x-name")));
  add("Latin-1 header value is one code unit per byte", async () =>
    codes((await fetch(ok("x", ["X-Name: caf\xe9 \xff"]))).headers.get("x-name")));
  add("Content-Disposition with UTF-8 bytes", async () =>
    codes((await fetch(ok("x", ["Content-Disposition: attachment; filename=\"\xe2\x82\xac.txt\""]))).headers.get("content-disposition")));
  add("a long header value", async () => (await fetch(ok("x", ["X-Long: " + "v".repeat(6000)]))).headers.get("x-long").length);
  add("many headers", async () => {
    const lines = [];
    for (let i = 0; i < 60; i++) lines.push(`X-H${i}: ${i}`);
    return headerList((await fetch(ok("x", lines))).headers).length;
  });

  // -- charsets

  add("text() decodes UTF-8 whatever the charset says", async () =>
    codes(await (await fetch(raw("HTTP/1.1 200 OK", ["Content-Type: text/plain; charset=iso-8859-1"], "caf\xe9 \xc3\xa9"))).text()));
  add("text() strips a UTF-8 BOM", async () => codes(await (await fetch(ok("\xef\xbb\xbfbom"))).text()));
  add("XHR decodes windows-1252 from the charset", async () =>
    codes((await xhr({ url: raw("HTTP/1.1 200 OK", ["Content-Type: text/plain; charset=windows-1252"], "caf\xe9 \x80") })).response));
  add("XHR decodes UTF-16LE with a BOM", async () =>
    codes((await xhr({ url: raw("HTTP/1.1 200 OK", ["Content-Type: text/plain"], "\xff\xfeh\x00i\x00") })).response));
  add("XHR overrideMimeType charset", async () =>
    codes((await xhr({ url: ok("caf\xe9"), mime: "text/plain; charset=iso-8859-1" })).response));
  add("XHR JSON response type", async () => (await xhr({ url: raw("HTTP/1.1 200 OK", ["Content-Type: application/json"], '{"a":[1,"\xc3\xa9"]}'), responseType: "json" })).response);
  add("XHR document from XML", async () => (await xhr({ url: raw("HTTP/1.1 200 OK", ["Content-Type: application/xml"], "<root><a/></root>"), responseType: "document" })).response);

  // -- redirects

  for (const code of [301, 302, 303, 307, 308]) {
    add(`POST redirected by ${code}`, async () =>
      echo({ method: "POST", body: "the body", headers: { "Content-Type": "text/x-test", "X-Test": "kept" } }, `/redirect?s=${code}&to=/echo`));
  }
  add("PUT redirected by 303 becomes GET", async () => echo({ method: "PUT", body: "put body" }, "/redirect?s=303&to=/echo"));
  add("HEAD redirected by 303 stays HEAD", async () => {
    const r = await fetch("/redirect?s=303&to=/bytes%3Fn%3D10", { method: "HEAD" });
    return described(r);
  });
  add("307 POST of a Blob resends it", async () => echo({ method: "POST", body: new Blob(["blob body"], { type: "text/x-blob" }) }, "/redirect?s=307&to=/echo"));
  add("308 POST of a ReadableStream fails", async () => {
    const stream = new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode("streamed")); c.close(); } });
    return outcome(fetch("/redirect?s=308&to=/echo", { method: "POST", body: stream, duplex: "half" }));
  });
  add("redirect chain of three", async () => {
    const to = encodeURIComponent("/redirect?s=302&to=" + encodeURIComponent("/redirect?s=301&to=/echo"));
    return described(await fetch(`/redirect?s=307&to=${to}`));
  });
  add("relative Location", async () => described(await fetch("/redirect?s=302&to=echo")));
  add("redirect: error rejects", async () => outcome(fetch("/redirect?s=302&to=/echo", { redirect: "error" })));
  add("redirect: manual is an opaque redirect", async () => {
    const r = await fetch("/redirect?s=302&to=/echo", { redirect: "manual" });
    return Object.assign(described(r), { headers: headerList(r.headers) });
  });
  add("redirect loop fails after twenty", async () => outcome(fetch("/redirect?s=302&to=self")));
  add("Location to another scheme fails", async () => outcome(fetch("/redirect?s=302&to=ftp%3A%2F%2Fexample.com%2F")));
  add("301 without Location is the response", async () => full(await fetch(raw("HTTP/1.1 301 Moved", [], "no location"))));
  add("XHR follows a 307 POST", async () => {
    const result = await xhr({ method: "POST", url: "/redirect?s=307&to=/echo", body: "xhr body", responseType: "json" });
    return [result.status, result.url, result.response.method, result.response.body];
  });

  // -- request bodies of every kind

  add("string body", async () => echo({ method: "POST", body: "plain text é" }));
  add("URLSearchParams body", async () => echo({ method: "POST", body: new URLSearchParams({ a: "1", b: "x y" }) }));
  add("Blob body with a type", async () => echo({ method: "POST", body: new Blob(["blob"], { type: "application/x-test" }) }));
  add("ArrayBuffer body", async () => echo({ method: "POST", body: new Uint8Array([0, 1, 255]).buffer }));
  add("typed array view body", async () => echo({ method: "POST", body: new Uint16Array([0x4141, 0x4242]).subarray(1) }));
  add("DataView body", async () => echo({ method: "POST", body: new DataView(new Uint8Array([104, 105, 33]).buffer, 1) }));
  add("FormData body", async () => {
    const form = new FormData();
    form.append("field", "value");
    form.append("file", new Blob(["content"], { type: "text/plain" }), "f.txt");
    const result = await echo({ method: "POST", body: form });
    return [result.type.split(";")[0], result.body.includes('name="file"; filename="f.txt"'), result.body.includes("content")];
  });
  add("empty string body", async () => echo({ method: "POST", body: "" }));
  add("ReadableStream body", async () => {
    const stream = new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode("str")); c.enqueue(new TextEncoder().encode("eam")); c.close(); } });
    return echo({ method: "POST", body: stream, duplex: "half" });
  });
  add("ReadableStream body without duplex fails", async () => outcome(fetch("/echo", { method: "POST", body: new ReadableStream() })));
  add("two mebibytes upload", async () => {
    const bytes = new Uint8Array(2 * 1024 * 1024).map((_, i) => (i * 7 + (i >> 9)) & 255);
    const r = await fetch("/echo", { method: "POST", body: bytes });
    const body = await r.json();
    return [body.length, fnv32(Uint8Array.from(body.body, (c) => c.charCodeAt(0))) === fnv32(bytes)];
  });
  add("GET with a body fails", async () => outcome(fetch("/echo", { method: "GET", body: "x" })));
  add("custom method", async () => echo({ method: "PATCH", body: "patch" }));
  add("lower-case method is normalised", async () => echo({ method: "post", body: "p" }));
  add("request header sent", async () => echo({ headers: { "X-Test": "value 1" } }));

  // -- Request, Response and Headers objects

  add("fetch(Request) with body and headers", async () =>
    echo(undefined, new Request("/echo", { method: "PUT", body: "from a Request", headers: { "X-Test": "req" } })));
  add("Request init overrides", async () => echo({ method: "POST", body: "override" }, new Request("/echo", { method: "PUT", body: "orig" })));
  add("a used Request cannot be fetched again", async () => {
    const request = new Request("/echo", { method: "POST", body: "once" });
    await fetch(request);
    return outcome(fetch(request));
  });
  add("Response.clone reads twice", async () => {
    const r = await fetch(ok("cloned"));
    const copy = r.clone();
    return [await r.text(), await copy.text(), described(copy)];
  });
  add("body used twice rejects", async () => {
    const r = await fetch(ok("once"));
    await r.text();
    return [r.bodyUsed, await outcome(r.text())];
  });
  add("Headers of the response are immutable", async () => {
    const r = await fetch(ok("x"));
    try {
      r.headers.set("x-new", "1");
      return "mutable";
    } catch (error) {
      return failure(error);
    }
  });
  add("response.headers.has and keys", async () => {
    const r = await fetch(ok("x", ["X-One: 1"]));
    return [r.headers.has("X-ONE"), Array.from(r.headers.keys()).filter((k) => k.startsWith("x-"))];
  });

  // -- errors

  add("connection reset fails with TypeError", async () => outcome(fetch("/reset")));
  add("refused connection fails with TypeError", async () => outcome(fetch("http://127.0.0.1:1/")));
  add("invalid URL fails with TypeError", async () => outcome(fetch("http://[bad")));
  add("forbidden method fails", async () => outcome(fetch("/echo", { method: "CONNECT" })));
  add("invalid header name fails", async () => outcome(fetch("/echo", { headers: { "bad name": "x" } })));
  add("a response without a status line", async () => {
    const result = await outcome(fetch("/raw?x=" + bytesParam("NOT HTTP AT ALL\r\n\r\n")));
    return result.value ? full(result.value) : result;
  });
  add("truncated body fails while reading", async () => {
    const r = await fetch(raw("HTTP/1.1 200 OK", ["Content-Length: 100"], "only ten..", { noLength: true }));
    return [r.status, await outcome(r.text())];
  });
  add("a keep-alive connection the origin closed as it was reused", async () => {
    const before = Number(await (await fetch("/drop-count")).text());
    await (await fetch("/drop-next")).text();
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await fetch("/bytes?n=3&t=after-drop-" + i)).status);
    const dropped = Number(await (await fetch("/drop-count")).text()) - before;
    return [statuses, dropped];
  });
  add("XHR network error events", async () => xhr({ url: "/reset", upload: true, method: "POST", body: "x" }));

  // -- aborts

  add("abort before fetch", async () => {
    const controller = new AbortController();
    controller.abort();
    return outcome(fetch("/echo", { signal: controller.signal }));
  });
  add("abort with a reason rejects with it", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new RangeError("mine")), 50);
    return outcome(fetch("/hang", { signal: controller.signal }));
  });
  add("abort while waiting for the response", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    return outcome(fetch("/hang", { signal: controller.signal }));
  });
  add("abort while reading a streamed body", async () => {
    const controller = new AbortController();
    const r = await fetch("/slow?chunks=10&size=10&delay=100", { signal: controller.signal });
    const reader = r.body.getReader();
    await reader.read();
    controller.abort();
    return outcome(reader.read());
  });
  add("abort after the body arrived, before reading it", async () => {
    const controller = new AbortController();
    const r = await fetch(ok("all here"), { signal: controller.signal });
    await sleep(150);
    controller.abort();
    return outcome(r.text());
  });
  add("abort with a reason during the body read", async () => {
    const controller = new AbortController();
    const r = await fetch("/slow?chunks=10&size=10&delay=100", { signal: controller.signal });
    setTimeout(() => controller.abort(new RangeError("later")), 50);
    return outcome(r.arrayBuffer());
  });
  add("abort after the body was read changes nothing", async () => {
    const controller = new AbortController();
    const r = await fetch(ok("done"), { signal: controller.signal });
    const text = await r.text();
    controller.abort();
    return [text, r.bodyUsed];
  });
  add("AbortSignal.timeout rejects with TimeoutError", async () => outcome(fetch("/hang", { signal: AbortSignal.timeout(100) })));
  add("XHR abort events", async () => xhr({ url: "/hang", abortAfter: 50, upload: true, method: "POST", body: "x" }));
  add("XHR timeout events", async () => xhr({ url: "/hang", timeout: 100 }));
  add("XHR timeout events with upload listeners", async () => xhr({ url: "/hang", timeout: 40, upload: true, method: "POST", body: "up" }));
  add("XHR timeout after the upload was reported", async () => xhr({ url: "/hang", timeout: 500, upload: true, method: "POST", body: "up" }));

  // -- streaming

  add("streamed body arrives in order", async () => {
    const r = await fetch("/slow?chunks=4&size=100&delay=50");
    const reader = r.body.getReader();
    let total = 0;
    const all = [];
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.length;
      all.push(...value);
    }
    return [total, fnv32(Uint8Array.from(all))];
  });
  add("reader.cancel() ends the body", async () => {
    const r = await fetch("/slow?chunks=10&size=10&delay=100");
    const reader = r.body.getReader();
    await reader.read();
    await reader.cancel();
    return [await outcome(reader.closed), r.bodyUsed];
  });
  add("tee() gives the body twice", async () => {
    const r = await fetch("/bytes?n=5000");
    const [a, b] = r.body.tee();
    const [x, y] = await Promise.all([new Response(a).arrayBuffer(), new Response(b).arrayBuffer()]);
    return [x.byteLength, y.byteLength, fnv32(new Uint8Array(x)) === fnv32(new Uint8Array(y))];
  });
  add("chunks are Uint8Arrays", async () => {
    const { value } = await (await fetch(ok("abc"))).body.getReader().read();
    return [value.constructor.name, value.length];
  });

  // -- XMLHttpRequest

  add("XHR GET events", async () => xhr({ url: ok("hello xhr") }));
  add("XHR POST with upload listeners", async () => {
    const result = await xhr({ method: "POST", url: ok("uploaded"), body: "upload me", upload: true });
    return [result.log, result.status, result.response];
  });
  add("XHR custom reason phrase", async () => {
    const result = await xhr({ url: raw("HTTP/1.1 299 Custom Reason", [], "x") });
    return [result.status, result.statusText];
  });
  add("XHR getResponseHeader of bytes above 0x7F", async () =>
    codes((await xhr({ url: ok("x", ["X-Name: caf\xc3\xa9 \xe9"]), pick: "x-name" })).picked));
  add("XHR getAllResponseHeaders", async () => (await xhr({ url: ok("x", ["X-B: 2", "X-A: 1", "X-A: 3", "Set-Cookie: z=1; Path=/none"]) })).headers);
  add("XHR 204", async () => xhr({ url: raw("HTTP/1.1 204 No Content", [], null) }));
  add("XHR HEAD", async () => xhr({ method: "HEAD", url: "/bytes?n=10" }));
  add("XHR 404 is a load", async () => xhr({ url: raw("HTTP/1.1 404 Not Found", [], "nope") }));
  add("XHR arraybuffer", async () => (await xhr({ url: "/bytes?n=70000", responseType: "arraybuffer" })).response);
  add("XHR blob type", async () => (await xhr({ url: raw("HTTP/1.1 200 OK", ["Content-Type: image/x-test"], "blob!"), responseType: "blob" })).response);
  add("XHR responseURL after a redirect", async () => (await xhr({ url: "/redirect?s=302&to=/echo" })).url);
  add("XHR empty body load event totals", async () => (await xhr({ url: ok("") })).log);

  // -- EventSource (the stream's opens are counted per id: one id per mode)

  function eventSource(query, messages) {
    const mode = new URLSearchParams(location.search).get("mode") || (window.BridgeBroker ? "shim" : "native");
    const params = new URLSearchParams(Object.assign({}, query, query.id ? { id: `${query.id}-${mode}` } : {}));
    return new Promise((resolve) => {
      const source = new EventSource("/sse?" + params);
      const log = [source.readyState];
      let seen = 0;
      const finish = () => { source.close(); resolve(log.concat([source.readyState])); };
      source.onopen = () => log.push(["open", source.readyState]);
      const onMessage = (event) => {
        log.push([event.type, event.data, event.lastEventId, event.origin === location.origin]);
        if (++seen === messages) setTimeout(finish, 20);
      };
      source.onmessage = onMessage;
      source.addEventListener("named", onMessage);
      source.onerror = () => {
        log.push(["error", source.readyState]);
        if (source.readyState === 2 || messages === 0) setTimeout(finish, 200);
      };
      setTimeout(finish, 3000);
    });
  }
  add("EventSource events, ids, comments and line endings", async () =>
    eventSource({ events: "data: a\n\n: note\r\nevent: named\r\ndata: b\r\nid: 4\r\n\r\ndata: c\rdata:d\r\r", hold: "100" }, 3));
  add("EventSource reconnects with the last event id", async () =>
    eventSource({ id: "again", events: "retry: 50\nid: 9\ndata: first\n\n", again: "data: second\n\n" }, 2));
  add("EventSource 204 fails the connection", async () => eventSource({ s: "204", events: "data: x\n\n" }, 1));
  add("EventSource of another content type fails", async () => eventSource({ type: "text/plain", events: "data: x\n\n" }, 1));

  window.SCENARIOS = S;

  /** Runs every scenario (or those named) one after another, each at most `limit` ms. */
  window.runScenarios = async function (names, limit) {
    if (window.BridgeBroker) await window.BridgeBroker.ready;
    const results = {};
    for (const [name, run] of S) {
      if (names && !names.includes(name)) continue;
      let timer;
      const expired = new Promise((resolve) => { timer = setTimeout(() => resolve({ expired: true }), limit || 5000); });
      try {
        results[name] = await Promise.race([run(), expired]);
      } catch (error) {
        results[name] = Object.assign({ unexpected: true }, failure(error));
      }
      clearTimeout(timer);
    }
    return results;
  };
})();
