import Foundation
import NIOCore
import NIOHTTP1

extension OriginHandler {
    /// The resources of the demo page and manifest: `n` cacheable `/cached` bodies of `size`
    /// bytes, fresh for `max-age` seconds, as relative URLs; `v` is added to each, so that a
    /// benchmark round can ask for URLs no cache has seen.
    static func demoResources(_ query: [String: String]) -> [String] {
        let count = min(1000, max(0, Int(query["n"] ?? "") ?? 30))
        let size = max(0, Int(query["size"] ?? "") ?? 4096)
        let maxAge = max(0, Int(query["max-age"] ?? "") ?? 600)
        let version = query["v"].map { "&v=" + ($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "") } ?? ""
        return (1...max(1, count)).prefix(count).map { "/cached?cc=max-age%3D\(maxAge)&size=\(size)&r=\($0)\(version)" }
    }

    /// `/page?n=30&size=4096&max-age=600&broker=http://127.0.0.1:8787[&page-cc=max-age%3D60]`: an
    /// HTML page (with `page-cc` as its own `Cache-Control`, so `includePage` can store it) that lists
    /// its resources as `<link rel="preload">` and loads them with `fetch` through the broker's
    /// shim (with the loading bar), then reports its timing in `window.preloadDemo` and to a
    /// parent frame.
    ///
    /// The shim comes first in the head, before the links, as a page should include it: the
    /// browser blocks parsing on it, so it is requested as soon as the head arrives.
    ///
    /// Its Content-Security-Policy lets it connect to the broker only, so the browser's own
    /// preload of the links is refused and every resource travels through the broker: the
    /// origin's request counts then tell exactly what the broker fetched.
    func respondPage(_ context: ChannelHandlerContext, to request: OriginRequest) {
        let broker = request.query["broker"] ?? "http://127.0.0.1:8787"
        let socket = "ws" + broker.dropFirst(4)
        let links = Self.demoResources(request.query)
            .map { #"<link rel="preload" href="\#($0.replacingAmpersands)" as="fetch" crossorigin>"# }
            .joined(separator: "\n")
        let html = """
            <!doctype html>
            <html><head><meta charset="utf-8">
            <meta http-equiv="Content-Security-Policy" content="connect-src \(broker) \(socket); script-src 'unsafe-inline' \(broker)">
            <title>Preload demo page</title>
            <script src="\(broker)/bridge.js" data-loading-bar></script>
            \(links)
            </head><body style="font-family: system-ui, sans-serif">
            <h1>A page with \(Self.demoResources(request.query).count) resources</h1>
            <p id="result">loading…</p>
            <script>
            (async () => {
              await BridgeBroker.ready;
              const links = [...document.querySelectorAll('link[rel="preload"]')];
              const started = performance.now();
              const sizes = await Promise.all(links.map(async (link) => (await (await fetch(link.href)).arrayBuffer()).byteLength));
              const done = performance.now();
              const navigation = performance.getEntriesByType("navigation")[0];
              window.preloadDemo = {resources: links.length, bytes: sizes.reduce((a, b) => a + b, 0),
                                    fetchMs: done - started, loadMs: done, readyMs: started,
                                    documentMs: navigation ? navigation.responseEnd : null};
              document.getElementById("result").textContent =
                `${links.length} resources, ${window.preloadDemo.bytes} bytes: loaded ${Math.round(done)} ms after navigation`;
              if (parent !== window) parent.postMessage({preloadDemo: window.preloadDemo}, "*");
            })().catch((error) => { window.preloadDemo = {error: String(error)}; });
            </script>
            </body></html>
            """
        send(context, status: .ok, type: "text/html; charset=utf-8", body: Array(html.utf8), head: request.head,
             extra: request.query["page-cc"].map { [("Cache-Control", $0)] } ?? [])
    }

    /// `/manifest?n=30&size=4096&max-age=600`: the same resources as `/page`, as a preload
    /// manifest (`{"resources": [...]}`).
    func respondManifest(_ context: ChannelHandlerContext, to request: OriginRequest) {
        let entries = Self.demoResources(request.query).map { "\"\($0)\"" }.joined(separator: ",")
        send(context, status: .ok, type: "application/json", body: Array(#"{"resources":[\#(entries)]}"#.utf8), head: request.head)
    }
}

extension String {
    /// The string with `&` written as `&amp;`, as an HTML attribute value should have it.
    var replacingAmpersands: String { split(separator: "&", omittingEmptySubsequences: false).joined(separator: "&amp;") }
}
