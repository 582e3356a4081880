import Foundation

/// The `preload` handler: fetches resources into the HTTP cache ahead of use.
///
/// Resources come from `urls`, a page's preload links and a manifest; each goes through the
/// same URL rules and `HTTPCache` as a `fetch` (a fetch for a URL a preload is fetching joins
/// that transfer through the cache's request collapsing). See `PreloadRequest` for the options
/// and docs/PROTOCOL.md for the events and reply.
public struct PreloadHandler: BridgeHandler {
    /// The fetch path resources go through: its upstream, URL rules and cache.
    public let fetch: FetchHandler
    /// Where a page's preload records the resources it stored, for `page.preloaded`.
    public let pages: PreloadedPages?

    /// The largest page or manifest a preload reads.
    public static let maxDocumentBytes = 8 * 1024 * 1024

    /// Creates the handler over the broker's `fetch` handler; a page's preload records its
    /// resources in `pages`.
    public init(fetch: FetchHandler, pages: PreloadedPages? = nil) {
        self.fetch = fetch
        self.pages = pages
    }

    public func handle(_ call: HandlerCall) async throws -> JSONValue {
        let request = try PreloadRequest(json: call.body)
        let started = ContinuousClock.now
        let run = PreloadRun(call: call, request: request, fetch: fetch)
        var listed = request.urls
        var outcomes: [PreloadOutcome] = []
        var sources: [JSONValue] = []
        if let page = request.page {
            let resource = PreloadResource(url: page, priority: PreloadResource.defaultPriority, source: "page")
            if request.includePage { run.expect(1) }
            let (outcome, bytes) = await run.load(
                resource, mode: request.includePage ? .default : .noStore, keepBody: true, reporting: request.includePage)
            if request.includePage { outcomes.append(outcome) }
            let links = bytes.map { HTMLLinks.extract(html: String(decoding: $0, as: UTF8.self), pageURL: page) } ?? []
            for link in links {
                guard let url = link.url, let normalized = try? FetchRequest.normalize(url: url) else {
                    outcomes.append(PreloadOutcome(resource: PreloadResource(url: link.href, priority: link.priority, source: "page"), result: .skipped, reason: "invalid_url"))
                    continue
                }
                listed.append(PreloadResource(url: normalized, priority: link.priority, source: "page"))
            }
            sources.append(Self.source("page", outcome, found: links.count))
        }
        if let manifest = request.manifest {
            let resource = PreloadResource(url: manifest, priority: PreloadResource.defaultPriority, source: "manifest")
            var (outcome, bytes) = await run.load(resource, mode: .noStore, keepBody: true, reporting: false)
            var found: [PreloadResource] = []
            if let bytes, outcome.status.map({ (200..<300).contains($0) }) ?? false {
                do { found = try PreloadManifest.resources(from: bytes, url: manifest) } catch { outcome.error = error }
            }
            listed += found
            sources.append(Self.source("manifest", outcome, found: found.count))
        }
        let plan = PreloadPlan(listed, order: request.order, maxCount: request.maxCount, exclude: Set(outcomes.map(\.resource.url)))
        run.expect(plan.fetch.count + plan.skipped.count)
        for skipped in plan.skipped { await run.report(skipped, state: "skipped") }
        outcomes += await run.fetchAll(plan.fetch)
        outcomes += plan.skipped
        // Entries commit just after their last byte: wait, so a page opened after the reply hits.
        await fetch.cache?.waitForPendingWrites()
        if let page = request.forPage ?? request.page, let pages {
            let usable: Set<PreloadOutcome.Result> = [.cached, .stored]
            pages.record(page: page, resources: outcomes.filter { usable.contains($0.result) && $0.resource.url != request.page }.map(\.resource.url))
        }
        let elapsed = ContinuousClock.now - started
        return [
            "resources": .array(outcomes.map(\.json)),
            "totals": PreloadTotals(outcomes).json,
            "sources": .array(sources),
            "elapsedMs": .integer(Int(elapsed / .milliseconds(1))),
        ]
    }

    private static func source(_ kind: String, _ outcome: PreloadOutcome, found: Int) -> JSONValue {
        var object = JSONObject([("kind", .string(kind)), ("url", .string(outcome.resource.url))])
        object["status"] = outcome.status.map { .integer($0) } ?? .null
        object["resources"] = .integer(found)
        if let error = outcome.error { object["error"] = error.json }
        return .object(object)
    }
}

/// The order and count budget applied to a preload's resource list.
struct PreloadPlan {
    var fetch: [PreloadResource] = []
    var skipped: [PreloadOutcome] = []

    /// Drops duplicates (and URLs in `exclude`), orders, and skips what is over `maxCount`.
    init(_ resources: [PreloadResource], order: PreloadOrder, maxCount: Int?, exclude: Set<String> = []) {
        var seen = exclude
        var unique: [PreloadResource] = []
        for resource in resources where seen.insert(resource.url).inserted { unique.append(resource) }
        if order == .priority {
            // Stable: equal priorities keep the order they were listed in.
            unique = unique.enumerated().sorted { ($0.element.priority, -$0.offset) > ($1.element.priority, -$1.offset) }.map(\.element)
        }
        let limit = min(unique.count, maxCount ?? unique.count)
        fetch = Array(unique[..<limit])
        skipped = unique[limit...].map { PreloadOutcome(resource: $0, result: .skipped, reason: "max_count") }
    }
}
