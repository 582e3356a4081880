/// A stored response ready to serve.
public struct StoredReply: Sendable, Hashable {
    /// The stored response to serve (its body is in storage under `entry.id`).
    public var entry: CachedResponse
    /// `.hit` when fresh, `.stale` when served stale.
    public var status: ReplyCacheStatus
    /// Freshness at decision time.
    public var freshness: Freshness
    /// Whether the caller must revalidate in the background (stale-while-revalidate): run
    /// `plan(mode: .noCache, isBackgroundRevalidation: true)` and `decide` on its result.
    public var backgroundRevalidation: Bool
    /// The `Cache-Status` member for this reply.
    public var cacheStatus: CacheStatusEntry
    /// The headers to send: stored headers without cookies, with `Age` and `Cache-Status`.
    public var headers: HeaderList

    /// Creates a reply, building the client headers from the entry.
    public init(
        entry: CachedResponse, status: ReplyCacheStatus, freshness: Freshness,
        backgroundRevalidation: Bool, cacheStatus: CacheStatusEntry
    ) {
        self.entry = entry
        self.status = status
        self.freshness = freshness
        self.backgroundRevalidation = backgroundRevalidation
        self.cacheStatus = cacheStatus
        var headers = Storability.headersForServing(entry.headers, age: freshness.ageHeaderValue)
        headers.add("cache-status", cacheStatus.headerValue)
        self.headers = headers
    }

    /// The `Age` header value sent (whole seconds of current age).
    public var age: Int { freshness.ageHeaderValue }
}
