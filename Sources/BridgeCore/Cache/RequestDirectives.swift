/// The request `Cache-Control` directives (plus `Pragma: no-cache`) a cache honours.
///
/// Duplicates resolve to the most restrictive value: the smallest `max-age`, the smallest
/// `max-stale` (a valued one beats a bare one), the largest `min-fresh`. An invalid `max-age`
/// counts as 0 (revalidate); an invalid `max-stale`, `min-fresh` or `stale-if-error` is ignored
/// (invalid as in `CacheControl`: a bad argument, or whitespace around `=`).
/// `Pragma: no-cache` counts as `no-cache` only when the request has no `Cache-Control` line
/// (RFC 9111 §5.4).
public struct RequestDirectives: Sendable, Hashable {
    /// How much staleness `max-stale` accepts.
    public enum MaxStale: Sendable, Hashable {
        /// Bare `max-stale`: any staleness.
        case unlimited
        /// `max-stale=N`: at most N seconds past expiry.
        case seconds(Double)

        /// Whether a response stale by `staleness` seconds is acceptable.
        public func accepts(staleness: Double) -> Bool {
            switch self {
            case .unlimited: return true
            case .seconds(let limit): return staleness <= limit
            }
        }
    }

    /// `max-age` in seconds; nil when absent.
    public var maxAge: Double?
    /// `max-stale`, if present and valid.
    public var maxStale: MaxStale?
    /// `min-fresh` in seconds, if present and valid.
    public var minFresh: Double?
    /// `no-cache`, or `Pragma: no-cache` without any `Cache-Control` line.
    public var noCache: Bool
    /// Whether `no-store` appears: the response must not be stored.
    public var noStore: Bool
    /// Whether `only-if-cached` appears: never contact the network.
    public var onlyIfCached: Bool
    /// The request's `stale-if-error` window in seconds (RFC 5861), if valid.
    public var staleIfError: Double?

    /// Interprets the `Cache-Control` and `Pragma` lines of request headers.
    public init(headers: HeaderList) {
        let cc = CacheControl(headers: headers)
        let maxAges = cc.arguments("max-age").map { $0.flatMap(DeltaSeconds.parse) ?? 0 } + (cc.hasInvalid("max-age") ? [0] : [])
        maxAge = maxAges.min()
        var stale: MaxStale?
        for argument in cc.arguments("max-stale") {
            let next: MaxStale
            if let argument {
                guard let seconds = DeltaSeconds.parse(argument) else { continue }
                next = .seconds(seconds)
            } else {
                next = .unlimited
            }
            switch (stale, next) {
            case (nil, _), (.unlimited?, _): stale = next
            case (.seconds(let a)?, .seconds(let b)): stale = .seconds(min(a, b))
            case (.seconds?, .unlimited): break
            }
        }
        maxStale = stale
        minFresh = cc.arguments("min-fresh").compactMap { $0.flatMap(DeltaSeconds.parse) }.max()
        let pragmaNoCache = !headers.contains("cache-control")
            && headers.listMembers("pragma").contains { $0.lowercased() == "no-cache" }
        noCache = cc.contains("no-cache") || pragmaNoCache
        noStore = cc.contains("no-store")
        onlyIfCached = cc.contains("only-if-cached")
        staleIfError = ResponseDirectives.smallest(cc.arguments("stale-if-error"))
    }
}
