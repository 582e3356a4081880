#!/usr/bin/env python3
"""What one page load cost the page's main thread, from a Chrome trace (DevTools `Tracing`).

    python3 scripts/pageload_trace.py TRACE.json [--from MS] [--to MS]   # a saved trace, in detail

`bench_pageload.py --trace DIR` records one trace per counted load (and saves them in DIR) and
uses `summarize` for its table; run this on a saved trace to see the page's main thread task by
task. Times are ms after the page's navigation started, as the page's own `performance.now()`.

What is counted, on the main thread of the renderer that committed the page:
- messages: WebSocket data handed to the page (`WebSocketReceive`: one per message, or more when
  the network service hands a large message over in parts);
- after the document: from the document's last byte (`responseEnd`) to the last body read, the
  wall time, and the main thread's busy time and CPU in it: the part of the load the page's own
  work decides, which no way can finish faster than its main thread's busy time;
- busy: the wall time inside top-level tasks (`RunTask`) between the page's first `fetch()` call
  and its last body read; cpu: the thread's CPU time in those tasks (`tdur`), which a loaded
  machine does not inflate; the same from the WebSocket's handshake to the hello;
- hello after open: from the handshake answered (`WebSocketReceiveHandshakeResponse`) to the
  first message received;
- the bootstrap: when the page's renderer created its WebSocket (`WebSocketCreate`), asked for
  bridge.js (`ResourceSendRequest`) and finished evaluating it (the end of its `EvaluateScript`),
  and the creation after that end ("socket after evaluated": negative when the bootstrap snippet,
  bridge-js/bridge-snippet.js, opened the socket before the shim ran); and the time from the
  request for bridge.js to the last body read.
"""
import argparse
import collections
import json
import sys

CATEGORIES = ("devtools.timeline", "disabled-by-default-devtools.timeline", "v8", "loading", "blink.user_timing",
              "toplevel", "netlog", "disabled-by-default-network")


def page_thread(events, page_url):
    """(pid, tid, navigation start in µs) of the renderer main thread that committed `page_url`."""
    commit = None
    for event in events:
        data = event.get("args", {}).get("data") or {}
        if event.get("name") == "CommitLoad" and data.get("url") == page_url and data.get("isMainFrame", True):
            commit = event
    if commit is None:
        raise RuntimeError(f"no CommitLoad of {page_url} in the trace")
    pid, tid = commit["pid"], commit["tid"]
    starts = [event["ts"] for event in events
              if event.get("name") == "navigationStart" and event["pid"] == pid
              and (event.get("args", {}).get("data") or {}).get("documentLoaderURL") == page_url]
    if not starts:
        raise RuntimeError(f"no navigationStart of {page_url} in the trace")
    return pid, tid, starts[-1]


def tasks(events, pid, tid):
    """The main thread's top-level tasks as (start µs, end µs, thread CPU µs), in order."""
    spans = sorted((event["ts"], event["ts"] + event.get("dur", 0), event.get("tdur", 0)) for event in events
                   if event["pid"] == pid and event["tid"] == tid and event.get("ph") == "X" and event.get("name") == "RunTask")
    merged = []
    for start, end, cpu in spans:  # A RunTask inside another (a nested loop) is part of it.
        if merged and start < merged[-1][1]:
            continue
        merged.append((start, end, cpu))
    return merged


def busy(spans, start, end):
    """Wall time inside tasks within [start, end], in ms."""
    return sum(max(0, min(e, end) - max(s, start)) for s, e, _ in spans) / 1000


def cpu(spans, start, end):
    """The thread's CPU time in the tasks that started within [start, end], in ms: on a loaded
    machine a task's wall time holds the time its thread waited for a core, its CPU time does not."""
    return sum(c for s, _, c in spans if start <= s <= end) / 1000


