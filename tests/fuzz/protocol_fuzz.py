#!/usr/bin/env python3
"""A seeded, bounded protocol fuzzer against a running broker (docs/RELIABILITY.md).

    python3 tests/fuzz/protocol_fuzz.py --seed 1 --seconds 600      # the long run
    BRIDGE_FUZZ_BROKER=.build-asan/debug/bridge-broker python3 tests/fuzz/protocol_fuzz.py

It starts `bridge-broker serve` (the AddressSanitizer build in .build-asan when there is one,
else the debug build; BRIDGE_FUZZ_BROKER names another), then, for the time given, opens
connections and on each does random things: valid envelopes mutated (bytes flipped, cut,
spliced, fields of the wrong type), binary frames with mutated headers for posts that stream a
body and for none, cancels and credits of ids in flight and not, fetches it then does not read
(slow reads), and disconnects at any point, also in the middle of a WebSocket frame. Several
connections are open at once. After the run it checks that the broker still answers `echo`,
that its resident memory came back near what it was after warming up, and that its output
holds no sanitizer report or Swift runtime error. The same seed gives the same actions.
"""
import argparse
import json
import os
import pathlib
import random
import re
import socket
import struct
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from support import scratch_dir, stop_process  # noqa: E402
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "tests"))
from headless_client import BridgeConnection  # noqa: E402
from support import free_port  # noqa: E402

