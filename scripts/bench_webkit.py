#!/usr/bin/env python3
"""The seed study's table on the seed's engine: a page's first load in WebKit (WebKitGTK), four ways.

    xvfb-run -a python3 scripts/bench_webkit.py [--rounds 5] [--resources 30] [--size 20000] [--latency 50]

The page is the page-load benchmark's (the demo origin's /pageload, 30 resources of 20 KB with
max-age=600 behind an origin that waits 50 ms before every response, fetch()ed by one script at
the end of the body). Every load is one `bridge-broker open --exit-after-load --json` process: a
fresh web view, a fresh WebKit network session (its data and HTTP cache in a new directory) and
a fresh broker cache. The ways:

  a  WebKit alone, cold
  b  the seed's winning method: a hidden web view sharing the window's network session first
     loads the page of <link rel="preload"> tags (way=links), which fills WebKit's own HTTP cache;
     then the page, from that cache (--warm-with)
  c  the bridge over the WebSocket: the page includes the shim from the broker (way=shim) after
     `preload` of the links page with the document included; WebKit loads the stored document
     from the broker, and the shim's fetch() calls go over the WebSocket to the same broker
  d  this host: the shim injected at document start, envelopes through WebKit's script message
     handlers into the in-process broker, after `preload` with the document included

Time is from the moment the host starts the navigation (for c and d: before it asks the broker
for the stored document) to the moment the page's script has read the last body, in ms; "origin
requests" counts the requests that reached the origin during the load (document included).
Each round runs every way once, in an order that rotates; the first round is a warm-up.
"CPU" is the CPU time of WebKit's web process and of the host process (broker included) over the
whole `open` run (WebKit's start, the empty first document and the preparation included), which
a loaded machine does not stretch as it stretches wall time.
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile

import benchkit
from support import BINARY, ROOT, Broker, free_port

WAYS = {
    "a": "WebKit alone, cold",
    "b": "WebKit after a hidden view of `<link rel=preload>` (the seed's way)",
    "c": "the shim over the WebSocket, after `preload` with the page",
    "d": "this host: injected shim, message handlers, after `preload` with the page",
}
WAIT = "window.pageLoad && Object.assign({endEpochMs: performance.timeOrigin + window.pageLoad.loadMs}, window.pageLoad)"


def page_traffic(origin):
    """Requests the origin answered so far, its own /count and favicons left out."""
    return sum(count for path, count in benchkit.origin_counts(origin).items() if path not in benchkit.NOT_PAGE_TRAFFIC)


def load(args, origin, way):
    """One load of the page `way`'s way; returns (ms, origin requests during the load, bridged, report).

    The origin counts every request it answers; what the way's preparation asked for (b: the
    links page and its resources; c and d: the links page, the resources and the document) is
    taken off, so what remains reached the origin during the load itself."""
    before = page_traffic(origin)
    cache = tempfile.mkdtemp(prefix="bench-webkit-broker-")
    webkit = tempfile.mkdtemp(prefix="bench-webkit-data-")
    port = free_port()
    broker = f"http://127.0.0.1:{port}"
    query = f"n={args.resources}&size={args.size}&max-age=600&document-max-age=600&broker={broker}"
    page = f"{origin}/pageload?way={'shim' if way == 'c' else 'browser'}&{query}"
    links = f"{origin}/pageload?way=links&{query}"
    command = [str(BINARY), "open", page, "--exit-after-load", "--json", "--wait-for", WAIT, "--timeout", "60",
               "--cache-dir", cache, "--webkit-data-dir", webkit, "--web-root", str(ROOT), "--port", str(port),
               "--allow-url", "http://127.0.0.1:*", "--allow-origin", origin]
    if way in ("a", "b", "c"):
        command.append("--no-shim")
    if way == "b":
        command += ["--warm-with", links]
    if way in ("c", "d"):
        command += ["--preload-page", links, "--include-page"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=120)
    lines = [line for line in completed.stdout.splitlines() if line.startswith("{")]
    if completed.returncode != 0 or not lines:
        raise RuntimeError(f"way {way} failed ({completed.returncode}): {completed.stdout[-2000:]} {completed.stderr[-2000:]}")
    report = json.loads(lines[-1])
    result = report["result"]
    if "error" in result or result.get("resources") != args.resources:
        raise RuntimeError(f"way {way}: the page failed: {result}")
    ms = result["endEpochMs"] - report["navigationStartEpochMs"]
    counted = page_traffic(origin) - before
    preparation = {"a": 0, "b": args.resources + 1, "c": args.resources + 2, "d": args.resources + 2}[way]
    return ms, counted - preparation, report["bridged"], report


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="counted rounds (median of these)")
    parser.add_argument("--resources", type=int, default=30)
    parser.add_argument("--size", type=int, default=20000)
    parser.add_argument("--latency", type=int, default=50, help="ms the origin waits before each response")
    args = parser.parse_args()
    site = Broker("--demo-latency", str(args.latency))
    try:
        names = list(WAYS)
        figures = {name: [] for name in names}
        requests = {name: [] for name in names}
        bridged = {name: [] for name in names}
        web_cpu = {name: [] for name in names}
        host_cpu = {name: [] for name in names}
        for round_number in range(args.rounds + 1):
            order = names[round_number % len(names):] + names[:round_number % len(names)]
            for name in order:
                ms, origin_requests, count, report = load(args, site.origin, name)
                if round_number == 0:
                    continue
                figures[name].append(ms)
                requests[name].append(origin_requests)
                bridged[name].append(count)
                cpu = report.get("cpuMs", {})
                web_cpu[name].append(cpu.get("WebKitWebProces", 0))
                host_cpu[name].append(cpu.get("host", 0))
            print(f"round {round_number}{' (warm-up)' if round_number == 0 else ''} done", file=sys.stderr)
        seed = statistics.median(figures["b"])
        print(f"First load of a page with {args.resources} resources of {args.size} B behind a {args.latency} ms origin, "
              f"in WebKitGTK; median of {args.rounds} [min-max], ms from navigation start to the last body read.")
        print(benchkit.machine_load())
        print()
        print("| way | loaded (ms) | vs (b) | origin requests | bridged | CPU, web process (ms) | CPU, host (ms) |")
        print("|---|---|---|---|---|---|---|")
        for name in names:
            median = statistics.median(figures[name])
            print(f"| ({name}) {WAYS[name]} | {benchkit.spread(figures[name])} | {median / seed:.2f}x | "
                  f"{max(requests[name])} | {max(bridged[name])} | {statistics.median(web_cpu[name]):.0f} | "
                  f"{statistics.median(host_cpu[name]):.0f} |")
        target = statistics.median(figures["d"]) / seed
        ok = target <= 0.7 and max(requests["c"]) == 0 and max(requests["d"]) == 0
        print()
        print(f"target (d) <= 0.7x (b) and zero origin requests in (c) and (d): {'met' if ok else 'NOT met'} ({target:.2f}x)")
    finally:
        site.stop()


if __name__ == "__main__":
    main()
