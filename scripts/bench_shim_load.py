#!/usr/bin/env python3
"""The shim's own cost in headless Chromium: bytes on the wire, and the time from the request for
the script to the end of its evaluation, for several builds side by side in one run.

    python3 scripts/bench_shim_load.py                       # the built bridge.js against the joined, unminified build
    python3 scripts/bench_shim_load.py --rev 053661d         # ... and against bridge.js as it was at a git revision
    python3 scripts/bench_shim_load.py old.js new.js --runs 31

Each round loads every file once, in a fresh page of the same browser, from a local HTTP server
with `Cache-Control: no-store` and a new query string each time (no HTTP cache, no V8 code cache:
a first visit). A page is `<script src=shim>` followed by an inline script that sets a mark, so the
time runs from the resource's startTime to the mark: the download, the compile, the evaluation and
the microtasks the shim queues (its deferred connect). The first round is a warm-up and not counted.
The shim connects to a port where nothing listens (its connection fails in the background).

--trace records a Chrome trace of every load (V8's categories only: Blink's timeline category would
make it capture whole stacks where it otherwise captures one frame) and adds figures that do not
depend on the machine's load: the renderer main thread's CPU time running the shim (V8's `v8.run`
of the file: compile of what runs, and the microtask checkpoint at its end, where the shim opens
its WebSocket, included), the microtasks alone, the part of the run spent re-parsing functions for source positions
(`V8.CollectSourcePositions`), and the background thread's CPU time parsing the streamed file.
"""
import argparse
import gzip
import json
import http.server
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading

from benchkit import ROOT, DevTools, browser  # the Chromium of tests/browser
from support import free_port

MEASURE = """
const entry = performance.getEntriesByType("resource").find((item) => item.name.includes("/shim/"));
const mark = performance.getEntriesByName("shim-evaluated")[0];
if (!entry || !mark || !window.BridgeBroker) return null;
return {total: mark.startTime - entry.startTime, download: entry.responseEnd - entry.startTime,
        evaluate: mark.startTime - entry.responseEnd};
"""


