/// Decides how a request uses the cache (`plan`) and what to do with the network's answer
/// (`decide`, in `CachePlanner+Response.swift`), following RFC 9111, RFC 5861, RFC 8246 and
/// the Fetch standard's HTTP-network-or-cache fetch.
///
/// Pure: no storage, no I/O, no clock. The caller passes every stored response for the URL
/// (`CacheKey.primary(for:)`), the current time, and later the network outcome.
///
/// `immutable` (RFC 8246): a fresh immutable response is served without a conditional request
/// even when the client asks for a normal reload — `no-cache` mode or a request `max-age`
/// (e.g. `max-age=0`). An explicit end-to-end reload still goes to the network: `reload` and
/// `no-store` modes, and request `no-cache`/`Pragma: no-cache` (what a browser's force-reload
/// sends). A response `no-cache` always wins over `immutable`; stale immutable responses are
/// treated like any other.
public struct CachePlanner: Sendable {
    /// The policy options used by every decision.
    public var options: CachePolicyOptions

    /// Creates a planner with the given options.
    public init(options: CachePolicyOptions = CachePolicyOptions()) {
        self.options = options
    }

    /// Plans how to satisfy `request` in `mode` given the stored responses for its URL at `now`.
    ///
    /// `isBackgroundRevalidation` marks the stale-while-revalidate follow-up request: use it
    /// with mode `.noCache`; it then adds no `Cache-Control` header (Fetch's "prevent no-cache
    /// cache-control header modification flag").
    public func plan(
        request: CacheRequest, mode: CacheMode, storedCandidates: [CachedResponse],
        now: Double, isBackgroundRevalidation: Bool = false
    ) -> CachePlan {
        let requestDirectives = RequestDirectives(headers: request.headers)
        let mayStore = !requestDirectives.noStore
        guard request.method == "GET" else {
            return .fetch(NetworkFetch(
                modeHeaders: HeaderList(), mayStore: false, fallback: nil, forward: .method,
                reply: .bypass))
        }
        let mode = mode == .default && request.hasConditionalHeaders ? .noStore : mode
        switch mode {
        case .noStore, .reload:
            var extra = HeaderList()
            if !request.headers.contains("pragma") { extra.add("pragma", "no-cache") }
            if !request.headers.contains("cache-control") { extra.add("cache-control", "no-cache") }
            return .fetch(NetworkFetch(
                modeHeaders: extra, mayStore: mode == .reload && mayStore, fallback: nil,
                forward: mode == .noStore ? .bypass : .request, reply: .bypass))
        case .default, .noCache, .forceCache, .onlyIfCached, .freshOnly:
            break
        }
        var extra = HeaderList()
        if mode == .noCache, !isBackgroundRevalidation, !request.headers.contains("cache-control") {
            extra.add("cache-control", "max-age=0")
        }
        // Never the network: no stored response, or one that would need it, fails.
        let onlyIfCached = mode == .onlyIfCached || mode == .freshOnly || requestDirectives.onlyIfCached
        guard let entry = select(request: request, from: storedCandidates) else {
            if onlyIfCached { return .fail(.notCached) }
            return .fetch(NetworkFetch(
                modeHeaders: extra, mayStore: mayStore, fallback: nil,
                forward: storedCandidates.isEmpty ? .uriMiss : .varyMiss, reply: .miss))
        }
        // A single range is served from the stored body; several are served whole (200).
        var servedRange: ByteRangeSpec?
        if case .single(let spec) = RangeRequest(headers: request.headers) { servedRange = spec }
        if entry.isPartial || (servedRange != nil && !entry.isRangeServable) {
            if let plan = planRange(
                entry: entry, request: request, mode: mode, extra: extra, mayStore: mayStore,
                onlyIfCached: onlyIfCached)
            {
                return plan
            }
        }
        let freshness = entry.freshness(at: now, options: options)
        if mode == .forceCache || mode == .onlyIfCached {
            return serve(entry, freshness, background: false, detail: mode.rawValue, range: servedRange)
        }
        let outcome = evaluate(
            entry, freshness, requestDirectives, validateAlways: mode == .noCache,
            allowBackground: mode == .default)
        switch outcome {
        case .serve(let background, let detail):
            // fresh-only serves what needs no network at all, not even a background revalidation.
            if mode == .freshOnly, background { return .fail(.notCached) }
            return serve(entry, freshness, background: background, detail: detail, range: servedRange)
        case .forward(let reason):
            if onlyIfCached { return .fail(.notCached) }
            let validators = Validation.conditionalHeaders(for: entry)
            if validators.isEmpty {
                return .fetch(NetworkFetch(
                    modeHeaders: extra, mayStore: mayStore, fallback: entry, forward: reason,
                    reply: .miss))
            }
            return .revalidate(ConditionalFetch(
                entry: entry, conditionalHeaders: validators, modeHeaders: extra,
                mayStore: mayStore, forward: reason, range: servedRange))
        }
    }

