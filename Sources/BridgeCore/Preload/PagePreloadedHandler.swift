/// `page.preloaded`: runs, on the post's connection, a `fresh-only` fetch of every resource the
/// last `preload` of the page stored, so that a page can ask for all of them at once before its
/// script runs (an early request at the shim's start, docs/PROTOCOL.md).
///
/// The body: `page` (the page's URL), `firstId` (the id of the first of those fetches; the i-th
/// resource's fetch has id `firstId + i`, ids the client keeps free) and `fetch`, the body every
/// fetch takes, with its `url` and `cache` set here and any `body` dropped. The reply lists the
/// resources' URLs in id order; each fetch answers on its own, as if the client had posted it.
public struct PagePreloadedHandler: ImmediateBridgeHandler {
    /// What each page's preload stored.
    public let pages: PreloadedPages

    /// Creates the handler over the broker's record of preloaded pages.
    public init(pages: PreloadedPages) {
        self.pages = pages
    }

    public func handleImmediately(_ call: HandlerCall) -> ImmediateReply? {
        do { return .body(try run(call)) } catch { return .failure(error) }
    }

    public func handle(_ call: HandlerCall) async throws -> JSONValue {
        try run(call)
    }

    private func run(_ call: HandlerCall) throws(BridgeError) -> JSONValue {
        guard case .object(let body) = call.body else { throw BridgeError(.badRequest, "page.preloaded needs an object body") }
        guard call.id != nil else { throw BridgeError(.badRequest, "page.preloaded needs an id: its reply lists the resources") }
        guard let page = try FetchRequest.string(body, "page") else { throw BridgeError(.badRequest, "page.preloaded needs a \"page\"") }
        guard let firstId = try FetchRequest.integer(body, "firstId"), firstId >= 0, firstId <= Int(Int32.max) else {
            throw BridgeError(.badRequest, "page.preloaded needs a \"firstId\": a non-negative integer")
        }
        var template = JSONObject()
        switch body["fetch"] {
        case nil, .null?: break
        case .object(let object)?: template = object
        case let other?: throw BridgeError(.badRequest, "\"fetch\" must be an object, not \(other.typeName)")
        }
        template["body"] = nil
        template["cache"] = .string(CacheMode.freshOnly.rawValue)
        let urls = pages.resources(of: try FetchRequest.normalize(url: page))
        for (index, url) in urls.enumerated() {
            var fetch = template
            fetch["url"] = .string(url)
            call.connection.receive(.post(name: "fetch", id: firstId + index, body: .object(fetch)))
        }
        return ["urls": .array(urls.map { .string($0) })]
    }
}
