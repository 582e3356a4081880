"""The one origin of the differential suite: it serves the scenario page (with or without the shim)
and every endpoint the scenarios call, byte for byte, so the browser's networking and the shim's
see exactly the same responses.

Endpoints (query parameters in brackets):
  /page?mode=native|shim|snippet   the page; `shim` includes the broker's bridge.js, `snippet` the
                              shim's bootstrap snippet (bridge-js/bridge-snippet.js) inline before it
  /scenarios.js               tests/browser/scenarios.js
  /raw?x=BYTES                writes BYTES (percent-encoded, any byte) as the whole response, then
                              closes the connection; for HEAD only the part before the blank line;
                              with n=BYTES first, a request with If-None-Match gets BYTES instead
  /echo                       JSON: method, headers ({lower-case name: value}), body and its length;
                              header values and the body as Latin-1 (one code unit per byte);
                              `arrivals`: [ms since the head, bytes so far] per chunk of a chunked body
  /redirect?s=CODE&to=URL     a CODE redirect to URL (`self`: to this same URL, a loop)
  /bytes?n=N                  N pattern bytes ((i * 31 + (i >> 8)) & 255), with Content-Length
  /slow?chunks=C&size=S&delay=MS   C chunks of S bytes, MS apart, chunked
  /hang                       never answers (until the client goes away, or 30 s)
  /reset                      closes the connection without an answer
  /drop-next                  answers, then closes the connection unanswered at its next request
                              if that comes within 2 s (a keep-alive connection the origin closed
                              just as the client reused it); /drop-count: how many were dropped
  /sse?...                    text/event-stream (see sse()); /sse-count says how often each stream id was opened
"""
import http.server
import json
import pathlib
import threading
import time
import urllib.parse

HERE = pathlib.Path(__file__).parent
SNIPPET = HERE.parent.parent / "bridge-js" / "bridge-snippet.js"


def pattern(count):
    table = bytes((j * 31 + (j >> 8)) & 255 for j in range(65521))
    whole, rest = divmod(count, len(table))
    return table * whole + table[:rest]


