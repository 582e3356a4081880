#!/usr/bin/env python3
"""What a shared cache tier gains a fleet: the first load of the demo page (N resources behind a
slow origin) by a second broker, without and with a shared squid, in headless Chromium.

    python3 scripts/bench_fleet.py [--rounds 5] [--resources 30] [--latency 50] [--size 20000]

Four brokers with separate caches: two connect to the origin directly, two go through one squid
(tests/squid.py, the configuration docs/FLEET.md shows). Each round, for each setup, both brokers'
caches are cleared; the first broker loads the page (and so fills the shared tier, where there is
one), then the second broker loads it cold. Every round uses resource URLs no cache has seen
(`v=`). The page reports when its last resource arrived; the origin's /count tells how many
requests reached it during each load. Prints the medians as a Markdown table for docs/FLEET.md.
"""
import argparse
import json
import pathlib
import statistics
import sys
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "scripts"))
from support import Broker  # noqa: E402
from squid import Squid  # noqa: E402
from headless_client import BridgeConnection  # noqa: E402
from bench_preload import browser, open_page  # noqa: E402


def origin_requests(origin):
    with urllib.request.urlopen(origin + "/count") as response:
        counts = json.load(response)
    return counts.get("/cached", 0)


def load(driver, origin, page_url):
    """Loads the page; returns its timing and the resource requests that reached the origin."""
    before = origin_requests(origin)
    result = open_page(driver, page_url)
    result["originRequests"] = origin_requests(origin) - before
    return result


def clear(broker):
    connection = BridgeConnection(broker.url)
    connection.receive()
    connection.post("cache.clear", None, on_frame=lambda frame: None)
    connection.sock.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--resources", type=int, default=30)
    parser.add_argument("--latency", type=int, default=50)
    parser.add_argument("--size", type=int, default=20000)
    args = parser.parse_args()

    squid = Squid()
    brokers = []
    try:
        first_direct = Broker("--demo-latency", str(args.latency))
        brokers.append(first_direct)
        origin = first_direct.origin
        # The page comes from the first broker's demo origin: the others must accept it as a page origin.
        second_direct = Broker("--allow-origin", origin)
        first_tier = Broker("--upstream-proxy", squid.url, "--allow-origin", origin)
        second_tier = Broker("--upstream-proxy", squid.url, "--allow-origin", origin)
        brokers += [second_direct, first_tier, second_tier]
        setups = {"without a shared tier": (first_direct, second_direct), "with squid as the shared tier": (first_tier, second_tier)}
        results = {name: {"first": [], "second": []} for name in setups}
        driver = browser()
        try:
            for round_number in range(args.rounds + 1):
                for name, (first, second) in setups.items():
                    clear(first)
                    clear(second)
                    query = f"n={args.resources}&size={args.size}&v={name[:4]}-{round_number}-{time.time_ns()}"
                    one = load(driver, origin, f"{origin}/page?{query}&broker={first.http}")
                    two = load(driver, origin, f"{origin}/page?{query}&broker={second.http}")
                    if round_number == 0:
                        continue  # warm-up: Chromium's first navigation and the first connections
                    results[name]["first"].append(one)
                    results[name]["second"].append(two)
        finally:
            driver.quit()
    finally:
        for broker in brokers:
            broker.stop()
        squid.stop()

    def median(values, key):
        return statistics.median(value[key] for value in values)

    print(f"{args.resources} resources of {args.size} bytes, origin latency {args.latency} ms, "
          f"median of {args.rounds} rounds (headless Chromium):\n")
    print("| setup | broker | resources fetched (ms) | page loaded (ms after navigation) | resource requests that reached the origin |")
    print("|---|---|---|---|---|")
    for name, runs in results.items():
        for which in ("first", "second"):
            values = runs[which]
            print(f"| {name} | {which} | {median(values, 'fetchMs'):.0f} | {median(values, 'loadMs'):.0f} | "
                  f"{min(v['originRequests'] for v in values)}–{max(v['originRequests'] for v in values)} |")
    without = results["without a shared tier"]["second"]
    with_tier = results["with squid as the shared tier"]["second"]
    print(f"\nsecond broker: {median(without, 'fetchMs') / median(with_tier, 'fetchMs'):.1f}x faster resource fetching, "
          f"{median(without, 'loadMs') / median(with_tier, 'loadMs'):.1f}x faster page load with the shared tier")


if __name__ == "__main__":
    main()
