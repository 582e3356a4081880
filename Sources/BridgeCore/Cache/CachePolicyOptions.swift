/// Tunables of the cache policy; the defaults are the documented broker behaviour.
///
/// Pass the same value to every call for consistent decisions.
public struct CachePolicyOptions: Sendable, Hashable {
    /// The cache name used in `Cache-Status` (RFC 9211).
    public var cacheName: String
    /// The fraction of (Date − Last-Modified) used as heuristic freshness (RFC 9111 §4.2.2).
    public var heuristicFraction: Double
    /// The upper bound of heuristic freshness, in seconds (default one week, like Firefox;
    /// Chromium has no cap). Explicit freshness is never capped.
    public var heuristicCap: Double
    /// Whether a response to a request with `Authorization` is stored only when the response
    /// has `public`, `must-revalidate` or `s-maxage` (RFC 9111 §3.5).
    ///
    /// RFC 9111 requires this of shared caches only; it is on by default because a broker may
    /// serve several principals. Turn it off for a strictly per-user cache.
    public var restrictAuthorizedResponses: Bool
    /// How many bytes between a stored partial response and a requested range the cache
    /// fetches too, to keep one contiguous stored span; a range farther away is fetched alone
    /// and replaces the stored part.
    public var partialGapLimit: Int

    /// Creates options; every parameter has the documented default.
    public init(
        cacheName: String = "bridge-broker", heuristicFraction: Double = 0.1,
        heuristicCap: Double = 604_800, restrictAuthorizedResponses: Bool = true,
        partialGapLimit: Int = 1 << 20
    ) {
        self.partialGapLimit = partialGapLimit
        self.cacheName = cacheName
        self.heuristicFraction = heuristicFraction
        self.heuristicCap = heuristicCap
        self.restrictAuthorizedResponses = restrictAuthorizedResponses
    }
}
