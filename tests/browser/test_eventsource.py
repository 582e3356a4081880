"""EventSource and streamed uploads through the broker in headless Chromium: a page on one origin reads
events from another origin that sends no CORS headers (the browser's own EventSource is refused)."""
import json
import time
import urllib.parse
import urllib.request

import pytest

import differential_origin


@pytest.fixture(scope="module")
def sse_origin():
    server, origin = differential_origin.start("")
    yield origin
    server.shutdown()


def stream_url(origin, **query):
    return f"{origin}/sse?{urllib.parse.urlencode(query)}"


def counts(origin):
    with urllib.request.urlopen(origin + "/sse-count") as response:
        return json.load(response)


def test_events_parsing_and_reconnection_with_last_event_id(page, sse_origin):
    first = ("retry: 150\ndata: a\n\nevent: named\ndata: b\ndata: c\nid: 7\n\n: a comment\r\n"
             "data: crlf\r\n\r\ndata: cr\r\rdata:no space\n\nid\ndata: unsent")
    url = stream_url(sse_origin, id="parse", events=first, again="data: second\n\n", hold="50")
    result = page("""
        const source = new EventSource(URL, {withCredentials: true});
        const log = [];
        const states = [source.readyState];
        source.onopen = () => log.push(["open", source.readyState]);
        source.onmessage = (event) => log.push(["message", event.data, event.lastEventId, event.origin === new window.URL(URL).origin]);
        source.addEventListener("named", (event) => log.push(["named", event.data, event.lastEventId]));
        await new Promise((resolve) => {
            source.onerror = () => {
                log.push(["error", source.readyState]);
                if (log.filter((entry) => entry[0] === "message").length >= 5) { source.close(); resolve(); }
            };
            setTimeout(resolve, 8000);
        });
        states.push(source.readyState);
        let native;
        try {
            native = await new Promise((resolve) => {
                const plain = new BridgeBroker.NativeEventSource(NATIVE_URL);
                plain.onopen = () => { plain.close(); resolve("open"); };
                plain.onerror = () => { plain.close(); resolve("error"); };
            });
        } catch (error) { native = error.name; }
        return {log, states, withCredentials: source.withCredentials, url: source.url, isBridged: source instanceof EventSource, native};
    """, URL=url, NATIVE_URL=stream_url(sse_origin, id="native", events="data: x\n\n"))
    value = result["value"]
    assert value["log"] == [
        ["open", 1],
        ["message", "a", "", True],
        ["named", "b\nc", "7"],
        ["message", "crlf", "7", True],
        ["message", "cr", "7", True],
        ["message", "no space", "7", True],
        ["error", 0],
        ["open", 1],
        ["message", "second", "7", True],
        ["error", 0],
    ], value["log"]
    assert value["states"] == [0, 2]
    assert value["withCredentials"] is True and value["url"] == url and value["isBridged"] is True
    assert value["native"] == "error", "without the bridge the browser refuses the cross-origin stream"
    seen = counts(sse_origin)
    # "id" without a value emptied the buffer, but no blank line dispatched it before the stream
    # ended (and "unsent" was dropped): the last event ID is still 7.
    assert seen["parse"] == 2 and seen["parse:last"] == "7", seen


def test_last_event_id_is_sent_on_reconnection(page, sse_origin):
    url = stream_url(sse_origin, id="resume", events="retry: 100\nid: 42\ndata: one\n\n", again="data: two\n\n")
    result = page("""
        const source = new EventSource(URL);
        const got = [];
        await new Promise((resolve) => {
            source.onmessage = (event) => { got.push([event.data, event.lastEventId]); if (got.length === 2) resolve(); };
            setTimeout(resolve, 5000);
        });
        source.close();
        return got;
    """, URL=url)
    assert result["value"] == [["one", "42"], ["two", "42"]]
    assert counts(sse_origin)["resume:last"] == "42"


@pytest.mark.parametrize("query", [{"s": "204"}, {"type": "text/plain"}, {"s": "500"}])
def test_a_204_or_another_content_type_fails_the_connection_for_good(page, sse_origin, query):
    key = "fail" + "".join(query.values()).replace("/", "")
    url = stream_url(sse_origin, id=key, events="retry: 50\ndata: x\n\n", **query)
    result = page("""
        const source = new EventSource(URL);
        const log = [];
        source.onopen = () => log.push("open");
        source.onmessage = () => log.push("message");
        source.onerror = () => log.push("error " + source.readyState);
        await new Promise((resolve) => setTimeout(resolve, 600));
        return log;
    """, URL=url)
    assert result["value"] == ["error 2"]
    assert counts(sse_origin)[key] == 1, "no reconnection after a failed connection"


def test_close_cancels_the_upstream_request(page, sse_origin):
    url = stream_url(sse_origin, id="closing", events="data: hi\n\n", hold="8000")
    result = page("""
        const source = new EventSource(URL);
        const got = await new Promise((resolve) => { source.onmessage = (event) => resolve(event.data); setTimeout(() => resolve(null), 5000); });
        source.close();
        return [got, source.readyState];
    """, URL=url)
    assert result["value"] == ["hi", 2]
    deadline = time.time() + 5
    while time.time() < deadline and not counts(sse_origin).get("closing:closed"):
        time.sleep(0.05)
    assert counts(sse_origin).get("closing:closed") is True, "the origin saw its connection closed long before its 8 s hold"


def test_a_readable_stream_body_reaches_the_origin_as_it_is_produced(page, sse_origin):
    """A ReadableStream request body (duplex: "half") goes upstream chunked, each chunk as the page
    produces it: the origin has the first one long before the page writes the last."""
    result = page("""
        const encoder = new TextEncoder();
        let step = 0;
        const stream = new ReadableStream({
            async pull(controller) {
                if (step === 3) { controller.close(); return; }
                if (step > 0) await new Promise((resolve) => setTimeout(resolve, 500));
                controller.enqueue(encoder.encode("part" + step + ";"));
                step++;
            },
        });
        const response = await fetch(ORIGIN_SSE + "/echo", {method: "POST", body: stream, duplex: "half"});
        const echo = await response.json();
        let noDuplex;
        try { await fetch(ORIGIN_SSE + "/echo", {method: "POST", body: new ReadableStream()}); } catch (error) { noDuplex = error.name; }
        let onGet;
        try { await fetch(ORIGIN_SSE + "/echo", {method: "GET", body: new ReadableStream(), duplex: "half"}); } catch (error) { onGet = error.name; }
        return {body: echo.body, chunked: echo.headers["transfer-encoding"], length: echo.headers["content-length"] || null,
                arrivals: echo.arrivals, noDuplex, onGet};
    """, ORIGIN_SSE=sse_origin)
    value = result["value"]
    assert value["body"] == "part0;part1;part2;" and value["chunked"] == "chunked" and value["length"] is None, value
    arrivals = value["arrivals"]
    assert arrivals[-1][1] == 18 and len(arrivals) >= 3, arrivals
    first_complete = next(ms for ms, size in arrivals if size >= 6)
    assert arrivals[-1][0] - first_complete >= 800, f"the chunks arrived as they were produced: {arrivals}"
    assert value["noDuplex"] == "TypeError" and value["onGet"] == "TypeError"
