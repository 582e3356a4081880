#!/usr/bin/env python3
"""A page's first load, through the shim against the browser's own cache, in headless Chromium.

    python3 scripts/bench_pageload.py [--rounds 7] [--resources 30] [--size 20000] [--latency 50]
                                      [--way NAME]... [--profile]

The page (the demo origin's /pageload, see Sources/BridgeTestOrigin/OriginHandler+PageLoad.swift)
runs one script that fetch()es its resources (30 of 20 KB, max-age=600, behind an origin that
waits 50 ms before every response) and reads every body. The same page code runs two ways: with
the browser's networking (way=browser), and with the broker's shim in the head (way=shim), whose
patched fetch() sends the same calls through the broker. The ways:

  browser-cold       the browser alone, cold
  browser-seed       the seed study's method: a hidden page of <link rel="preload"> tags (way=links)
                     opened first in another tab of the same browser and waited for until the
                     origin has answered every resource; then the page, from the browser's cache
  shim-cold          through the shim, the broker's cache empty
  shim-preload       through the shim after `bridge-broker preload --page` of the same links page
  shim-cold-warm     the two shim ways again for a returning visitor: the browser has loaded a page
  shim-preload-warm  with the shim three times before (its HTTP cache and V8's code cache hold it),
                     which it revalidates (304) as the broker serves it with no-cache by default
  shim-cold-maxage   the same with a broker started with --shim-max-age 3600: the browser reuses
  shim-preload-maxage  its copy without asking
  shim-snippet-cold  the two shim ways of a first visit with the shim's bootstrap snippet inline
  shim-snippet-preload  right before the shim's tag (bridge-js/bridge-snippet.js): the WebSocket
                     opens while bridge.js downloads and compiles, and the shim adopts it
  shim-snippet-preload-warm  the same after preload for a returning visitor (as shim-preload-warm)
  shim-snippet-preload-maxage  and as shim-preload-maxage (the snippet, and bridge.js not asked for)
  shim-injected-early-cold  the injected ways with early posts asked for (BridgeBrokerConfig.earlyPosts,
  shim-injected-early-preload  as --early-posts does for every shim way): side by side with the two below
  shim-injected-cold the two shim ways with the shim injected by the host at document start instead
  shim-injected-preload  of the page's script tag (DevTools' Page.addScriptToEvaluateOnNewDocument,
                     with the BridgeBrokerConfig prelude the WebKit host puts before it: what a
                     WKWebView user script, Android's addDocumentStartJavaScript or an Electron
                     preload does in an app); the page has no script tag (way=shim&tag=0)
  shim-boot-cold     the same with the boot script injected instead of the shim (/bridge-boot.js:
  shim-boot-preload  it asks for the page's preloaded responses at document start, serves them
                     itself and imports the shim from the broker; bridge-js/README.md, "The boot
                     script")

One Chromium runs the whole benchmark (so its own start-up work, which on two cores takes CPU from
a page for a second or more, is over before the first counted round), and every load runs in a
fresh browser context of it (DevTools' Target.createBrowserContext: an empty HTTP cache, held in
memory, and its own V8 code cache, as an incognito window has). Before the page, its tab shows an
empty page of the origin (no shim, no resources), and the context opens another tab on the origin
(the links page: with the resources for browser-seed, empty otherwise), so the renderer and the
origin's connections are as warm in every way. The broker's cache is cleared
before every load. Each round runs every way once, in an order that rotates from round to round;
the first round is a warm-up and not counted. Times are ms after the page's navigation started:
"loaded" when the last body has been read, "document" when the HTML had arrived, "script" when the
page's script called fetch(). "origin requests" counts the requests for resources that reached the
origin during the load (the document not counted). Each target's line also says where a way differs
from the browser's: how much later its page's script started (for the shim, what its start cost
before the page's own script) and how much longer its resources took, medians against medians.

--profile adds the DevTools protocol's network events to every load (which costs time of its own,
so its loads are not comparable to a run without it) and prints, per way, when the shim was
requested and had arrived, when the WebSocket handshake was answered, when the first post left the
page and when the hello and the last frame arrived.

--before DIR adds, for each chosen shim way, the same way with the shim of DIR/bridge-js/bridge.js
(say, an older revision's: `git show REV:bridge-js/bridge.js > DIR/bridge-js/bridge.js`) served by
a second broker of the same binary, run side by side in the same rounds.

--cross-site adds, for each chosen shim way, the same way with the shim's page naming the broker by
`localhost` (its script tag, CSP and WebSocket) while the origin stays on 127.0.0.1: the broker is
then another site than the page, as it is for a real page on the web (an https origin) and a broker
on loopback, instead of the same site. Chromium's network service spends 4 to 7 ms of CPU creating
the loader for the page's same-site cross-origin script and 0.6 ms for a cross-site one
(docs/BENCHMARKS.md). The browser's ways are the same either way.

--trace DIR records a Chrome trace (DevTools `Tracing`) of every counted load, saves each in DIR,
and prints per way what the page's main thread did (scripts/pageload_trace.py): the WebSocket
messages it took in, its busy time from the first fetch() to the last body read, and the time from
the WebSocket's handshake to the hello; and a second table of when, after the navigation started,
the WebSocket was created, bridge.js was requested and had been evaluated, the handshake was
answered and the page's first fetch() ran. Tracing costs time too: compare such loads only with
each other.
"""
import argparse
import dataclasses
import json
import pathlib
import statistics
import subprocess
import sys
import time
import urllib.request

