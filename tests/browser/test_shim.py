"""bridge-js in real headless Chromium against the real broker and a real local origin."""
import json
import re
import sys
import time
import urllib.request

from support import ROOT

sys.path.insert(0, str(ROOT / "bridge-js" / "tools"))
import sourcemap  # noqa: E402

OUT = ROOT / "out"

FNV32 = """
function fnv32(bytes) {
  let hash = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) { hash ^= bytes[i]; hash = Math.imul(hash, 0x01000193) >>> 0; }
  return hash >>> 0;
}
function pattern(count) {
  const table = new Uint8Array(65521);
  for (let j = 0; j < 65521; j++) table[j] = (j * 31 + (j >> 8)) & 255;
  const out = new Uint8Array(count);
  for (let i = 0; i < count; i++) out[i] = table[i % 65521];
  return out;
}
"""


def test_ready_post_and_message_handlers(page):
    result = page("""
        const hello = await BridgeBroker.ready;
        const echoed = await BridgeBroker.post("echo", {a: [1, "é"]});
        const viaWebkit = await window.webkit.messageHandlers.echo.postMessage({w: 1});
        let failure = null;
        try { await window.webkit.messageHandlers.nope.postMessage({}); } catch (e) { failure = {code: e.code, isError: e instanceof Error}; }
        return {protocol: hello.protocol, echoed, viaWebkit, failure};
    """)
    assert result["value"] == {"protocol": 1, "echoed": {"a": [1, "é"]}, "viaWebkit": {"w": 1},
                               "failure": {"code": "unknown_handler", "isError": True}}


def test_cross_origin_fetch_to_an_origin_without_cors(page):
    result = page("""
        const response = await fetch(ORIGIN + "/json");
        const bridged = {status: response.status, json: await response.json(), url: response.url,
                         type: response.headers.get("content-type"), cacheStatus: response.headers.get("cache-status")};
        let native = null;
        try { await BridgeBroker.nativeFetch(ORIGIN + "/json"); native = "allowed"; } catch (e) { native = e.name; }
        return {bridged, native, origin: ORIGIN};
    """)
    value = result["value"]
    assert value["bridged"]["status"] == 200 and value["bridged"]["json"] == {"hello": "world", "n": 1}
    assert value["bridged"]["url"] == value["origin"] + "/json"
    assert value["bridged"]["cacheStatus"].startswith("bridge-broker")
    assert value["native"] == "TypeError", "without the bridge, CORS blocks the same request"


def test_formdata_with_a_file_is_parsed_by_the_origin(page):
    result = page(FNV32 + """
        const bytes = new Uint8Array(100000).map((_, i) => (i * 7) & 255);
        const form = new FormData();
        form.append("title", "héllo wörld");
        form.append("upload", new File([bytes], "data.bin", {type: "application/octet-stream"}));
        const response = await fetch(ORIGIN + "/multipart", {method: "POST", body: form});
        return {status: response.status, parsed: await response.json(), hash: fnv32(bytes)};
    """)
    value = result["value"]
    assert value["status"] == 200, value
    assert value["parsed"]["fields"] == {"title": "héllo wörld"}
    upload = value["parsed"]["files"]["upload"]
    assert upload == {"filename": "data.bin", "type": "application/octet-stream", "size": 100000, "fnv32": value["hash"]}


def test_five_mebibytes_arrive_byte_for_byte_both_ways(page):
    result = page(FNV32 + """
        const size = 5 * 1024 * 1024;
        const upload = new Uint8Array(size).map((_, i) => (i * 13 + (i >> 10)) & 255);
        const echo = await (await fetch(ORIGIN + "/echo", {method: "POST", body: upload.buffer})).json();
        const download = new Uint8Array(await (await fetch(ORIGIN + "/bytes/" + size)).arrayBuffer());
        const expected = pattern(size);
        let same = download.length === expected.length;
        for (let i = 0; same && i < size; i++) same = download[i] === expected[i];
        return {sentBytes: echo.bodyBytes, sentHash: echo.bodyFNV32, hash: fnv32(upload), received: download.length, same};
    """)
    value = result["value"]
    assert value["sentBytes"] == 5 * 1024 * 1024 and value["sentHash"] == value["hash"]
    assert value["received"] == 5 * 1024 * 1024 and value["same"] is True


