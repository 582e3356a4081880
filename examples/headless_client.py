#!/usr/bin/env python3
"""A headless Bridge Broker client in plain Python: no packages, only docs/PROTOCOL.md.

    python3 examples/headless_client.py echo '{"hello": 1}'
    python3 examples/headless_client.py fetch '{"url": "http://127.0.0.1:8788/json"}'
    python3 examples/headless_client.py --url ws://127.0.0.1:8787/bridge --token T greet '{"name": "Ada"}'

It prints the hello, every event and binary chunk of the post, then the reply, one JSON line each,
and exits 1 when the reply is an error.
"""
import argparse
import base64
import json
import os
import socket
import struct
import sys
import urllib.parse


class BridgeConnection:
    """One WebSocket connection speaking bridge.v1 (RFC 6455 framing written out by hand)."""

    def __init__(self, url, token=None, origin=None, timeout=30):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "ws":
            raise ValueError(f"{url} is not a ws:// URL")
        self.sock = socket.create_connection((parts.hostname, parts.port or 80), timeout=timeout)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [f"GET {path} HTTP/1.1", f"Host: {parts.hostname}:{parts.port or 80}", "Upgrade: websocket",
                 "Connection: Upgrade", f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13",
                 "Sec-WebSocket-Protocol: bridge.v1"]
        if token:
            lines.append(f"Authorization: Bearer {token}")
        if origin:
            lines.append(f"Origin: {origin}")
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise ConnectionError("the broker refused the handshake (origin or token?)")
            head += chunk
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise ConnectionError(head.decode(errors="replace").split("\r\n")[0])
        self.next_id = 0

    def _read_exact(self, count):
        data = b""
        while len(data) < count:
            chunk = self.sock.recv(count - len(data))
            if not chunk:
                raise ConnectionError("connection closed")
            data += chunk
        return data

    def send_frame(self, opcode, payload):
        header = bytes([0x80 | opcode])
        length = len(payload)
        if length < 126:
            header += bytes([0x80 | length])
        elif length < 65536:
            header += bytes([0x80 | 126]) + struct.pack("!H", length)
        else:
            header += bytes([0x80 | 127]) + struct.pack("!Q", length)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def send_json(self, value):
        self.send_frame(0x1, json.dumps(value).encode())

    def receive(self):
        """The next whole message: ("text", dict) or ("binary", bytes) or ("close", code)."""
        message, kind = b"", None
        while True:
            first, second = self._read_exact(2)
            opcode, length = first & 0x0F, second & 0x7F
            if length == 126:
                length = struct.unpack("!H", self._read_exact(2))[0]
            elif length == 127:
                length = struct.unpack("!Q", self._read_exact(8))[0]
            payload = self._read_exact(length)
            if opcode == 0x8:
                return "close", struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
            if opcode == 0x9:
                self.send_frame(0xA, payload)
                continue
            if opcode in (0x1, 0x2):
                kind = "text" if opcode == 0x1 else "binary"
            message += payload
            if first & 0x80:
                return (kind, json.loads(message)) if kind == "text" else (kind, message)

    def post(self, name, body, on_frame=print):
        """Posts and returns the reply frame; events and binary chunks go to on_frame first."""
        self.next_id += 1
        post_id = self.next_id
        self.send_json({"type": "post", "name": name, "id": post_id, "body": body})
        while True:
            kind, value = self.receive()
            if kind == "close":
                raise ConnectionError(f"the broker closed the connection with {value}")
            if kind == "binary":
                flags, frame_id = value[1], struct.unpack("!Q", value[2:10])[0]
                if frame_id == post_id:
                    on_frame({"binary": len(value) - 10, "end": bool(flags & 1)})
                continue
            if value.get("type") == "reply" and value.get("id") == post_id:
                return value
            on_frame(value)


def main():
    parser = argparse.ArgumentParser(description="Post to a Bridge Broker handler and print what comes back.")
    parser.add_argument("--url", default="ws://127.0.0.1:8787/bridge")
    parser.add_argument("--token")
    parser.add_argument("name", help="handler name, e.g. echo, fetch, greet")
    parser.add_argument("body", nargs="?", default="null", help="JSON body")
    args = parser.parse_args()
    connection = BridgeConnection(args.url, token=args.token)
    kind, hello = connection.receive()
    print(json.dumps(hello))
    reply = connection.post(args.name, json.loads(args.body), on_frame=lambda frame: print(json.dumps(frame)))
    print(json.dumps(reply))
    sys.exit(0 if reply.get("ok") else 1)


if __name__ == "__main__":
    main()