class DifferentialOrigin(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    broker = ""
    sse_opens = {}
    sse_lock = threading.Lock()
    dropped = 0

    def log_message(self, *args):
        pass

    # Every method goes through one dispatcher.
    def handle_one_request(self):
        try:
            super().handle_one_request()
        except (ConnectionError, TimeoutError):
            self.close_connection = True

    def __getattr__(self, name):
        if name.startswith("do_"):
            return self.dispatch
        raise AttributeError(name)

    def read_body(self):
        self.arrivals = []
        started = time.monotonic()
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return body
                body += self.rfile.read(size)
                self.arrivals.append([round((time.monotonic() - started) * 1000), len(body)])
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def answer(self, status, body=b"", headers=(), content_type="text/plain"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def dispatch(self):
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        arg = lambda name, default=None: query.get(name, [default])[0]  # noqa: E731
        drop_until = getattr(self, "drop_until", 0)
        self.drop_until = 0
        if time.monotonic() < drop_until:
            DifferentialOrigin.dropped += 1
            self.close_connection = True
            self.connection.close()
            return
        body = self.read_body()
        path = url.path
        if path == "/page":
            mode = arg("mode")
            shim = f'<script src="{self.broker}/bridge.js"></script>' if mode in ("shim", "snippet") else ""
            if mode == "snippet":
                shim = f'<script data-broker-url="{self.broker}">{SNIPPET.read_text()}</script>' + shim
            page = (f'<!doctype html><html><head><meta charset="utf-8"><title>differential</title>{shim}'
                    f'<script src="/scenarios.js"></script></head><body>differential suite</body></html>')
            self.answer(200, page.encode(), content_type="text/html; charset=utf-8")
        elif path == "/scenarios.js":
            self.answer(200, (HERE / "scenarios.js").read_bytes(), [("Cache-Control", "no-store")], "text/javascript")
        elif path == "/raw":
            raw = urllib.parse.unquote_to_bytes(url.query.split("x=", 1)[1] if "x=" in url.query else "")
            if url.query.startswith("n=") and self.headers.get("If-None-Match"):
                raw = urllib.parse.unquote_to_bytes(url.query[2:].split("&", 1)[0])
            if self.command == "HEAD":
                raw = raw.split(b"\r\n\r\n", 1)[0] + b"\r\n\r\n"
            self.wfile.write(raw)
            self.wfile.flush()
            self.close_connection = True
        elif path == "/echo":
            headers = {}
            for name, value in self.headers.raw_items():
                key = name.lower()
                latin = value.encode("latin-1", "surrogateescape").decode("latin-1")
                headers[key] = headers[key] + ", " + latin if key in headers else latin
            echo = {"method": self.command, "headers": headers, "body": body.decode("latin-1"), "length": len(body),
                    "arrivals": self.arrivals}
            self.answer(200, json.dumps(echo).encode(), [("Cache-Control", "no-store")], "application/json")
        elif path == "/redirect":
            target = arg("to", "/echo")
            target = self.path if target == "self" else target
            self.answer(int(arg("s", "302")), b"", [("Location", target), ("Cache-Control", "no-store")])
        elif path == "/bytes":
            self.answer(200, pattern(int(arg("n", "0"))), [("Cache-Control", "no-store")], "application/octet-stream")
        elif path == "/slow":
            self.slow(int(arg("chunks", "3")), int(arg("size", "16")), int(arg("delay", "100")))
        elif path == "/hang":
            self.hang()
        elif path == "/reset":
            self.close_connection = True
            self.connection.close()
        elif path == "/drop-next":
            self.answer(200, b"ok", [("Cache-Control", "no-store")])
            self.drop_until = time.monotonic() + 2
        elif path == "/drop-count":
            self.answer(200, str(DifferentialOrigin.dropped).encode(), [("Cache-Control", "no-store")])
        elif path == "/sse":
            self.sse(arg)
        elif path == "/sse-count":
            with self.sse_lock:
                counts = dict(self.sse_opens)
            self.answer(200, json.dumps(counts).encode(), [("Cache-Control", "no-store")], "application/json")
        else:
            self.answer(404, b"not found")

    def slow(self, chunks, size, delay):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        data = pattern(chunks * size)
        try:
            for index in range(chunks):
                if index:
                    time.sleep(delay / 1000)
                chunk = data[index * size:(index + 1) * size]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True

    def hang(self):
        self.close_connection = True
        self.connection.settimeout(0.2)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                if self.connection.recv(1) == b"":
                    return
            except TimeoutError:
                continue
            except OSError:
                return

    def sse(self, arg):
        """An event stream: `events` is the body (percent-decoded) sent after `delay` ms; with
        `id`, the stream counts its opens and, from the second open on, sends `again` instead,
        and echoes the Last-Event-ID it got as a comment; `type` overrides the content type,
        `s` the status; `hold` keeps the connection open that many ms after the body (and
        notes `ID:closed` when the client closed it first)."""
        key = arg("id")
        last = self.headers.get("Last-Event-ID")
        with self.sse_lock:
            opens = self.sse_opens.get(key, 0) + 1 if key else 1
            if key:
                self.sse_opens[key] = opens
                self.sse_opens[key + ":last"] = last
        events = arg("again", "") if opens > 1 and arg("again") is not None else arg("events", "")
        self.send_response(int(arg("s", "200")))
        self.send_header("Content-Type", arg("type", "text/event-stream"))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            self.wfile.write(events.encode("utf-8"))
            self.wfile.flush()
            hold = int(arg("hold", "0"))
            if hold:
                self.connection.settimeout(hold / 1000)
                try:
                    if self.connection.recv(1) == b"" and key:
                        with self.sse_lock:
                            self.sse_opens[key + ":closed"] = True
                except (TimeoutError, OSError):
                    pass
        except OSError:
            pass


def start(broker_http):
    """Starts the origin on a free port and returns (server, origin URL)."""
    DifferentialOrigin.broker = broker_http
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), DifferentialOrigin)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"
