#!/usr/bin/env python3
"""First load of a page with N resources behind a slow origin, without and after preload,
measured in headless Chromium (the Selenium setup of tests/browser).

    python3 scripts/bench_preload.py [--rounds 5] [--resources 30] [--latency 50] [--size 20000]

Each round: clear the broker's cache and load the demo origin's /page cold; clear it again,
`preload` the page, and load it again. Twice: once as a browser opens a page (the document from
the origin, the resources through the shim), once through a host that takes the document from
the broker as well (page_host.py), with the page preloaded by `includePage`. The page records
when the last resource arrived (ms since navigation start, and ms spent fetching). The origin's
/count tells how many requests reached it during each load. Prints the medians as Markdown
tables for docs/BENCHMARKS.md.
"""
import argparse
import statistics
import time

import benchkit
from benchkit import browser, wait_for
from headless_client import BridgeConnection
from page_host import PageHost
from support import Broker


def origin_requests(broker):
    return benchkit.origin_requests(broker.origin)


def open_page(driver, page_url):
    """Loads the demo page in the browser and returns the timing it reports."""
    driver.get(page_url)
    result = wait_for(driver, "window.preloadDemo")
    if "error" in result:
        raise RuntimeError(result["error"])
    return result


def load(driver, broker, page_url):
    """Loads the page in the browser and returns its timing and the origin requests made meanwhile."""
    before = origin_requests(broker)
    result = open_page(driver, page_url)
    # The page itself comes from the origin (the browser loads it natively): count only the rest.
    result["originRequests"] = origin_requests(broker) - before - 1
    return result


def load_through_host(host, broker, page_url):
    """Loads the page through the host, which takes the document from the broker too."""
    before = origin_requests(broker)
    result = host.load(page_url, "window.preloadDemo")
    if "error" in result:
        raise RuntimeError(result["error"])
    result["originRequests"] = origin_requests(broker) - before  # the document included
    return result


def rounds(load_page, client, page, count, resources, include_page):
    """Cold and after-preload loads of `page`, `count` rounds after one warm-up round."""
    cold, warm, preload_ms = [], [], []
    for round_number in range(count + 1):
        client.post("cache.clear", None, on_frame=lambda frame: None)
        first = load_page(f"{page}&round={round_number}&cold=1")
        client.post("cache.clear", None, on_frame=lambda frame: None)
        url = f"{page}&round={round_number}&warm=1"
        started = time.time()
        reply = client.post("preload", {"page": url, "includePage": include_page}, on_frame=lambda frame: None)
        elapsed = (time.time() - started) * 1000
        assert reply["ok"] and reply["body"]["totals"]["stored"] == resources + include_page, reply
        second = load_page(url)
        if round_number == 0:
            continue  # warm-up: Chromium's first navigation and the broker's first connections
        cold.append(first)
        warm.append(second)
        preload_ms.append(elapsed)
    return cold, warm, preload_ms


def report(title, cold, warm, preload_ms, upstream_note):
    def median(results, key):
        return statistics.median(result[key] for result in results)

    print(f"{title}\n")
    print(f"| first load | page loaded (ms after navigation) | of which: document | shim ready | resources fetched | upstream requests during the load{upstream_note} |")
    print("|---|---|---|---|---|---|")
    for name, results in (("without preload", cold), ("after preload", warm)):
        print(f"| {name} | {median(results, 'loadMs'):.0f} | {median(results, 'documentMs'):.0f} | "
              f"{median(results, 'readyMs'):.0f} | {median(results, 'fetchMs'):.0f} | "
              f"{max(result['originRequests'] for result in results)} |")
    print(f"\nspeed-up: {median(cold, 'loadMs') / median(warm, 'loadMs'):.1f}x page load, "
          f"{median(cold, 'fetchMs') / median(warm, 'fetchMs'):.1f}x resource fetching; "
          f"the preload itself took {statistics.median(preload_ms):.0f} ms\n")



def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--resources", type=int, default=30)
    parser.add_argument("--latency", type=int, default=50)
    parser.add_argument("--size", type=int, default=20000)
    args = parser.parse_args()

    broker = Broker("--demo-latency", str(args.latency))
    client = BridgeConnection(broker.url)
    # The page may be cached for a minute, so that `includePage` can store it.
    page = (f"{broker.origin}/page?n={args.resources}&size={args.size}&page-cc=max-age%3D60"
            f"&broker={broker.http}")
    setting = (f"{args.resources} resources of {args.size} bytes, origin latency {args.latency} ms, "
               f"median of {args.rounds} rounds (headless Chromium)")
    try:
        driver = browser()
        try:
            browser_rounds = rounds(lambda url: load(driver, broker, url), client, page, args.rounds, args.resources, False)
        finally:
            driver.quit()
        host = PageHost(BridgeConnection(broker.url))
        try:
            host_rounds = rounds(lambda url: load_through_host(host, broker, url), client, page, args.rounds, args.resources, True)
        finally:
            host.close()
    finally:
        broker.stop()
    report(f"The browser loads the document from the origin; {setting}:", *browser_rounds, " (the document not counted)")
    report(f"A host loads the document through the broker, preloaded with `includePage`; {setting}:",
           *host_rounds, " (the document included)")


if __name__ == "__main__":
    main()
