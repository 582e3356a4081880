"""Small recording proxies for the upstream-proxy tests: an HTTP forward proxy (absolute-form
requests and CONNECT) and a SOCKS5 server. Each runs in a thread on a free loopback port, records
what the broker asked for, and relays only to loopback: any other destination is answered by the
proxy itself (HTTP) or refused (SOCKS), so no test traffic ever leaves the machine."""
import base64
import socket
import socketserver
import struct
import threading


def _loopback(host):
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")


def _relay(a, b):
    def pump(source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
    threads = [threading.Thread(target=pump, args=pair, daemon=True) for pair in ((a, b), (b, a))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class RecordingProxy:
    """A base for the proxies: `records` lists what each connection asked for."""

    handler = None

    def __init__(self):
        self.records = []
        owner = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                owner.serve(self.request)

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class HTTPProxy(RecordingProxy):
    """Forwards absolute-form requests to loopback origins; records CONNECT and answers 403.

    Each record: {"line": request line, "headers": {lower-case name: value}}. A request for a
    non-loopback host is answered by the proxy itself: 200, body `from-proxy <url>`."""

    def serve(self, client):
        stream = client.makefile("rb")
        line = stream.readline().decode("latin-1").rstrip("\r\n")
        headers = {}
        raw = []
        while True:
            header = stream.readline().decode("latin-1")
            if header in ("\r\n", "\n", ""):
                break
            raw.append(header)
            name, _, value = header.partition(":")
            headers[name.strip().lower()] = value.strip()
        self.records.append({"line": line, "headers": headers})
        method, target, _ = line.split(" ", 2)
        if method == "CONNECT":
            client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        body = stream.read(int(headers.get("content-length", "0") or 0))
        assert target.startswith("http://"), target
        authority, _, path = target[len("http://"):].partition("/")
        host, _, port = authority.rpartition(":") if authority.count(":") == 1 else (authority, "", "80")
        if not _loopback(host):
            text = f"from-proxy {target}".encode()
            client.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
                           b"Connection: close\r\n\r\n%s" % (len(text), text))
            return
        upstream = socket.create_connection((host, int(port)), timeout=10)
        kept = [h for h in raw if h.split(":", 1)[0].strip().lower()
                not in ("proxy-authorization", "connection", "proxy-connection", "keep-alive")]
        upstream.sendall(f"{method} /{path} HTTP/1.1\r\n".encode() + "".join(kept).encode("latin-1")
                         + b"Connection: close\r\n\r\n" + body)
        while True:
            data = upstream.recv(65536)
            if not data:
                break
            client.sendall(data)
        upstream.close()

    def authorization(self, index=-1):
        value = self.records[index]["headers"].get("proxy-authorization")
        if not value:
            return None
        scheme, _, token = value.partition(" ")
        assert scheme == "Basic"
        return base64.b64decode(token).decode()


class SOCKS5Proxy(RecordingProxy):
    """SOCKS5 without authentication, CONNECT only, relaying to loopback targets.

    Each record: {"type": "ipv4" | "domain" | "ipv6", "host": ..., "port": ...}."""

    def serve(self, client):
        stream = client.makefile("rb")
        version, count = stream.read(2)
        stream.read(count)
        client.sendall(b"\x05\x00")
        version, command, _, kind = stream.read(4)
        if kind == 1:
            host, record_type = socket.inet_ntoa(stream.read(4)), "ipv4"
        elif kind == 3:
            host, record_type = stream.read(stream.read(1)[0]).decode(), "domain"
        else:
            host, record_type = socket.inet_ntop(socket.AF_INET6, stream.read(16)), "ipv6"
        port = struct.unpack("!H", stream.read(2))[0]
        self.records.append({"type": record_type, "host": host, "port": port})
        if command != 1 or not _loopback(host):
            client.sendall(b"\x05\x02\x00\x01\x00\x00\x00\x00\x00\x00")  # not allowed by ruleset
            return
        upstream = socket.create_connection((host, port), timeout=10)
        client.sendall(b"\x05\x00\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack("!H", port))
        _relay(client, upstream)