import benchkit
import pageload_trace
from benchkit import BrowserContext, DevTools, await_global, spread, wait_for
from headless_client import BridgeConnection
from support import BINARY, Broker

WARM_SHIM_VISITS = 3


@dataclasses.dataclass(frozen=True)
class Way:
    name: str
    title: str
    page: str                 # the /pageload way the page runs: browser or shim
    hidden_links: bool = False
    preload: bool = False
    warm_shim: bool = False
    shim_max_age: bool = False  # served by a broker with --shim-max-age: no revalidation of bridge.js
    before: bool = False  # the shim of --before DIR, served by a broker of its own
    cross_site: bool = False  # the page names the broker by localhost: another site than the origin (--cross-site)
    snippet: bool = False  # the page has the shim's bootstrap snippet inline before the shim's tag
    injected: bool = False  # the host injects the shim at document start; the page has no tag for it
    early: bool = False  # the page asks for early posts (as --early-posts does for every shim way)
    boot: bool = False  # the host injects the boot script (/bridge-boot.js) instead of the shim


WAYS = [
    Way("browser-cold", "browser alone, cold", "browser"),
    Way("browser-seed", "browser, after the hidden page of `<link rel=preload>` (the seed's way)", "browser", hidden_links=True),
    Way("shim-cold", "through the shim, cold", "shim"),
    Way("shim-preload", "through the shim, after `bridge-broker preload --page`", "shim", preload=True),
    Way("shim-cold-warm", "through the shim, cold, shim cached (returning visitor)", "shim", warm_shim=True),
    Way("shim-preload-warm", "through the shim, after preload, shim cached (returning visitor)", "shim", preload=True, warm_shim=True),
    Way("shim-cold-maxage", "through the shim, cold, shim cached with `--shim-max-age`", "shim", warm_shim=True, shim_max_age=True),
    Way("shim-preload-maxage", "through the shim, after preload, shim cached with `--shim-max-age`", "shim", preload=True,
        warm_shim=True, shim_max_age=True),
    Way("shim-snippet-cold", "through the shim with the bootstrap snippet, cold", "shim", snippet=True),
    Way("shim-snippet-preload", "through the shim with the bootstrap snippet, after `bridge-broker preload --page`", "shim",
        preload=True, snippet=True),
    Way("shim-snippet-preload-warm", "through the shim with the bootstrap snippet, after preload, shim cached (returning visitor)",
        "shim", preload=True, warm_shim=True, snippet=True),
    Way("shim-snippet-preload-maxage", "through the shim with the bootstrap snippet, after preload, shim cached with `--shim-max-age`",
        "shim", preload=True, warm_shim=True, shim_max_age=True, snippet=True),
    Way("shim-injected-cold", "through the shim injected by the host at document start, cold", "shim", injected=True),
    Way("shim-injected-preload", "through the shim injected by the host at document start, after `bridge-broker preload --page`",
        "shim", preload=True, injected=True),
    Way("shim-injected-early-cold", "through the shim injected by the host, with early posts, cold", "shim", injected=True, early=True),
    Way("shim-injected-early-preload", "through the shim injected by the host, with early posts, after `bridge-broker preload --page`",
        "shim", preload=True, injected=True, early=True),
    Way("shim-boot-cold", "through the boot script injected by the host, cold", "shim", injected=True, boot=True),
    Way("shim-boot-preload", "through the boot script injected by the host, after `bridge-broker preload --page`", "shim",
        preload=True, injected=True, boot=True),
]
SHIM_MAX_AGE = 3600