    /// The stored response selected for `request`: Vary must match; among several, the most
    /// recent by `Date` (then by response time) wins (RFC 9111 §4.1).
    public func select(request: CacheRequest, from candidates: [CachedResponse]) -> CachedResponse? {
        candidates.filter { $0.matches(requestHeaders: request.headers) }.max { a, b in
            let dateA = Freshness.dateValue(headers: a.headers, responseTime: a.responseTime)
            let dateB = Freshness.dateValue(headers: b.headers, responseTime: b.responseTime)
            return dateA != dateB ? dateA < dateB : a.responseTime < b.responseTime
        }
    }

    /// The result of checking a selected response against response and request directives.
    enum Evaluation {
        case serve(background: Bool, detail: String?)
        case forward(CacheStatusEntry.Forward)
    }

    /// Applies the reuse rules of RFC 9111 §4.2–4.2.4, §5.2 and RFC 5861/8246 to one entry.
    func evaluate(
        _ entry: CachedResponse, _ freshness: Freshness, _ request: RequestDirectives,
        validateAlways: Bool, allowBackground: Bool
    ) -> Evaluation {
        let response = entry.directives
        let fresh = freshness.isFresh
        let immutableFresh = response.immutable && fresh && !response.noCache
        let demanded: CacheStatusEntry.Forward = fresh ? .request : .stale
        if response.noCache { return .forward(.stale) }
        if validateAlways && !immutableFresh { return .forward(demanded) }
        if request.noCache { return .forward(demanded) }
        if let maxAge = request.maxAge, !immutableFresh,
           !(maxAge > 0 && freshness.currentAge <= maxAge)
        {
            return .forward(demanded)
        }
        if let minFresh = request.minFresh, fresh, freshness.timeToLive < minFresh {
            return .forward(.request)
        }
        if fresh { return .serve(background: false, detail: nil) }
        if response.mustRevalidate { return .forward(.stale) }
        if let maxStale = request.maxStale, maxStale.accepts(staleness: freshness.staleness) {
            return .serve(background: false, detail: "max-stale")
        }
        if allowBackground, let window = response.staleWhileRevalidate,
           freshness.staleness <= window
        {
            return .serve(background: true, detail: "stale-while-revalidate")
        }
        return .forward(.stale)
    }

    /// Builds a `.serveStored` plan with its `Cache-Status`.
    func serve(
        _ entry: CachedResponse, _ freshness: Freshness, background: Bool, detail: String?,
        range: ByteRangeSpec? = nil
    ) -> CachePlan {
        let fresh = freshness.isFresh
        let status = CacheStatusEntry(
            cacheName: options.cacheName, hit: true, ttl: CacheStatusEntry.ttl(freshness.timeToLive),
            detail: fresh ? nil : detail)
        return .serveStored(StoredReply(
            entry: entry, status: fresh ? .hit : .stale, freshness: freshness,
            backgroundRevalidation: background, cacheStatus: status, range: range))
    }
}
