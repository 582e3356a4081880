"""The WebKit host (BridgeWebView) in real WebKitGTK under xvfb-run: the shim injected at document
start talks to the broker through script message handlers with replies, with no WebSocket."""
import time

from webkit_support import open_page


def result_of(report):
    result = report["result"]
    assert "error" not in result, result["error"]
    return result


def test_native_handlers_reply_reject_and_send_events_and_cross_origin_fetch_needs_no_cors(origin, other_origin):
    report = open_page(f"{origin.url}/pages/handlers.html?other={other_origin.url}")
    result = result_of(report)
    assert result["transport"] == "webkit"
    assert result["echo"] == {"hello": "WebKit", "n": [1, 2]}
    assert result["rejected"] is not None and "url" in result["rejected"]["message"]
    assert result["events"][0] == "response" and "progress" in result["events"]
    assert result["replyStatus"] == 200
    assert result["cors"] == {"status": 200, "body": {"from": "an origin without CORS headers"}}
    # The page's requests went through the broker: WebKit itself loaded the document only.
    assert report["webKitRequests"] == 1
    assert report["bridged"] >= 2


def test_a_5_mib_binary_body_arrives_byte_for_byte(origin):
    result = result_of(open_page(f"{origin.url}/pages/binary.html?n=5242880"))
    assert result["bridged"] is True
    assert result["length"] == 5242880
    assert result["mismatches"] == 0, f"first wrong byte at {result['first']}"


def test_abort_cancels_the_upstream_request(origin):
    result = result_of(open_page(f"{origin.url}/pages/abort.html"))
    assert result["outcome"] == "AbortError"
    deadline = time.time() + 5
    while time.time() < deadline and origin.state.slow["aborted"] < 1:
        time.sleep(0.05)
    assert origin.state.slow == {"started": 1, "aborted": 1, "completed": 0}


def test_a_reload_resets_the_transport(origin):
    result = result_of(open_page(f"{origin.url}/pages/reload.html"))
    assert result == {"echo": {"after": "reload"}, "status": 200}
    # The slow fetch in flight when the page reloaded was cancelled upstream.
    deadline = time.time() + 5
    while time.time() < deadline and origin.state.slow["aborted"] < 1:
        time.sleep(0.05)
    assert origin.state.slow["aborted"] == 1 and origin.state.slow["completed"] == 0


def test_a_preloaded_page_loads_with_zero_origin_requests(origin):
    page = f"{origin.url}/pages/preloaded.html?max-age=600"
    resources = [f"{origin.url}/static/{name}.js" for name in "abc"]
    arguments = ["--include-page"] + [argument for url in resources for argument in ("--preload", url)]
    report = open_page(page, *arguments)
    result = result_of(report)
    assert result["bridged"] is True and len(result["sizes"]) == 3
    assert report["documentFromBroker"] is True
    assert report["originRequests"] == 0, report
    # The origin saw the preload only: the page and its three resources, once each.
    assert origin.state.count() == 4


def test_the_page_identity_and_cookies_reach_the_origin_without_a_handshake(origin):
    """The WebKit host has no WebSocket handshake: the shim's page.identity is all the broker knows."""
    result = result_of(open_page(f"{origin.url}/pages/identity.html?q=1"))
    login, after, omit = result["login"], result["after"], result["omit"]
    for seen in (login, after, omit):
        assert seen["User-Agent"] == result["userAgent"], "WebKit's own user agent, not bridge-broker's"
        assert seen["Accept"] == "*/*"
        assert seen["Accept-Language"] and seen["Accept-Language"].split(",")[0] == result["languages"][0]
        assert seen["Referer"] == result["page"], "strict-origin-when-cross-origin, same origin: the page's URL"
        assert seen["Origin"] is None, "a same-origin GET carries no Origin"
    assert login["Cookie"] is None
    assert result["cookieAfterLogin"] == "wks=2", "the response's cookie is in document.cookie when fetch resolves"
    assert after["Cookie"] == "wks=2; wk=1", "the jar's cookie and the one page script set"
    assert omit["Cookie"] is None


def test_the_shim_runs_in_every_frame_the_rules_allow(origin, other_origin):
    """A same-origin and a cross-origin iframe get the shim and their own connection (the frames
    for each come back in the replies to its own messages); a frame the rules exclude has none."""
    report = open_page(f"{origin.url}/pages/frames.html?other={other_origin.url}", "--never-inject-into", "http://*/pages/excluded/*")
    result = result_of(report)
    assert result["top"] == {"status": 200, "transport": "webkit"}
    frames = result["frames"]
    nocors = {"from": "an origin without CORS headers"}
    assert frames["same"] == {"frame": "same", "from": origin.url, "origin": origin.url, "shim": True, "transport": "webkit",
                              "status": 200, "body": nocors}
    # The cross-origin frame's fetch to the top's origin, which sends no CORS headers, is bridged.
    assert frames["cross"] == {"frame": "cross", "from": other_origin.url, "origin": other_origin.url, "shim": True,
                               "transport": "webkit", "status": 200, "body": nocors}
    # Excluded: no shim, so WebKit's own fetch, which CORS stops at the origin without CORS headers.
    assert frames["excluded"] == {"frame": "excluded", "from": origin.url, "origin": origin.url, "shim": False, "failed": "TypeError"}
    assert report["frameConnections"] == 3, report


def test_a_page_with_the_bootstrap_snippet_opens_no_websocket_in_the_host(origin):
    # The shim injected at document start already runs when the page's snippet does: the snippet
    # opens nothing (bridge-js/README.md, "The bootstrap snippet"), and WebKit carries the fetch.
    result = result_of(open_page(f"{origin.url}/pages/snippet.html"))
    assert result == {"transport": "webkit", "status": 200, "socketsCreated": 0, "snippetLeft": []}
