import Foundation
import NIOCore
import NIOHTTP1

extension OriginHandler {
    /// `/pageload?way=browser|shim|links&n=30&size=20000&max-age=600&broker=http://127.0.0.1:8787[&snippet=1][&tag=0]`:
    /// the pages of the page-load benchmark (`scripts/bench_pageload.py`).
    ///
    /// - `browser` and `shim` are the same page running the same code: one inline script at the end
    ///   of the body that `fetch()`es each of the `n` resources of `/page` and reads its body, then
    ///   reports its timing in `window.pageLoad`. `shim` also includes the broker's shim first in
    ///   the head (so the same `fetch()` calls go through the broker) and a Content-Security-Policy
    ///   that lets the page connect to the broker only, so nothing it loads can bypass it;
    ///   `browser` may connect to its own origin only, and uses the browser's own networking. With
    ///   `snippet=1`, `shim` has the shim's bootstrap snippet (the origin's `pageSnippet`) inline
    ///   right before the shim's tag, as bridge-js/README.md tells a page to include it. With
    ///   `tag=0`, `shim` has no tag for the shim (nor the snippet): the host injects the shim at
    ///   document start, as the WebKit host and an app's web view do; the CSP stays the same.
    ///   Neither lists the resources as `<link rel=preload>`: the browser would load them itself.
    /// - `links` is the hidden page of the seed study's method: the same resources as
    ///   `<link rel="preload" as="fetch" crossorigin>`, which fill the browser's HTTP cache; it
    ///   counts the links that finished in `window.preloadedLinks`. `bridge-broker preload --page`
    ///   reads the same page for its list.
    ///
    /// Every variant names a `data:` favicon, so Chromium does not ask the origin for one. With
    /// `document-max-age=N` the page itself is cacheable for N seconds (so `preload` with
    /// `includePage` can store it); without, it carries no freshness and is not stored.
    func respondPageLoad(_ context: ChannelHandlerContext, to request: OriginRequest) {
        let query = request.query
        let resources = Self.demoResources(query)
        let head: String
        let body: String
        switch query["way"] ?? "browser" {
        case "links":
            head = resources.map {
                #"<link rel="preload" href="\#($0.replacingAmpersands)" as="fetch" crossorigin onload="preloadedLinks++" onerror="preloadedLinks++">"#
            }.joined(separator: "\n")
            body = "<h1>Preloading \(resources.count) resources</h1>"
            // The counter must exist before the parser reaches the first link's handlers.
            return sendPageLoad(context, request, title: "Preload links", head: "<script>var preloadedLinks = 0;</script>\n" + head, body: body)
        case "shim":
            let broker = query["broker"] ?? "http://127.0.0.1:8787"
            let socket = "ws" + broker.dropFirst(4)
            var snippet = ""
            if query["snippet"] == "1" {
                guard let pageSnippet else {
                    return send(context, status: .badRequest, type: "text/plain",
                                body: Array("this origin has no bootstrap snippet (bridge-js/bridge-snippet.js under the broker's web root)".utf8),
                                head: request.head)
                }
                // The bootstrap snippet opens the shim's WebSocket before the shim has arrived. The
                // CSP allows it as an inline script ('unsafe-inline' is there for the page's own
                // script; a page without inline scripts lists the snippet's hash instead).
                snippet = #"<script data-broker-url="\#(broker)">\#(pageSnippet)</script>"# + "\n"
            }
            let policy = #"<meta http-equiv="Content-Security-Policy" content="connect-src \#(broker) \#(socket); script-src 'unsafe-inline' \#(broker)">"#
            head = query["tag"] == "0" ? policy : policy + "\n" + snippet + #"<script src="\#(broker)/bridge.js"></script>"#
        case "browser":
            head = #"<meta http-equiv="Content-Security-Policy" content="connect-src 'self'; script-src 'unsafe-inline'">"#
        default:
            return send(context, status: .badRequest, type: "text/plain", body: Array("way must be browser, shim or links".utf8), head: request.head)
        }
        body = Self.pageLoadScript(resources)
        sendPageLoad(context, request, title: "Page load", head: head, body: body)
    }

    /// The page code every way runs: the same `fetch()` calls of the same resources, all at once,
    /// as a page's script starts its requests; the time is taken when the last body was read.
    /// `bridged` says whether every response came through the broker (the shim's responses carry
    /// `bridge`), whether or not the shim itself has loaded by then (the boot script serves some).
    static func pageLoadScript(_ resources: [String]) -> String {
        let list = "[" + resources.map { "\"\($0)\"" }.joined(separator: ",") + "]"
        return """
            <h1>A page with \(resources.count) resources</h1>
            <p id="result">loading…</p>
            <script>
            (async () => {
              const urls = \(list);
              const started = performance.now();
              let bridged = 0;
              const sizes = await Promise.all(urls.map(async (url) => {
                const response = await fetch(url);
                if (response.bridge !== undefined) bridged++;
                return (await response.arrayBuffer()).byteLength;
              }));
              const done = performance.now();
              const navigation = performance.getEntriesByType("navigation")[0];
              window.pageLoad = {resources: urls.length, bytes: sizes.reduce((a, b) => a + b, 0), startMs: started,
                                 loadMs: done, fetchMs: done - started, documentMs: navigation ? navigation.responseEnd : null,
                                 bridged: bridged === urls.length};
              document.getElementById("result").textContent = `loaded ${Math.round(done)} ms after navigation`;
            })().catch((error) => { window.pageLoad = {error: String(error)}; });
            </script>
            """
    }

    private func sendPageLoad(_ context: ChannelHandlerContext, _ request: OriginRequest, title: String, head: String, body: String) {
        let html = """
            <!doctype html>
            <html><head><meta charset="utf-8">
            <link rel="icon" href="data:,">
            <title>\(title)</title>
            \(head)
            </head><body style="font-family: system-ui, sans-serif">
            \(body)
            </body></html>
            """
        let maxAge = request.query["document-max-age"].flatMap(Int.init)
        send(context, status: .ok, type: "text/html; charset=utf-8", body: Array(html.utf8), head: request.head,
             extra: maxAge.map { [("Cache-Control", "max-age=\($0)")] } ?? [])
    }
}
