"""Flow control in headless Chromium: a page that reads a 512 MiB body slowly holds a bounded
amount of it, in its own heap and in the broker, because the broker reads the upstream body only
as far as the page's credit reaches (docs/PROTOCOL.md, "Flow control")."""
import time

MiB = 1024 * 1024


def broker_rss(broker):
    with open(f"/proc/{broker.process.pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def page_memory(driver):
    usage = driver.execute_cdp_cmd("Runtime.getHeapUsage", {})
    return usage["usedSize"] + usage.get("backingStorageSize", 0) + usage.get("embedderHeapUsedSize", 0)


def test_a_slow_reader_of_a_huge_body_holds_a_bounded_amount(page, site, driver):
    rss_before = broker_rss(site["broker"])
    memory_before = page_memory(driver)
    started = page("""
        window.slow = {read: 0, chunks: 0, done: false, error: null};
        const response = await fetch(ORIGIN + "/bytes/536870912", {cache: "no-store"});
        const reader = response.body.getReader();
        window.slow.reader = reader;
        (async () => {
            try {
                // About 2 MiB a second: the whole body would take minutes.
                for (;;) {
                    const {done, value} = await reader.read();
                    if (done) { window.slow.done = true; return; }
                    window.slow.read += value.length;
                    window.slow.chunks++;
                    await new Promise((resolve) => setTimeout(resolve, 30));
                }
            } catch (error) { window.slow.error = String(error); }
        })();
        return response.headers.get("content-length");
    """)
    assert started["value"] == str(512 * MiB)
    time.sleep(4)
    memory = page_memory(driver)
    rss = broker_rss(site["broker"])
    state = page("""
        const {read, chunks, done, error} = window.slow;
        await window.slow.reader.cancel();
        return {read, chunks, done, error};
    """)["value"]
    print(f"page +{(memory - memory_before) / MiB:.1f} MiB, broker RSS +{(rss - rss_before) / MiB:.1f} MiB, read {state['read'] / MiB:.1f} MiB")
    assert state["error"] is None and not state["done"] and state["read"] > 0, state
    # Without flow control the broker forwards the origin's body as fast as loopback allows: in
    # 4 s hundreds of MiB would sit in the page's stream queue and pass through the broker.
    assert memory - memory_before < 48 * MiB, (memory_before, memory)
    assert rss - rss_before < 48 * MiB, (rss_before, rss)
