"""A local origin for the WebKit host's tests: the test pages, a JSON endpoint without CORS
headers, deterministic binary bodies, a slow response that notices when its client goes away,
and a count of the requests it answered."""
import http.server
import json
import pathlib
import select
import threading
import time
import urllib.parse

PAGES = pathlib.Path(__file__).parent / "pages"
SNIPPET = pathlib.Path(__file__).parent.parent.parent / "bridge-js" / "bridge-snippet.js"


def pattern(length):
    """The bytes /bytes serves: byte i is (i * 31 + 7) mod 256, as the pages check."""
    return bytes((i * 31 + 7) & 0xFF for i in range(256)) * (length // 256) + bytes((i * 31 + 7) & 0xFF for i in range(length % 256))


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = []
        self.slow = {"started": 0, "aborted": 0, "completed": 0}

    def count(self, prefix=""):
        with self.lock:
            return sum(1 for path in self.requests if path.startswith(prefix))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: State = None

    def log_message(self, *args):
        pass

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        with self.state.lock:
            self.state.requests.append(url.path)
        if url.path.startswith("/pages/"):
            # /pages/excluded/NAME is the page NAME at a path the tests' --never-inject-into names.
            file = PAGES / url.path[len("/pages/"):].removeprefix("excluded/")
            if not file.is_file():
                return self.send(404, b"no such page", "text/plain")
            # {{SNIPPET}}: the shim's bootstrap snippet, as a page inlines it.
            page = file.read_bytes().replace(b"{{SNIPPET}}", SNIPPET.read_bytes())
            return self.send(200, page, "text/html; charset=utf-8", cache=query.get("max-age"))
        if url.path == "/identity":
            # What the request arrived with, as JSON; ?set= a Set-Cookie line for the response.
            seen = {name: self.headers.get(name) for name in ("User-Agent", "Accept", "Accept-Language", "Referer", "Origin", "Cookie")}
            body = json.dumps(seen).encode()
            return self.send(200, body, "application/json", cookies=[query["set"]] if "set" in query else ())
        if url.path == "/nocors":
            return self.send(200, b'{"from": "an origin without CORS headers"}', "application/json")
        if url.path == "/bytes":
            return self.send(200, pattern(int(query.get("n", "1024"))), "application/octet-stream")
        if url.path.startswith("/static/"):
            body = ("/* %s */\n" % url.path).encode() * 64
            return self.send(200, body, "text/javascript", cache="600")
        if url.path == "/slow":
            return self.slow(float(query.get("seconds", "20")))
        self.send(404, b"not found", "text/plain")

    def send(self, status, body, content_type, cache=None, cookies=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for line in cookies:
            self.send_header("Set-Cookie", line)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", f"max-age={cache}" if cache else "no-store")
        self.end_headers()
        self.wfile.write(body)

    def slow(self, seconds):
        """Sends headers, then waits; a client that goes away (the broker cancelling) is counted."""
        with self.state.lock:
            self.state.slow["started"] += 1
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", "4")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.flush()
        deadline = time.time() + seconds
        while time.time() < deadline:
            readable, _, _ = select.select([self.connection], [], [], 0.05)
            if readable and not self.connection.recv(1, 0x40 | 0x2):  # MSG_DONTWAIT | MSG_PEEK: EOF
                with self.state.lock:
                    self.state.slow["aborted"] += 1
                self.close_connection = True
                return
        self.wfile.write(b"done")
        with self.state.lock:
            self.state.slow["completed"] += 1


class Origin:
    """The origin on a free loopback port, in a thread."""

    def __init__(self):
        self.state = State()
        handler = type("BoundHandler", (Handler,), {"state": self.state})
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
