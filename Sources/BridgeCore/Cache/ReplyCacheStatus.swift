/// The broker's summary of how a reply was produced, for logs and the client API.
public enum ReplyCacheStatus: String, Sendable, Hashable, CaseIterable {
    /// A fresh stored response was served without contacting the origin.
    case hit
    /// The cache was consulted and the network response was served.
    case miss
    /// A stored response was validated with the origin (304) and served.
    case revalidated
    /// A stale stored response was served (max-stale, stale-while-revalidate, stale-if-error,
    /// force-cache, only-if-cached).
    case stale
    /// The cache was not read (non-GET method, `no-store` or `reload` mode, precondition headers).
    case bypass
}
