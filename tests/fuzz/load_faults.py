#!/usr/bin/env python3
"""Load and fault figures for docs/RELIABILITY.md: connections held, memory under a client that
never reads, and restarts after kill -9 (issue #17).

    python3 tests/fuzz/load_faults.py                       # all three, the release build if there is one
    python3 tests/fuzz/load_faults.py --connections 2000 --binary .build/debug/bridge-broker

1. Connections held: opens N WebSocket connections (each reads its hello) and holds them; a new
   connection still gets `echo` answered; RSS before, with N open, and after they close.
2. A client that never reads: one connection asks for FETCHES x 3 MB (`/bytes/3000000` of the
   demo origin, binary bodies) and then reads nothing; the broker's RSS is sampled for SECONDS
   while a second connection's `echo` must keep being answered.
3. kill -9: the broker is killed while the protocol fuzzer's traffic runs (fetches filling its
   SQLite cache), then started again on the same cache directory; it must answer `echo`,
   `cache.stats` and a fetch through its cache. Repeated KILLS times.

Prints one JSON line per part; exits non-zero when a check fails.
"""
import argparse
import json
import os
import pathlib
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import protocol_fuzz  # noqa: E402
from protocol_fuzz import ROOT, BridgeConnection, FuzzedBroker, echo_works  # noqa: E402


def default_binary():
    for path in [ROOT / ".build" / "release" / "bridge-broker", ROOT / ".build" / "debug" / "bridge-broker"]:
        if path.exists():
            return path
    raise SystemExit("build the broker first (swift build -c release --product bridge-broker)")


def connections_held(binary, count):
    broker = FuzzedBroker(binary)
    try:
        assert echo_works(broker)
        time.sleep(1)
        baseline = broker.rss_kib()
        held = []
        started = time.time()
        for _ in range(count):
            connection = BridgeConnection(broker.url, timeout=60)
            kind, hello = connection.receive()
            assert kind == "text" and hello["type"] == "hello", hello
            held.append(connection)
        opened_seconds = time.time() - started
        time.sleep(1)
        with_open = broker.rss_kib()
        echo_ok = echo_works(broker)
        for connection in held:
            connection.sock.close()
        time.sleep(3)
        after = broker.rss_kib()
        alive = broker.process.poll() is None
        return {"part": "connections", "binary": str(binary), "held": len(held), "open_seconds": round(opened_seconds, 1),
                "rss_baseline_mib": round(baseline / 1024, 1), "rss_with_open_mib": round(with_open / 1024, 1),
                "kib_per_connection": round((with_open - baseline) / max(1, len(held)), 1),
                "rss_after_close_mib": round(after / 1024, 1), "echo_while_held": echo_ok, "alive": alive,
                "ok": echo_ok and alive and len(held) == count}
    finally:
        broker.stop()


def never_reading(binary, fetches, seconds):
    broker = FuzzedBroker(binary)
    try:
        assert echo_works(broker)
        time.sleep(1)
        baseline = broker.rss_kib()
        stalled = BridgeConnection(broker.url, timeout=10)
        stalled.receive()
        # The smallest receive buffer the kernel allows, so that the broker's writes stop early.
        stalled.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        for index in range(fetches):
            stalled.send_json({"type": "post", "name": "fetch", "id": index + 1,
                               "body": {"url": broker.origin + "/bytes/3000000", "responseBody": "binary", "cache": "no-store"}})
        rss, echoes = [], 0
        deadline = time.time() + seconds
        while time.time() < deadline:
            rss.append(broker.rss_kib())
            echoes += 1 if echo_works(broker, timeout=20) else 0
            time.sleep(0.5)
        samples, peak = len(rss), max(rss)
        # Bounded: the second half of the window adds (almost) nothing to the first half's peak.
        late_growth = max(rss[samples // 2:]) - max(rss[: samples // 2])
        requested = fetches * 3_000_000
        alive = broker.process.poll() is None
        stalled.sock.close()
        time.sleep(3)
        after = broker.rss_kib()
        return {"part": "never-reading", "binary": str(binary), "bytes_requested_mib": round(requested / 2**20, 1),
                "seconds": seconds, "rss_baseline_mib": round(baseline / 1024, 1), "rss_peak_mib": round(peak / 1024, 1),
                "growth_mib": round((peak - baseline) / 1024, 1), "second_half_growth_mib": round(late_growth / 1024, 1),
                "rss_after_close_mib": round(after / 1024, 1), "echoes_answered": f"{echoes}/{samples}", "alive": alive,
                "ok": alive and echoes == samples and late_growth < 4096 and (peak - baseline) * 1024 < requested / 2}
    finally:
        broker.stop()


def kill_restarts(binary, kills, seed):
    cache_dir = pathlib.Path(tempfile.mkdtemp(prefix="bridge-kill-cache-"))
    results = []
    try:
        for round_index in range(kills):
            broker = FuzzedBroker(binary, cache_dir)
            ok_start = echo_works(broker)
            fuzzer = protocol_fuzz.Fuzzer(broker, seed + round_index)
            worker = threading.Thread(target=lambda: _run_quietly(fuzzer, 4), daemon=True)
            worker.start()
            time.sleep(2 + round_index % 3)
            broker.process.send_signal(signal.SIGKILL)
            broker.process.wait()
            worker.join(timeout=30)
            broker.log.close()
            again = FuzzedBroker(binary, cache_dir)
            started = time.time()
            answered = echo_works(again)
            status = BridgeConnection(again.url, timeout=20)
            status.receive()
            stats = status.post("cache.stats", {}, on_frame=lambda _: None)
            fetched = status.post("fetch", {"url": again.origin + "/bytes/100", "responseBody": "base64"}, on_frame=lambda _: None)
            status.sock.close()
            results.append({"started": ok_start, "echo_after_restart": answered, "cache_stats": stats.get("ok") is True,
                            "fetch": fetched.get("ok") is True,
                            "restart_to_echo_s": round(time.time() - started, 2)})
            again.stop()
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
    good = sum(1 for r in results if r["started"] and r["echo_after_restart"] and r["cache_stats"] and r["fetch"])
    return {"part": "kill-9", "binary": str(binary), "kills": kills, "restarts_ok": good, "rounds": results, "ok": good == kills}


def _run_quietly(fuzzer, seconds):
    try:
        fuzzer.run(seconds)
    except (AssertionError, OSError, ConnectionError, ValueError):
        pass  # the broker was killed under it


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", type=pathlib.Path)
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--fetches", type=int, default=20)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", choices=["connections", "never-reading", "kill-9"], action="append")
    args = parser.parse_args()
    binary = args.binary or default_binary()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, args.connections * 2 + 256)), hard))
    parts = args.only or ["connections", "never-reading", "kill-9"]
    ok = True
    for part in parts:
        if part == "connections":
            figures = connections_held(binary, args.connections)
        elif part == "never-reading":
            figures = never_reading(binary, args.fetches, args.seconds)
        else:
            figures = kill_restarts(binary, args.kills, args.seed)
        print(json.dumps(figures), flush=True)
        ok = ok and figures["ok"]
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
