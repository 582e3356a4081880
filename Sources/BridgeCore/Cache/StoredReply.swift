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
    /// The client's single byte range, served as a 206 (or a 416) from the stored body; nil
    /// serves the whole stored response.
    public var range: ByteRangeSpec?
    /// The headers to send: stored headers without cookies (and, unless revalidated, without the
    /// fields qualified `no-cache`/`private` name), with `Age` and `Cache-Status`.
    public var headers: HeaderList

    /// Creates a reply, building the client headers from the entry.
    public init(
        entry: CachedResponse, status: ReplyCacheStatus, freshness: Freshness,
        backgroundRevalidation: Bool, cacheStatus: CacheStatusEntry, range: ByteRangeSpec? = nil
    ) {
        self.range = range
        self.entry = entry
        self.status = status
        self.freshness = freshness
        self.backgroundRevalidation = backgroundRevalidation
        self.cacheStatus = cacheStatus
        var headers = Storability.headersForServing(
            entry.headers, age: freshness.ageHeaderValue, revalidated: status == .revalidated)
        headers.add("cache-status", cacheStatus.headerValue)
        self.headers = headers
    }

    /// The `Age` header value sent (whole seconds of current age).
    public var age: Int { freshness.ageHeaderValue }
}