def summarize(events, page_url, start_ms, load_ms, document_ms=None):
    """The figures of one load: `start_ms`/`load_ms` are the page's own (first fetch, last body),
    `document_ms` the document's `responseEnd` (its last byte arrived)."""
    pid, tid, origin = page_thread(events, page_url)
    spans = tasks(events, pid, tid)
    at = lambda ms: origin + ms * 1000  # noqa: E731
    ms = lambda ts: (ts - origin) / 1000  # noqa: E731
    messages = sorted(event["ts"] for event in events
                      if event["pid"] == pid and event["tid"] == tid and event.get("name") == "WebSocketReceive"
                      and at(0) <= event["ts"] <= at(load_ms))
    opened = [event["ts"] for event in events if event.get("name") == "WebSocketReceiveHandshakeResponse" and event["pid"] == pid]
    result = {
        "messages": len(messages),
        "busy": busy(spans, at(start_ms), at(load_ms)),
        "cpu": cpu(spans, at(start_ms), at(load_ms)),
    }
    if document_ms is not None:
        # After the document's last byte everything the page waits for is this page's own work or
        # its requests: what the main thread spent then is a floor under any way's remaining time.
        result["cpu after document"] = cpu(spans, at(document_ms), at(load_ms))
        result["busy after document"] = busy(spans, at(document_ms), at(load_ms))
        result["after document"] = load_ms - document_ms
    created = [event["ts"] for event in events if event.get("name") == "WebSocketCreate" and event["pid"] == pid]
    if created:
        result["socket created"] = ms(min(created))
    shim = lambda event: str(((event.get("args") or {}).get("data") or {}).get("url", "")).split("?")[0].endswith("/bridge.js")  # noqa: E731
    requested = [event["ts"] for event in events if event.get("name") == "ResourceSendRequest" and event["pid"] == pid and shim(event)]
    if requested:
        result["shim requested"] = ms(min(requested))
        # From the shim's request to the last body: the part of the load that the bootstrap decides,
        # without the wait for the document and the parser before it (the noisiest part on a busy machine).
        result["shim requested to last body"] = load_ms - result["shim requested"]
    evaluated = [event["ts"] + event.get("dur", 0) for event in events
                 if event.get("name") == "EvaluateScript" and event["pid"] == pid and event["tid"] == tid and shim(event)]
    if evaluated:
        result["shim evaluated"] = ms(min(evaluated))
        if created:
            result["socket after evaluated"] = result["socket created"] - result["shim evaluated"]
    if opened and messages:
        result["open"] = ms(opened[0])
        result["hello"] = ms(messages[0])
        result["hello after open"] = ms(messages[0]) - ms(opened[0])
        result["busy open to hello"] = busy(spans, opened[0], messages[0])
        result["cpu open to hello"] = cpu(spans, opened[0], messages[0] - 1)
        result["cpu first to last message"] = cpu(spans, messages[0] - 1, messages[-1] + 1)
    return result


def detail(events, page_url, begin_ms, end_ms):
    """Prints the main thread's tasks in [begin_ms, end_ms] with what ran in each."""
    pid, tid, origin = page_thread(events, page_url)
    ms = lambda ts: (ts - origin) / 1000  # noqa: E731
    mine = sorted((event for event in events if event["pid"] == pid and event["tid"] == tid and event.get("ph") == "X"),
                  key=lambda event: (event["ts"], -event.get("dur", 0)))
    totals = collections.Counter()
    for event in mine:
        if not begin_ms <= ms(event["ts"]) <= end_ms:
            continue
        duration = event.get("dur", 0) / 1000
        if event["name"] == "RunTask":
            print(f"{ms(event['ts']):8.2f} {duration:6.2f} ms task")
        elif duration >= 0.05:
            data = event.get("args", {}).get("data") or {}
            what = data.get("type") or data.get("functionName") or data.get("url") or ""
            print(f"{ms(event['ts']):8.2f} {duration:6.2f}    {event['name']} {what}"[:160])
            totals[event["name"]] += duration
    print("\ntotal by event (nested events counted in each):")
    for name, total in totals.most_common(20):
        print(f"  {total:7.2f} ms {name}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--page", help="the page's URL (default: the pageload page in the trace)")
    parser.add_argument("--from", dest="begin", type=float, default=0)
    parser.add_argument("--to", dest="end", type=float, default=1e9)
    args = parser.parse_args()
    with open(args.trace) as file:
        saved = json.load(file)
    events = saved["traceEvents"] if isinstance(saved, dict) else saved
    page = args.page or (saved.get("page") if isinstance(saved, dict) else None)
    if not page:
        sys.exit("--page is needed for a trace bench_pageload.py did not save")
    detail(events, page, args.begin, args.end)


if __name__ == "__main__":
    main()