def serve(files, dead_port, zipped=()):
    """Serves the pages and the files (those labelled in `zipped` hold gzip bytes and go with
    Content-Encoding: gzip)."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            path, _, query = self.path.partition("?")
            encoding = None
            if path.startswith("/page/"):
                label = path[len("/page/"):]
                body = (f'<!doctype html><html><head><meta charset="utf-8">'
                        f'<script src="/shim/{label}.js?{query}" data-broker-url="ws://127.0.0.1:{dead_port}/bridge"></script>'
                        '<script>performance.mark("shim-evaluated")</script></head><body></body></html>').encode()
                kind = "text/html; charset=utf-8"
            elif path.startswith("/shim/") and path[len("/shim/"):-3] in files:
                body = files[path[len("/shim/"):-3]]
                kind = "text/javascript; charset=utf-8"
                encoding = "gzip" if path[len("/shim/"):-3] in zipped else None
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            if encoding:
                self.send_header("Content-Encoding", encoding)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


TRACE_CATEGORIES = ("v8", "v8.execute", "disabled-by-default-v8.compile", "toplevel")


def cpu_figures(events, url_part):
    """Thread CPU ms of the shim's evaluation on the renderer's main thread, from a trace."""
    run = max((e for e in events if e.get("name") == "v8.run" and url_part in str(e.get("args", {}).get("fileName", ""))),
              key=lambda e: e.get("dur", 0), default=None)
    if run is None:
        return None
    main_thread = [e for e in events if e.get("tid") == run["tid"] and e.get("ph") == "X"]
    end = run["ts"] + run["dur"]
    # The checkpoint after the script runs inside its v8.run event.
    microtasks = [e for e in main_thread if e["name"] == "RunMicrotasks" and run["ts"] <= e["ts"] <= end]
    within = [(run["ts"], end)]
    positions = sum(e.get("tdur", 0) for e in main_thread if e["name"] == "V8.CollectSourcePositions"
                    and any(a <= e["ts"] <= b for a, b in within))
    background = sum(e.get("tdur", 0) for e in events if e.get("name") == "v8.parseOnBackground"
                     and url_part in json.dumps(e.get("args", {})))
    return {"cpu run": run.get("tdur", 0) / 1000, "cpu microtask": sum(e.get("tdur", 0) for e in microtasks) / 1000,
            "cpu positions": positions / 1000, "cpu background parse": background / 1000}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help="shim files to compare (default: the built bridge.js and the joined, unminified build)")
    parser.add_argument("--rev", action="append", default=[], help="also bridge-js/bridge.js at this git revision")
    parser.add_argument("--runs", type=int, default=21, help="counted rounds (default 21)")
    parser.add_argument("--gzip", action="store_true", help="also every file gzipped (Content-Encoding: gzip), as the broker serves bridge.js.gz")
    parser.add_argument("--trace", action="store_true", help="also the CPU time figures from a Chrome trace of every load")
    args = parser.parse_args()

    files = {}
    if not args.files:
        with tempfile.TemporaryDirectory() as scratch:
            joined = pathlib.Path(scratch) / "joined.js"
            subprocess.run([sys.executable, str(ROOT / "bridge-js/tools/build.py"), "--out-dir", scratch, "--joined", str(joined)],
                           check=True, capture_output=True)
            files["minified"] = (pathlib.Path(scratch) / "bridge.js").read_bytes()
            files["joined"] = joined.read_bytes()
    for path in args.files:
        files[pathlib.Path(path).stem] = pathlib.Path(path).read_bytes()
    for rev in args.rev:
        files[f"at-{rev}"] = subprocess.run(["git", "show", f"{rev}:bridge-js/bridge.js"], cwd=ROOT, check=True, capture_output=True).stdout

    zipped = set()
    if args.gzip:
        for label in list(files):
            files[f"{label}+gzip"] = gzip.compress(files[label], 9, mtime=0)
            zipped.add(f"{label}+gzip")
    server = serve(files, free_port(), zipped)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    driver = browser()
    devtools = DevTools(driver) if args.trace else None
    samples = {label: [] for label in files}
    try:
        for round_index in range(args.runs + 1):
            for label in files:
                if devtools:
                    devtools.start_tracing(TRACE_CATEGORIES)
                driver.get(f"{base}/page/{label}?r={round_index}-{os.getpid()}")
                figures = driver.execute_script(MEASURE)
                if figures is None:
                    raise SystemExit(f"{label}: the shim did not load (no BridgeBroker or no timing entry)")
                if devtools:
                    cpu = cpu_figures(devtools.stop_tracing(), f"/shim/{label}.js")
                    if cpu is None:
                        raise SystemExit(f"{label}: no v8.run of the shim in the trace")
                    figures.update(cpu)
                if round_index:
                    samples[label].append(figures)
    finally:
        if devtools:
            devtools.close()
        driver.quit()
        server.shutdown()

    print(f"{args.runs} rounds, each file once per round in a fresh page (median [min-max], ms)\n")
    columns = ["total", "download", "evaluate"] + (["cpu run", "cpu microtask", "cpu positions", "cpu background parse"] if args.trace else [])
    titles = {"total": "request to end of evaluation", "download": "download", "evaluate": "compile + evaluate",
              "cpu run": "main-thread CPU, run", "cpu microtask": "of which the microtasks after it",
              "cpu positions": "of which source positions", "cpu background parse": "background parse CPU"}
    print("| file | bytes | gzip -9 | " + " | ".join(titles[c] for c in columns) + " |")
    print("|---|---|---|" + "---|" * len(columns))
    for label, data in files.items():
        def figure(key):
            values = [sample[key] for sample in samples[label]]
            return f"{statistics.median(values):.1f} [{min(values):.1f}-{max(values):.1f}]"
        size = len(gzip.decompress(data)) if label in zipped else len(data)
        wire = len(data) if label in zipped else len(gzip.compress(data, 9, mtime=0))
        print(f"| {label} | {size:,} | {wire:,} | " + " | ".join(figure(c) for c in columns) + " |")

if __name__ == "__main__":
    main()
