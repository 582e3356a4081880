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
}