class Site:
    """A broker (release build under `make bench-pageload`) with its own demo origin."""

    def __init__(self, args, *options):
        self.args = args
        connections = ("--upstream-connections-per-host", str(args.connections)) if args.connections else ()
        self.broker = Broker("--demo-latency", str(args.latency), *connections, *options)
        self.client = BridgeConnection(self.broker.url)
        self.texts = {}  # what injected_shim read from the broker, by path

    def broker_for(self, cross_site):
        """The broker as the shim's page names it (its script tag, CSP and WebSocket): 127.0.0.1, the
        origin's site, or localhost, another site, as a page on the web is to a broker on loopback."""
        return self.broker.http.replace("127.0.0.1", "localhost", 1) if cross_site else self.broker.http

    def url(self, way, query=None, cross_site=False, snippet=False, tag=True):
        return (f"{self.broker.origin}/pageload?way={way}&"
                f"{query or f'n={self.args.resources}&size={self.args.size}&max-age=600'}&broker={self.broker_for(cross_site)}"
                + ("&snippet=1" if snippet else "") + ("" if tag else "&tag=0"))

    def injected_shim(self, cross_site=False, boot=False):
        """The shim as a host injects it at document start: the WebKit host's BridgeBrokerConfig
        prelude (the broker's WebSocket URL), then the text of the broker's /bridge.js, or with
        `boot` of its /bridge-boot.js (which imports /bridge.js from the broker)."""
        path = "/bridge-boot.js" if boot else "/bridge.js"
        if path not in self.texts:
            with urllib.request.urlopen(f"{self.broker.http}{path}") as response:
                self.texts[path] = response.read().decode()
        socket = "ws" + self.broker_for(cross_site)[4:] + "/bridge"
        settings = json.dumps({"url": socket})
        return f"window.BridgeBrokerConfig=Object.assign({settings},window.BridgeBrokerConfig||{{}});\n" + self.texts[path]

    def empty(self, way, cross_site=False):
        return self.url(way, "n=0", cross_site)

    def requests(self):
        return benchkit.origin_requests(self.broker.origin, ["/cached"])

    def stop(self):
        self.client.sock.close()
        self.broker.stop()

    def preload(self, for_page=None):
        """`bridge-broker preload --page` of the links page, as a user would run it; `--for-page` names
        the page that will open (its shim's `page.preloaded` gets them, with early posts on)."""
        command = [str(BINARY), "preload", "--page", self.url("links"), "--broker", self.broker.url, "--json"]
        if for_page:
            command += ["--for-page", for_page]
        output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        reply = json.loads(output.strip().splitlines()[-1])["reply"]
        stored = reply.get("totals", {}).get("stored")
        if stored != self.args.resources:
            raise RuntimeError(f"preload stored {stored} of {self.args.resources} resources: {output[-2000:]}")