def test_first_chunk_is_readable_before_the_last_is_sent(page):
    # Six chunks 400 ms apart: the body is sent over 2 s, so a first chunk that a loaded machine
    # delivers a few hundred ms late still leaves well over 900 ms before the end (with four, the
    # margin was 300 ms), while a body held back whole leaves none.
    result = page("""
        const started = performance.now();
        const response = await fetch(ORIGIN + "/slow?chunks=6&delay=400&size=100");
        const reader = response.body.getReader();
        const times = [];
        for (;;) { const {done, value} = await reader.read(); if (done) break; times.push([performance.now() - started, value.length]); }
        return {times, total: performance.now() - started};
    """)
    value = result["value"]
    first, total = value["times"][0][0], value["total"]
    assert sum(count for _, count in value["times"]) == 600
    assert total - first > 900, f"first chunk at {first:.0f} ms, body done at {total:.0f} ms"


def test_abort_timeout_and_network_errors_behave_as_in_a_browser(page):
    result = page("""
        const controller = new AbortController();
        setTimeout(() => controller.abort(), 150);
        let aborted; try { await fetch(ORIGIN + "/hang", {signal: controller.signal}); } catch (e) { aborted = [e.name, e instanceof DOMException]; }
        let forbidden; try { await fetch("http://10.9.8.7/x"); } catch (e) { forbidden = e.constructor.name; }
        let refused; try { await fetch("http://127.0.0.1:1/"); } catch (e) { refused = e.constructor.name; }
        const timedOut = await new Promise((resolve) => {
            const xhr = new XMLHttpRequest();
            const events = [];
            xhr.open("GET", ORIGIN + "/hang");
            xhr.timeout = 200;
            for (const name of ["loadstart", "timeout", "error", "abort", "load", "loadend"]) xhr.addEventListener(name, () => { events.push(name); if (name === "loadend") resolve(events); });
            xhr.send();
        });
        return {aborted, forbidden, refused, timedOut};
    """)
    assert result["value"] == {"aborted": ["AbortError", True], "forbidden": "TypeError", "refused": "TypeError",
                               "timedOut": ["loadstart", "timeout", "loadend"]}


def test_xhr_event_order_with_upload_progress(page):
    result = page("""
        return await new Promise((resolve) => {
            const xhr = new XMLHttpRequest();
            const log = [];
            xhr.onreadystatechange = () => log.push("rs" + xhr.readyState);
            for (const name of ["loadstart", "progress", "load", "loadend"]) xhr.addEventListener(name, () => log.push(name));
            for (const name of ["loadstart", "progress", "load", "loadend"]) xhr.upload.addEventListener(name, () => log.push("up:" + name));
            xhr.onloadend = () => resolve({log, status: xhr.status, json: xhr.response, url: xhr.responseURL,
                                           header: xhr.getResponseHeader("x-origin"), all: xhr.getAllResponseHeaders().includes("content-type: application/json")});
            xhr.open("POST", ORIGIN + "/echo");
            xhr.responseType = "json";
            xhr.setRequestHeader("X-Test", "1");
            xhr.send(new Uint8Array(300000));
        });
    """)
    value = result["value"]
    log = [entry for i, entry in enumerate(value["log"]) if i == 0 or entry != value["log"][i - 1] or not entry.endswith("progress")]
    assert value["status"] == 200 and value["json"]["bodyBytes"] == 300000 and value["header"] == "local" and value["all"]
    assert log[:3] == ["rs1", "loadstart", "up:loadstart"]
    assert log.index("up:load") < log.index("up:loadend") < log.index("rs2") < log.index("rs3") < log.index("rs4") < log.index("load") < log.index("loadend")
    assert "up:progress" in log and log[-1] == "loadend"


def test_xhr_response_types(page):
    result = page("""
        function get(type, path) {
            return new Promise((resolve) => {
                const xhr = new XMLHttpRequest();
                xhr.open("GET", ORIGIN + path);
                xhr.responseType = type;
                xhr.onload = () => resolve(xhr.response);
                xhr.onerror = () => resolve("error");
                xhr.send();
            });
        }
        const text = await get("", "/json");
        const json = await get("json", "/json");
        const buffer = await get("arraybuffer", "/bytes/1000");
        const blob = await get("blob", "/bytes/1000");
        let syncError; try { const x = new XMLHttpRequest(); x.open("GET", ORIGIN + "/json", false); x.send(); } catch (e) { syncError = e.name; }
        return {text, json, buffer: buffer.byteLength, blob: [blob.size, blob.constructor.name], syncError};
    """)
    assert result["value"] == {"text": '{"hello":"world","n":1}', "json": {"hello": "world", "n": 1}, "buffer": 1000,
                               "blob": [1000, "Blob"], "syncError": "InvalidAccessError"}