REPORTS = re.compile(r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|runtime error:|Fatal error:|double free|corruption")


def default_binary():
    if os.environ.get("BRIDGE_FUZZ_BROKER"):
        return pathlib.Path(os.environ["BRIDGE_FUZZ_BROKER"])
    asan = ROOT / ".build-asan" / "debug" / "bridge-broker"
    return asan if asan.exists() else ROOT / ".build" / "debug" / "bridge-broker"


class FuzzedBroker:
    """`bridge-broker serve` with its output in a file (a pipe nobody reads could fill up)."""

    def __init__(self, binary, cache_dir=None):
        self.origin_port = free_port()
        self.origin = f"http://127.0.0.1:{self.origin_port}"
        self.log_path = pathlib.Path(tempfile.mkstemp(prefix="bridge-fuzz-", suffix=".log")[1])
        self.log = open(self.log_path, "w")
        env = dict(os.environ)
        # A small quarantine, so that freed memory shows in RSS as it would without ASan; and
        # LeakSanitizer at the broker's exit (SIGTERM, at the end of the run) with the explained
        # suppressions of scripts/lsan.supp: what a fuzzed connection left behind is reported.
        env["ASAN_OPTIONS"] = "quarantine_size_mb=8:detect_leaks=1:" + env.get("ASAN_OPTIONS", "")
        env.setdefault("LSAN_OPTIONS", f"suppressions={ROOT / 'scripts' / 'lsan.supp'}:print_suppressions=0")
        env["SWIFT_BACKTRACE"] = "enable=no"
        command = [str(binary), "serve", "--port", "0", "--demo-origin", str(self.origin_port),
                   "--cache-dir", str(cache_dir or scratch_dir("bridge-fuzz-cache-")), "--web-root", str(ROOT),
                   "--allow-url", "http://127.0.0.1:*", "--max-message-bytes", "65536"]
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 120
        while time.time() < deadline:
            match = re.search(r"bridge-broker.*listening on http://127\.0\.0\.1:(\d+)", self.output())
            if match:
                self.port = int(match.group(1))
                break
            if self.process.poll() is not None:
                raise RuntimeError("the broker exited:\n" + self.output())
            time.sleep(0.1)
        else:
            raise RuntimeError("the broker did not start:\n" + self.output())
        self.url = f"ws://127.0.0.1:{self.port}/bridge"

    def output(self):
        if not self.log.closed:
            self.log.flush()
        return self.log_path.read_text(errors="replace")

    def rss_kib(self):
        for line in pathlib.Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def stop(self):
        stop_process(self.process, timeout=20)
        self.log.close()


def echo_works(broker, timeout=20):
    connection = BridgeConnection(broker.url, timeout=timeout)
    try:
        kind, hello = connection.receive()
        assert kind == "text" and hello["type"] == "hello", hello
        reply = connection.post("echo", {"still": "here", "n": [1, 2.5, "é"]}, on_frame=lambda _: None)
        return reply.get("body") == {"still": "here", "n": [1, 2.5, "é"]}
    finally:
        connection.sock.close()


class Session:
    """One fuzzed connection: a BridgeConnection driven by the shared random generator."""

    def __init__(self, fuzzer):
        self.fuzzer = fuzzer
        self.rng = fuzzer.rng
        self.connection = BridgeConnection(fuzzer.broker.url, timeout=5)
        self.connection.sock.settimeout(0.05)
        self.ids = []  # ids this session used, for cancels, credits and binary frames
        self.streaming = []  # ids of posts whose body streams in binary frames

    def close(self):
        try:
            self.connection.sock.close()
        except OSError:
            pass

    def drain(self, budget=64 * 1024):
        """Reads what is there without blocking for long; False when the broker closed."""
        try:
            data = self.connection.sock.recv(budget)
            return bool(data)
        except (socket.timeout, BlockingIOError):
            return True
        except OSError:
            return False

    def new_id(self):
        choice = self.rng.random()
        if choice < 0.7:
            post_id = self.rng.randrange(1, 1000)
        elif choice < 0.9:
            post_id = self.rng.choice([0, 2**53 - 1, 2**53, 2**63, -1])
        else:
            post_id = self.rng.choice([None, "1", 1.5, [], {}])
        if isinstance(post_id, int) and 0 <= post_id < 2**53:
            self.ids.append(post_id)
        return post_id

    def valid_envelope(self):
        origin = self.fuzzer.broker.origin
        post_id = self.new_id()
        kind = self.rng.randrange(8)
        if kind == 0:
            return {"type": "post", "name": "echo", "id": post_id, "body": self.fuzzer.random_json(3)}
        if kind == 1:
            path = self.rng.choice(["/bytes/100", "/bytes/70000", "/bytes/3000000", "/slow", "/hang", "/json",
                                    "/redirect/3", "/status/500", "/reset", "/cached", "/gzip", "/page"])
            body = {"url": origin + path, "timeout": self.rng.choice([50, 500, 3000])}
            if self.rng.random() < 0.3:
                body["cache"] = self.rng.choice(["no-store", "reload", "force-cache", "only-if-cached", "bogus"])
            if self.rng.random() < 0.3:
                body["responseBody"] = self.rng.choice(["binary", "base64", "text", "none", 7])
            if self.rng.random() < 0.3:
                body["window"] = self.rng.choice([0, 1, 1024, 65536, -1])
            return {"type": "post", "name": "fetch", "id": post_id, "body": body}
        if kind == 2:
            length = self.rng.choice([None, 0, 10, 5000])
            if isinstance(post_id, int) and post_id in self.ids:
                self.streaming.append(post_id)
            return {"type": "post", "name": "fetch", "id": post_id,
                    "body": {"url": origin + "/echo", "method": "POST", "body": {"binary": True, "length": length}}}
        if kind == 3:
            return {"type": "cancel", "id": self.rng.choice(self.ids) if self.ids and self.rng.random() < 0.8 else post_id}
        if kind == 4:
            return {"type": "credit", "id": self.rng.choice(self.ids) if self.ids else post_id,
                    "bytes": self.rng.choice([0, 1, 4096, 2**53 - 1, 2**53, -5, "x"])}
        if kind == 5:
            return {"type": "post", "name": "preload", "id": post_id,
                    "body": {"urls": [origin + "/bytes/10"], "page": origin + "/page", "manifest": origin + "/manifest",
                             "concurrency": self.rng.choice([1, 6, 65])}}
        if kind == 6:
            return {"type": "post", "name": self.rng.choice(["cache.status", "cache.clear", "progress.subscribe", "nope", ""]),
                    "id": post_id, "body": self.fuzzer.random_json(2)}
        return {"type": self.rng.choice(["post", "cancel", "credit", "hello", 3, None]), "id": post_id}

    def mutate(self, data):
        data = bytearray(data)
        for _ in range(self.rng.randrange(1, 4)):
            op = self.rng.randrange(5)
            if op == 0 and data:
                data[self.rng.randrange(len(data))] = self.rng.randrange(256)
            elif op == 1 and data:
                del data[self.rng.randrange(len(data)):]
            elif op == 2:
                position = self.rng.randrange(len(data) + 1)
                data[position:position] = self.rng.choice([b"{", b"[" * 300, b"\"\\ud800\"", b"\xff\xfe", b"1e999", b",", b"\x00"])
            elif op == 3 and data:
                start = self.rng.randrange(len(data))
                data[start:start] = data[start:start + self.rng.randrange(1, 40)]
            else:
                data += bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(1, 16)))
        return bytes(data)

    def binary_frame(self):
        if self.streaming and self.rng.random() < 0.7:
            post_id = self.rng.choice(self.streaming)
        else:
            post_id = self.rng.choice(self.ids) if self.ids else self.rng.randrange(2**64)
        kind = 1 if self.rng.random() < 0.85 else self.rng.randrange(256)
        flags = self.rng.choice([0, 0, 1, 2, 255])
        payload = bytes(self.rng.randrange(256) for _ in range(self.rng.choice([0, 1, 10, 1000])))
        header = bytes([kind, flags]) + struct.pack("!Q", post_id % 2**64)
        frame = header + payload
        if self.rng.random() < 0.2:
            frame = frame[: self.rng.randrange(len(frame) + 1)]
        return frame

    def step(self):
        """One action; False when the connection is over."""
        action = self.rng.random()
        try:
            if action < 0.35:
                data = json.dumps(self.valid_envelope()).encode()
                if self.rng.random() < 0.4:
                    data = self.mutate(data)
                self.connection.send_frame(0x1, data)
            elif action < 0.55:
                self.connection.send_frame(0x2, self.binary_frame())
            elif action < 0.6:
                # A frame cut off in the middle, then the socket closed.
                data = json.dumps(self.valid_envelope()).encode()
                header = bytes([0x81, 0x80 | min(len(data), 125)]) + os.urandom(4)
                self.connection.sock.sendall(header + data[: self.rng.randrange(len(data))])
                return False
            elif action < 0.63:
                # A WebSocket frame the RFC forbids: reserved bits, an unknown opcode, a control frame
                # over 125 bytes, or a continuation without a start.
                first = self.rng.choice([0xF1, 0x83, 0x89, 0x00, 0x8B])
                payload = os.urandom(self.rng.choice([0, 10, 200]))
                self.connection.sock.sendall(bytes([first, 0x80 | min(len(payload), 125)]) + os.urandom(4) + payload[:125])
            elif action < 0.8:
                # A slow reader: nothing read for a while.
                time.sleep(self.rng.choice([0, 0.01, 0.1]))
            elif action < 0.97:
                return self.drain()
            else:
                return False
        except (OSError, ConnectionError):
            return False
        return True