class Bench:
    def __init__(self, args, ways):
        self.args = args
        self.site = Site(args)
        # The same binary and shim, but bridge.js served with a max-age instead of no-cache.
        self.max_age_site = Site(args, "--shim-max-age", str(SHIM_MAX_AGE)) if any(way.shim_max_age for way in ways) else None
        # A later --web-root wins over the repository's that tests/support.py gives.
        self.before_site = Site(args, "--web-root", args.before) if any(way.before for way in ways) else None

    def stop(self):
        for site in (self.site, self.max_age_site, self.before_site):
            if site:
                site.stop()

    def start_browser(self):
        self.driver = benchkit.chromium(performance_log=self.args.profile)
        self.devtools = DevTools(self.driver)

    def stop_browser(self):
        self.devtools.close()
        self.driver.quit()

    def load(self, way, trace_name=None):
        """One load of the page in a fresh browser context, prepared as `way` says; returns its
        figures. With `trace_name` (and --trace), the load is traced and its trace saved."""
        site = self.before_site if way.before else self.max_age_site if way.shim_max_age else self.site
        site.client.post("cache.clear", None, on_frame=lambda frame: None)
        driver = self.driver
        context = BrowserContext(driver, self.devtools)
        try:
            if way.warm_shim:
                for _ in range(WARM_SHIM_VISITS):
                    driver.get(site.empty("shim", way.cross_site))
                    wait_for(driver, "window.pageLoad && window.BridgeBroker && BridgeBroker.connected")
                    time.sleep(0.2)  # V8 writes the code cache after the script ran
            # The page's tab has shown a page of the origin before (without the shim), in every way.
            driver.get(site.empty("browser"))
            wait_for(driver, "window.pageLoad")
            driver.switch_to.window(context.tab())
            before = site.requests()
            if way.hidden_links:
                driver.get(site.url("links"))
                wait_for(driver, f"window.preloadedLinks === {self.args.resources}")
                answered = site.requests() - before
                if answered != self.args.resources:
                    raise RuntimeError(f"the hidden page loaded {answered} of {self.args.resources} resources from the origin")
            else:
                driver.get(site.empty("links"))
                wait_for(driver, "document.readyState === 'complete'")
            driver.switch_to.window(context.page)
            page = site.url(way.page, cross_site=way.cross_site, snippet=way.snippet, tag=not way.injected)
            if way.preload:
                site.preload(for_page=page)
            if self.args.profile:
                driver.get_log("performance")  # drop what came before the page
            before = site.requests()
            if trace_name:
                self.devtools.start_tracing(pageload_trace.CATEGORIES)
            if (self.args.early_posts or way.early) and way.page == "shim":
                # Before the shim, whether a tag or the host injects it: the page asks for early posts.
                driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {
                    "source": "window.BridgeBrokerConfig = Object.assign({earlyPosts: true}, window.BridgeBrokerConfig || {});"})
            if way.injected:
                # Into this tab's next documents only: the context (and the tab) end with the load.
                driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": site.injected_shim(way.cross_site, way.boot)})
            driver.get(page)
            result = wait_for(driver, "window.pageLoad") if self.args.wait == "poll" else await_global(driver, "pageLoad")
            if trace_name:
                events = self.devtools.stop_tracing()
                if "error" not in result:
                    result["trace"] = pageload_trace.summarize(events, page, result["startMs"], result["loadMs"], result.get("documentMs"))
                    with open(pathlib.Path(self.args.trace) / f"{trace_name}.json", "w") as file:
                        json.dump({"page": page, "figures": result, "traceEvents": events}, file)
            if "error" in result:
                raise RuntimeError(f"{way.name}: {result['error']}")
            result["originRequests"] = site.requests() - before
            if result["bytes"] != self.args.resources * self.args.size or result["bridged"] != (way.page == "shim"):
                raise RuntimeError(f"{way.name}: the page did not load what it should: {result}")
            if self.args.profile:
                result["phases"] = phases(driver.get_log("performance"), page)
                if "first post sent" in result["phases"]:
                    result["phases"]["document to first post"] = result["phases"]["first post sent"] - result["documentMs"]
            return result
        finally:
            context.close()