def test_loading_bar_reaches_one_hundred_percent(site, driver):
    driver.get(f"{site['broker'].http}/examples/loading-bar.html?origin={site['origin']}")
    time.sleep(0.25)
    driver.save_screenshot(str(OUT / "loading-bar-during.png"))
    deadline = time.time() + 30
    while time.time() < deadline and driver.execute_script("return document.body.dataset.done || ''") == "":
        time.sleep(0.1)
    assert driver.execute_script("return document.body.dataset.done") == "ok"
    deadline = time.time() + 10
    while time.time() < deadline and driver.execute_script("return BridgeBroker.progress") != 1:
        time.sleep(0.05)
    state = driver.execute_script("""
        const bar = document.querySelector('[data-bridge-loading-bar]');
        return {progress: BridgeBroker.progress, width: bar && bar.style.width, tiles: document.querySelectorAll('.tile.done').length};
    """)
    driver.save_screenshot(str(OUT / "loading-bar-done.png"))
    assert state == {"progress": 1, "width": "100%", "tiles": 24}


def test_the_shim_works_imported_as_an_es_module(site, driver):
    driver.get(site["page"] + "/module.html")
    result = driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const wait = () => window.moduleResult ? window.moduleResult.then(done) : setTimeout(wait, 20);
        wait();
    """)
    assert result == {"protocol": 1, "json": {"hello": "world", "n": 1}, "echoed": "from a module"}


def test_a_shim_injected_by_a_host_reads_no_stack_to_find_itself(site, driver):
    """Injected at document start (as the WebKit host, a WKWebView user script or DevTools'
    addScriptToEvaluateOnNewDocument do), the shim has no script element and no URL of its own: it
    takes the broker from BridgeBrokerConfig and makes no Error to read a stack, which in Chromium
    cost 4 to 5 ms of the page's main thread (docs/BENCHMARKS.md). The page counts every Error made."""
    counter = ("window.errorsMade = 0; window.Error = new Proxy(Error, {construct(target, args, newTarget) "
               "{ window.errorsMade++; return Reflect.construct(target, args, newTarget); }});\n")
    prelude = f"window.BridgeBrokerConfig = {json.dumps({'url': site['broker'].url})};\n"
    shim = (ROOT / "bridge-js" / "bridge.js").read_text()
    script = driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": counter + prelude + shim})
    try:
        driver.get(site["page"] + "/plain.html")
        made = driver.execute_script("return window.errorsMade")
        result = driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            (async () => {
              const hello = await BridgeBroker.ready;
              const response = await fetch(arguments[0] + "/json");
              return {protocol: hello.protocol, json: await response.json()};
            })().then(done, (error) => done({error: String(error)}));
        """, site["origin"])
    finally:
        driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": script["identifier"]})
    assert made == 0
    assert result["protocol"] == 1 and result["json"] == {"hello": "world", "n": 1}, result


def test_errors_thrown_inside_the_shim_map_back_to_its_sources(site, page):
    """Chromium's own stack of an error from deep inside the minified shim, resolved through the
    /bridge.js.map the broker serves, as DevTools does: every shim frame lands on the right line."""
    stack = page("""
        try { BridgeBroker.connect({url: "ftp://example.test/"}); } catch (error) { return error.stack; }
        return "connect() did not throw";
    """)["value"]
    frames = [(int(line), int(column)) for line, column in re.findall(r"/bridge\.js:(\d+):(\d+)", stack)]
    assert len(frames) >= 4, stack
    with urllib.request.urlopen(site["broker"].http + "/bridge.js.map") as response:
        assert response.headers["access-control-allow-origin"] == "*"
        source_map = json.load(response)
    resolved = []
    for line, column in frames[:4]:
        # Stack positions are 1-based, source maps 0-based.
        position = sourcemap.original_position(source_map, line - 1, column - 1)
        assert position is not None, (line, column)
        text = source_map["sourcesContent"][source_map["sources"].index(position["source"])].split("\n")[position["line"]]
        resolved.append((position["source"], text.strip()))
    assert resolved[0][0] == "src/urls.js" and "must be ws:, wss:, http: or https:" in resolved[0][1], resolved
    assert resolved[1] == ("src/client.js", "if (options.url) this.url = normalizeSocketUrl(options.url);"), resolved
    assert resolved[2] == ("src/client.js", "this.configure(options || {});"), resolved
    assert resolved[3] == ("src/api.js", "client.connect(settings);"), resolved


def test_every_request_body_kind_and_request_objects(page):
    result = page(FNV32 + """
        async function send(body, init = {}) {
            const echo = await (await fetch(ORIGIN + "/echo", {method: "POST", body, ...init})).json();
            const type = (echo.headers.find(([name]) => name.toLowerCase() === "content-type") || [])[1] || null;
            return [echo.bodyText, type];
        }
        const stream = new ReadableStream({start(controller) {
            controller.enqueue(new TextEncoder().encode("stre"));
            controller.enqueue(new TextEncoder().encode("amed"));
            controller.close();
        }});
        const request = new Request(ORIGIN + "/echo", {method: "PUT", body: "from a Request", headers: {"X-Kind": "request"}});
        const viaRequest = await (await fetch(request)).json();
        return {
            string: await send("plain text"),
            params: await send(new URLSearchParams({a: "1", b: "x y"})),
            blob: await send(new Blob(["blob body"], {type: "text/x-blob"})),
            view: await send(new Uint8Array([104, 105]).subarray(0, 2)),
            stream: await send(stream, {duplex: "half"}),
            request: [viaRequest.method, viaRequest.bodyText, viaRequest.headers.some(([n, v]) => n.toLowerCase() === "x-kind" && v === "request")],
        };
    """)
    assert result["value"] == {
        "string": ["plain text", "text/plain;charset=UTF-8"],
        "params": ["a=1&b=x+y", "application/x-www-form-urlencoded;charset=UTF-8"],
        "blob": ["blob body", "text/x-blob"],
        "view": ["hi", None],
        "stream": ["streamed", None],
        "request": ["PUT", "from a Request", True],
    }, result


def test_excluded_urls_use_the_browser_network(page):
    result = page("""
        BridgeBroker.patch(undefined, {exclude: [ORIGIN + "/json*"]});
        let excluded;
        try { await fetch(ORIGIN + "/json"); excluded = "allowed"; } catch (e) { excluded = e.name; }
        const bridged = (await fetch(ORIGIN + "/text/3")).status;
        return {excluded, bridged};
    """)
    assert result["value"] == {"excluded": "TypeError", "bridged": 200}, "the excluded URL went to the network, where CORS blocks it"


def test_a_broker_with_a_token_accepts_the_page_that_presents_it(site, driver):
    from support import Broker

    broker = Broker("--token", "s3cret", "--allow-origin", site["page"])
    try:
        results = {}
        for token in ("s3cret", "wrong"):
            site["values"].update({"TOKEN_BROKER": broker.http, "TOKEN": token})
            driver.get(site["page"] + "/token.html")
            results[token] = driver.execute_async_script("""
                const done = arguments[arguments.length - 1];
                const timer = setTimeout(() => done({connected: false, state: BridgeBroker.state}), 3000);
                BridgeBroker.ready.then((hello) => { clearTimeout(timer); done({connected: true, protocol: hello.protocol}); });
            """)
        assert results["s3cret"] == {"connected": True, "protocol": 1}
        assert results["wrong"]["connected"] is False
    finally:
        broker.stop()


def origin_count(site, path):
    with urllib.request.urlopen(site["origin"] + "/count", timeout=10) as response:
        return json.load(response).get(path, 0)


def test_fetches_before_the_socket_opens_get_fresh_hits_over_the_early_request(site, driver):
    """A page's first fetch() leaves before its WebSocket is open, as one POST /bridge/early for a
    fresh stored response only (docs/PROTOCOL.md, Early requests): the first visit's answer says
    not_cached and the fetch goes over the socket to the origin; the second visit's answer is the
    hit itself, a whole-response frame, and the origin is not asked again."""
    tag = f"early-{time.time()}"

    def visit():
        driver.get(f"{site['page']}/early.html?tag={tag}")
        return driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "window.result.then(done, (error) => done({error: String(error)}));")

    before = origin_count(site, "/cached")
    first = visit()
    second = visit()
    assert "error" not in first and "error" not in second, (first, second)
    assert origin_count(site, "/cached") - before == 1
    assert first["status"] == second["status"] == 200
    assert (second["type"], second["text"]) == (first["type"], first["text"])
    # Text frames (kind 1) only: the reply not_cached. Then a binary frame (kind 2) that is a
    # whole response (its first byte, the protocol frame's kind, 0x02).
    assert [answer["status"] for answer in first["early"]] == [200]
    assert [frame["kind"] for frame in first["early"][0]["frames"]] == [1], first["early"]
    assert [answer["status"] for answer in second["early"]] == [200]
    assert {"kind": 2, "first": 2} in second["early"][0]["frames"], second["early"]
