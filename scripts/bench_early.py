#!/usr/bin/env python3
"""The broker's answer to a preloaded page's early request, alternating between broker binaries.

    python3 scripts/bench_early.py [--requests 60] [--pause-ms 50] [--pairs 3] BINARY [BINARY ...]

For each binary in turn (--pairs rounds, alternating), starts `bridge-broker serve` with the
page-load benchmark's origin (scripts/bench_pageload.py: 30 resources of 20 KB), runs
`bridge-broker preload --page` of its links page for the shim's page, then sends `--requests`
times the early request a shim with early posts sends at its start for that page: one
`page.preloaded` line in a `POST /bridge/early` (docs/PROTOCOL.md), from a new connection each,
with `--pause-ms` between them, as a page's request finds an idle broker (0: back to back). Prints
per run the median round trip (from the request to the last byte of the ~615 KB answer) and the
broker process's CPU time per request (user + system, from /proc; 10 ms ticks over the run).
"""
import argparse
import http.client
import json
import os
import pathlib
import statistics
import sys
import time

sys.path[:0] = [str(pathlib.Path(__file__).resolve().parent), str(pathlib.Path(__file__).resolve().parent.parent / "tests")]
import bench_pageload  # noqa: E402
import support  # noqa: E402


def cpu_ms(pid):
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def run(binary, args):
    # The broker and `preload` of this binary (both modules read it when they start a process).
    support.BINARY = bench_pageload.BINARY = pathlib.Path(binary)
    site = bench_pageload.Site(argparse.Namespace(resources=30, size=20000, latency=50, connections=None))
    try:
        page = site.url("shim", tag=False)
        site.preload(for_page=page)
        # What the shim's push.js sends for fetch(url) with no init on this page (fetch.test.mjs checks that template).
        template = {"method": "GET", "headers": [], "redirect": "follow", "responseBody": "binary", "headerEncoding": "latin1",
                    "progress": False, "whole": 262144, "timeout": 86400000, "credentials": "same-origin", "mode": "cors",
                    "referrer": page, "referrerPolicy": "strict-origin-when-cross-origin"}
        line = json.dumps({"type": "post", "name": "page.preloaded", "id": 1 << 30,
                           "body": {"page": page, "firstId": (1 << 30) + 1, "fetch": template}})
        port = int(site.broker.http.rsplit(":", 1)[1])
        pid = site.broker.process.pid
        times = []
        before = cpu_ms(pid)
        for _ in range(args.requests):
            connection = http.client.HTTPConnection("127.0.0.1", port)
            started = time.perf_counter()
            connection.request("POST", "/bridge/early", body=line.encode(), headers={"Origin": site.broker.origin})
            response = connection.getresponse()
            answer = response.read()
            times.append((time.perf_counter() - started) * 1000)
            connection.close()
            if response.status != 200 or len(answer) < 30 * 20000:
                raise RuntimeError(f"the early request got {response.status} with {len(answer)} bytes: {answer[:300]!r}")
            time.sleep(args.pause_ms / 1000)
        cpu = (cpu_ms(pid) - before) / args.requests
    finally:
        site.stop()
    return statistics.median(times), min(times), max(times), cpu


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binaries", nargs="+", metavar="BINARY", help="bridge-broker binaries (release builds)")
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--pause-ms", type=float, default=50)
    parser.add_argument("--pairs", type=int, default=3, help="rounds over the binaries, alternating")
    args = parser.parse_args()
    print(f"| binary | round trip median [min-max] (ms) | broker CPU per request (ms) |\n|---|---|---|")
    for _ in range(args.pairs):
        for binary in args.binaries:
            median, low, high, cpu = run(binary, args)
            print(f"| {binary} | {median:.2f} [{low:.2f}-{high:.2f}] | {cpu:.2f} |", flush=True)


if __name__ == "__main__":
    main()