def phases(log, page_url):
    """Milestones of one load from the DevTools network events, in ms after the document's request."""
    events = [json.loads(entry["message"])["message"] for entry in log]
    start = None
    found = {}

    def mark(name, timestamp, first=True):
        if start is not None and (not first or name not in found):
            found[name] = (timestamp - start) * 1000

    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            if start is None and url == page_url:
                start = params["timestamp"]
            elif url.endswith("/bridge.js"):
                mark("shim requested", params["timestamp"])
            elif "/bridge/early" in url:
                mark("early requested", params["timestamp"])
                found.setdefault("_early", params["requestId"])
        elif method == "Network.responseReceived" and params.get("requestId") == found.get("_early"):
            mark("early headers", params["timestamp"])
        elif method == "Network.loadingFinished" and params.get("requestId") == found.get("_early"):
            mark("early answered", params["timestamp"])
        elif method == "Network.responseReceived" and params.get("response", {}).get("url", "").endswith("/bridge.js"):
            mark("shim headers", params["timestamp"])
        elif method == "Network.webSocketCreated":
            found.setdefault("_socket", params["requestId"])
        elif method == "Network.webSocketWillSendHandshakeRequest":
            mark("socket requested", params["timestamp"])
        elif method == "Network.webSocketHandshakeResponseReceived":
            mark("socket open", params["timestamp"])
        elif method == "Network.webSocketFrameSent":
            mark("first post sent", params["timestamp"])
            mark("last post sent", params["timestamp"], first=False)
        elif method == "Network.webSocketFrameReceived":
            mark("hello received", params["timestamp"])
            mark("last frame received", params["timestamp"], first=False)
    found.pop("_socket", None)
    found.pop("_early", None)
    return found


PHASES = ["shim requested", "shim headers", "early requested", "early headers", "early answered", "socket requested", "socket open", "hello received",
          "first post sent", "last post sent", "last frame received", "document to first post"]