class Fuzzer:
    def __init__(self, broker, seed):
        self.broker = broker
        self.rng = random.Random(seed)
        self.connections = 0
        self.actions = 0

    def random_json(self, depth):
        choice = self.rng.randrange(7 if depth > 0 else 5)
        if choice == 0:
            return None
        if choice == 1:
            return self.rng.random() < 0.5
        if choice == 2:
            return self.rng.choice([0, -1, 2**53, 1.5, -1e300, 10**30])
        if choice == 3:
            return "".join(self.rng.choice("aé\u2028\"\\\n\x01😀") for _ in range(self.rng.randrange(8)))
        if choice == 4:
            return "x" * self.rng.choice([0, 100, 70000])
        if choice == 5:
            return [self.random_json(depth - 1) for _ in range(self.rng.randrange(4))]
        return {str(self.rng.randrange(5)): self.random_json(depth - 1) for _ in range(self.rng.randrange(4))}

    def run(self, seconds, max_open=8):
        deadline = time.time() + seconds
        sessions = []
        while time.time() < deadline:
            if len(sessions) < max_open and (not sessions or self.rng.random() < 0.3):
                try:
                    sessions.append(Session(self))
                    self.connections += 1
                except (OSError, ConnectionError) as error:
                    raise AssertionError(f"the broker refused a connection: {error}")
                continue
            session = self.rng.choice(sessions)
            self.actions += 1
            if not session.step():
                session.close()
                sessions.remove(session)
        for session in sessions:
            session.close()


def run(seed, seconds, binary=None, verbose=True):
    """Fuzzes a fresh broker; returns a dict of figures; raises AssertionError on a finding."""
    broker = FuzzedBroker(binary or default_binary())
    try:
        # Warm up: a few of every kind of action, so that caches and pools exist before the baseline.
        assert echo_works(broker), "echo failed before fuzzing"
        Fuzzer(broker, seed + 1_000_000).run(min(5, seconds))
        time.sleep(2)
        baseline = broker.rss_kib()
        fuzzer = Fuzzer(broker, seed)
        fuzzer.run(seconds)
        assert broker.process.poll() is None, "the broker exited:\n" + broker.output()[-4000:]
        assert echo_works(broker), "echo failed after fuzzing"
        # Memory comes back once connections are gone and timeouts have fired.
        after = broker.rss_kib()
        limit = baseline * 1.25 + 32 * 1024
        settle = time.time() + 30
        while after > limit and time.time() < settle:
            time.sleep(1)
            after = broker.rss_kib()
        figures = {"seed": seed, "seconds": seconds, "connections": fuzzer.connections, "actions": fuzzer.actions,
                   "rss_baseline_mib": round(baseline / 1024, 1), "rss_after_mib": round(after / 1024, 1),
                   "binary": str(broker.process.args[0])}
        if verbose:
            print("protocol fuzz:", json.dumps(figures))
        assert after <= limit, f"RSS {after} KiB after the run, baseline {baseline} KiB"
        reports = [line for line in broker.output().splitlines() if REPORTS.search(line)]
        assert not reports, "the broker printed:\n" + "\n".join(reports[:20]) + f"\n(whole log: {broker.log_path})"
        # LeakSanitizer reports when the process exits: stop it, then read the log again.
        broker.stop()
        reports = [line for line in broker.output().splitlines() if REPORTS.search(line)]
        assert not reports, "the broker printed at its exit:\n" + "\n".join(reports[:20]) + f"\n(whole log: {broker.log_path})"
        return figures
    finally:
        broker.stop()
        if any(REPORTS.search(line) for line in broker.output().splitlines()):
            print(f"the broker's log {broker.log_path} holds sanitizer or runtime reports", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--binary", type=pathlib.Path)
    args = parser.parse_args()
    run(args.seed, args.seconds, args.binary)


if __name__ == "__main__":
    main()
