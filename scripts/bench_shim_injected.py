#!/usr/bin/env python3
"""What the shim costs a page when a host injects it at document start, in headless Chromium.

    python3 scripts/bench_shim_injected.py [--rounds N] [FILE]...

Each load runs in a fresh browser context (a new renderer: no V8 compilation cache, as on a first
visit) and injects three scripts with DevTools' `Page.addScriptToEvaluateOnNewDocument`, as the
WebKit host, a WKWebView user script or Android's `addDocumentStartJavaScript` would:
`performance.now()`, the shim, `performance.now()`. The difference is what the shim took on the
page's main thread before anything of the page ran: compiling it, running it and its deferred
connect (to a port where nothing listens). Rows: nothing injected, the repository's
bridge-js/bridge.js, the same text only parsed (wrapped in a function never called), and each FILE
given (an older build, an instrumented one). Prints median [min-max] in ms.
"""
import argparse
import pathlib
import statistics
import tempfile

import benchkit
from benchkit import BrowserContext, DevTools

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", help="other builds of bridge.js to compare")
    parser.add_argument("--rounds", type=int, default=15, help="counted rounds (default 15), after one warm-up round")
    args = parser.parse_args()
    shim = (ROOT / "bridge-js" / "bridge.js").read_text()
    variants = {"nothing": "", "bridge.js": shim, "bridge.js, parsed only": "function unused() {\n" + shim + "\n}"}
    for name in args.files:
        variants[name] = pathlib.Path(name).read_text()

    # A config prelude as a host's: the broker's address given, a port where nothing listens.
    prelude = 'window.BridgeBrokerConfig = {url: "ws://127.0.0.1:9/bridge"};'
    with tempfile.TemporaryDirectory() as root:
        pathlib.Path(root, "index.html").write_text("<!doctype html><title>bare</title><p>A bare page.</p>")
        server = benchkit.static_server(root)
        driver = benchkit.chromium()
        devtools = DevTools(driver)
        times = {name: [] for name in variants}
        try:
            for round_ in range(args.rounds + 1):
                for name, source in variants.items():
                    context = BrowserContext(driver, devtools)
                    try:
                        for script in (prelude + "window.__start = performance.now();", source, "window.__end = performance.now();"):
                            driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": script})
                        driver.get(f"http://127.0.0.1:{server.server_port}/index.html?round={round_}")
                        start, end = driver.execute_script("return [window.__start, window.__end]")
                    finally:
                        context.close()
                    if round_:
                        times[name].append(end - start)
        finally:
            devtools.close()
            driver.quit()
            server.shutdown()
    print(f"The shim injected at document start, fresh browser contexts, {args.rounds} rounds; {benchkit.machine_load()}\n")
    print("| injected | main thread (ms) |\n|---|---|")
    for name, values in times.items():
        print(f"| {name} | {benchkit.spread(values, 2)} |")


if __name__ == "__main__":
    main()