def report(args, ways, results, load_before, load_after, started):
    print(f"First load of a page of {args.resources} resources of {args.size} bytes (max-age=600), origin latency "
          f"{args.latency} ms, headless Chromium, a fresh browser context for every load; median [min-max] of {args.rounds} "
          f"rounds after a warm-up round; {time.strftime('%Y-%m-%d %H:%M', time.localtime(started))}, "
          f"{time.time() - started:.0f} s; machine: {load_before} before, {load_after} after\n")
    print("| way | loaded (ms) | document | script | resources fetched | origin requests during the load |")
    print("|---|---|---|---|---|---|")
    for way in ways:
        rows = results[way.name]
        counts = sorted({row["originRequests"] for row in rows})
        print(f"| {way.title} | {spread([r['loadMs'] for r in rows])} | {spread([r['documentMs'] for r in rows])} | "
              f"{spread([r['startMs'] for r in rows])} | {spread([r['fetchMs'] for r in rows])} | "
              f"{'-'.join(str(c) for c in (counts[0], counts[-1])) if len(counts) > 1 else counts[0]} |")
    median = {way.name: statistics.median(r["loadMs"] for r in results[way.name]) for way in ways}
    print()
    for shim, browser, target in (("shim-preload", "browser-seed", 0.85), ("shim-cold", "browser-cold", 0.8),
                                  ("shim-snippet-preload", "browser-seed", 0.85), ("shim-snippet-cold", "browser-cold", 0.8),
                                  ("shim-snippet-preload-warm", "browser-seed", 0.85),
                                  ("shim-injected-preload", "browser-seed", 0.85), ("shim-injected-cold", "browser-cold", 0.8),
                                  ("shim-injected-early-preload", "browser-seed", 0.85), ("shim-injected-early-cold", "browser-cold", 0.8),
                                  ("shim-boot-preload", "browser-seed", 0.85), ("shim-boot-cold", "browser-cold", 0.8),
                                  ("shim-preload-warm", "browser-seed", 0.85), ("shim-cold-warm", "browser-cold", 0.8),
                                  ("shim-preload-maxage", "browser-seed", 0.85), ("shim-cold-maxage", "browser-cold", 0.8)):
        for name in (shim, shim + "-before", shim + "-xsite"):
            if name in median and browser in median:
                ratio = median[name] / median[browser]
                # The two loads of each round ran in that round, close in time: their ratio, round by round,
                # leaves out what moved the machine between rounds.
                paired = [a["loadMs"] / b["loadMs"] for a, b in zip(results[name], results[browser])]
                # Where the difference is: before the page's script runs (the shim's start) or after it
                # (the resources), medians against the browser's way.
                script = statistics.median(r["startMs"] for r in results[name]) - statistics.median(r["startMs"] for r in results[browser])
                fetched = statistics.median(r["fetchMs"] for r in results[name]) - statistics.median(r["fetchMs"] for r in results[browser])
                print(f"- {name} / {browser}: {ratio:.2f}x (target <= {target}x: {'met' if ratio <= target else 'NOT met'}); "
                      f"round by round: median {statistics.median(paired):.2f}x, at or under the target in "
                      f"{sum(r <= target for r in paired)} of {len(paired)} rounds; the page's script {script:+.0f} ms, "
                      f"its resources {fetched:+.0f} ms against {browser}")
    if args.profile:
        print("\nMilestones from the DevTools network events (ms after the document was requested, the last column"
              " after it had arrived; median):\n")
        print("| way | " + " | ".join(PHASES) + " |")
        print("|---|" + "---|" * len(PHASES))
        for way in ways:
            cells = []
            for phase in PHASES:
                values = [r["phases"][phase] for r in results[way.name] if phase in r["phases"]]
                cells.append(f"{statistics.median(values):.0f}" if values else "")
            print(f"| {way.name} | " + " | ".join(cells) + " |")
    if args.trace:
        print(f"\nThe page's main thread, from the traces in {args.trace} (median [min-max]; CPU: the thread's time in its tasks, busy: their wall time; scripts/pageload_trace.py):\n")
        print("| way | messages taken in | CPU, first fetch() to last body (ms) | busy (wall) | hello after the handshake (ms) | CPU meanwhile (ms) |")
        print("|---|---|---|---|---|---|")
        for way in ways:
            figures = [r["trace"] for r in results[way.name] if "trace" in r]
            column = lambda key, digits=1: spread([f[key] for f in figures if key in f], digits) if any(key in f for f in figures) else ""  # noqa: E731
            print(f"| {way.name} | {column('messages', 0)} | {column('cpu')} | {column('busy')} | {column('hello after open')} | "
                  f"{column('cpu open to hello')} |")
        print("\nAfter the document (from its last byte to the last body read; busy: the main thread's wall time in"
              " its tasks, CPU: its CPU time in them; median [min-max], ms):\n")
        print("| way | after the document | main thread busy | main thread CPU | main thread idle |")
        print("|---|---|---|---|---|")
        for way in ways:
            figures = [r["trace"] for r in results[way.name] if "after document" in r.get("trace", {})]
            if not figures:
                continue
            column = lambda key: spread([f[key] for f in figures], 1)  # noqa: E731
            print(f"| {way.name} | {column('after document')} | {column('busy after document')} | {column('cpu after document')} | "
                  f"{spread([f['after document'] - f['busy after document'] for f in figures], 1)} |")
        print("\nThe bootstrap, from the same traces (ms after the navigation started, median [min-max]; \"socket after"
              " evaluated\" is the WebSocket's creation after the end of bridge.js's evaluation: negative when the"
              " bootstrap snippet opened it before):\n")
        print("| way | bridge.js requested | bridge.js evaluated | WebSocket created | socket after evaluated |"
              " handshake answered | first fetch() | bridge.js requested to last body |")
        print("|---|---|---|---|---|---|---|---|")
        for way in ways:
            figures = [r["trace"] for r in results[way.name] if "trace" in r]
            if not any("shim evaluated" in f for f in figures):
                continue
            column = lambda key: spread([f[key] for f in figures if key in f], 1) if any(key in f for f in figures) else ""  # noqa: E731
            print(f"| {way.name} | {column('shim requested')} | {column('shim evaluated')} | {column('socket created')} | "
                  f"{column('socket after evaluated')} | {column('open')} | {spread([r['startMs'] for r in results[way.name]], 1)} | "
                  f"{column('shim requested to last body')} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="counted rounds (default 7), after one warm-up round")
    parser.add_argument("--resources", type=int, default=30)
    parser.add_argument("--size", type=int, default=20000)
    parser.add_argument("--latency", type=int, default=50, help="the origin's delay before every response (ms)")
    parser.add_argument("--connections", type=int, help="the brokers' --upstream-connections-per-host (default: the broker's)")
    parser.add_argument("--way", action="append", choices=[way.name for way in WAYS], help="only these ways (repeatable)")
    parser.add_argument("--wait", choices=("await", "poll"), default="await",
                        help="how the bench learns the load ended: await (default) the page's assignment of its result "
                             "through one DevTools call, or poll for it every 5 ms (what it did before 2026-11-24)")
    parser.add_argument("--profile", action="store_true", help="also record and print network milestones per load")
    parser.add_argument("--early-posts", action="store_true",
                        help="the shim's pages ask for early posts (BridgeBrokerConfig.earlyPosts; a --before shim without them ignores it)")
    parser.add_argument("--before", metavar="DIR", help="also run each chosen shim way with the shim of DIR/bridge-js/bridge.js (an older build), side by side")
    parser.add_argument("--cross-site", action="store_true",
                        help="also run each chosen shim way with the page naming the broker by localhost (another site), side by side")
    parser.add_argument("--json", metavar="FILE", help="also write every counted load's result, per way and round, to FILE")
    parser.add_argument("--trace", metavar="DIR", help="trace every counted load, save the traces in DIR, print what the page's main thread did")
    args = parser.parse_args()
    if args.trace:
        pathlib.Path(args.trace).mkdir(parents=True, exist_ok=True)
    if args.rounds < 1 or args.resources < 1:
        parser.error("--rounds and --resources must be at least 1")
    ways = [way for way in WAYS if not args.way or way.name in args.way]
    if args.before:
        # An older shim does not know the bootstrap snippet: the snippet ways are not repeated with it.
        ways += [dataclasses.replace(way, name=way.name + "-before", title=way.title + ", the shim of --before", before=True)
                 for way in ways if way.page == "shim" and not way.shim_max_age and not way.snippet]
    if args.cross_site:
        ways += [dataclasses.replace(way, name=way.name + "-xsite", title=way.title + ", the broker named by `localhost` (another site)",
                                     cross_site=True)
                 for way in ways if way.page == "shim" and not way.before]

    started = time.time()
    load_before = benchkit.machine_load()
    bench = Bench(args, ways)
    results = {way.name: [] for way in ways}
    try:
        bench.start_browser()
        for round_index in range(args.rounds + 1):
            shift = round_index % len(ways)
            for way in ways[shift:] + ways[:shift]:
                traced = f"{way.name}-{round_index}" if args.trace and round_index else None
                result = bench.load(way, traced)
                if round_index:
                    results[way.name].append(result)
            print(f"round {round_index}{' (warm-up)' if not round_index else ''} done", flush=True, file=sys.stderr)
    finally:
        bench.stop_browser()
        bench.stop()
    report(args, ways, results, load_before, benchkit.machine_load(), started)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
