/// What to do once the network answered a `.revalidate` or `.fetch` plan.
public struct ResponseDecision: Sendable, Hashable {
    /// What the client receives.
    public enum Source: Sendable, Hashable {
        /// The network response (its body streams through).
        case network
        /// This stored response (304 freshening, or stale-if-error); body from storage.
        case stored(CachedResponse)
        /// The network error.
        case networkError
        /// A 304 that does not match the validated entry: repeat the request unconditionally
        /// (plan with mode `.reload`).
        case retryUnconditionally
        /// A 206 completing a stored partial response: the stored bytes and the network's
        /// combine into a new entry, and the client is served from the combination.
        case combined(PartialCombination)
    }

    /// What the client receives.
    public var source: Source
    /// The headers to send with it (network headers or prepared stored headers, each with
    /// `Cache-Status` appended; empty for `networkError` and `retryUnconditionally`).
    public var headers: HeaderList
    /// The cache write to perform.
    public var write: CacheWrite
    /// Primary keys whose stored responses (all variants) must be invalidated.
    public var invalidate: [String]
    /// The reply's cache status.
    public var status: ReplyCacheStatus
    /// The `Cache-Status` member (also already in `headers` when applicable).
    public var cacheStatus: CacheStatusEntry
    /// For a `.stored` source: the client's byte range to serve from the stored body.
    public var range: ByteRangeSpec? = nil
}

/// A stored partial response and a 206 of the same representation (same strong validator)
/// whose spans touch, combined into one entry (RFC 9111 §3.4).
public struct PartialCombination: Sendable, Hashable {
    /// The new entry: the stored headers updated by the 206's, with the union's
    /// `Content-Range` (status 206), or made whole (status 200, `Content-Length`).
    public var entry: CachedResponse
    /// The stored partial entry, whose body supplies `storedSpan`.
    public var base: CachedResponse
    /// The bytes the stored body holds.
    public var storedSpan: ClosedRange<Int>
    /// The bytes the network body carries.
    public var networkSpan: ClosedRange<Int>
    /// The bytes the client gets: a 206 of this range, or the whole 200 when nil.
    public var served: ClosedRange<Int>?
    /// The representation's length.
    public var completeLength: Int

    /// The bytes the new entry holds.
    public var union: ClosedRange<Int> {
        min(storedSpan.lowerBound, networkSpan.lowerBound)...max(storedSpan.upperBound, networkSpan.upperBound)
    }
}
