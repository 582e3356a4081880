/// A request as the cache policy sees it: method, absolute URL and the headers as sent.
///
/// The method is normalised like the Fetch standard does (`get` → `GET` for the six standard
/// methods); other methods stay case-sensitive. Only `GET` is read from or written to the cache.
public struct CacheRequest: Sendable, Hashable {
    /// The request method, normalised.
    public var method: String
    /// The absolute target URL (the cache's primary key, see `CacheKey.primary(for:)`).
    public var url: String
    /// The request headers the client supplied (before the planner's additions).
    public var headers: HeaderList

    /// Creates a request; standard method names are uppercased.
    public init(method: String = "GET", url: String, headers: HeaderList = HeaderList()) {
        let upper = method.uppercased()
        let standard: Set<String> = ["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"]
        self.method = standard.contains(upper) ? upper : method
        self.url = url
        self.headers = headers
    }

    /// Whether the method is safe (RFC 9110 §9.2.1: GET, HEAD, OPTIONS, TRACE).
    ///
    /// Unknown methods are unsafe, so their successful responses invalidate (RFC 9111 §4.4).
    public var isSafe: Bool { ["GET", "HEAD", "OPTIONS", "TRACE"].contains(method) }

    /// Whether the request carries a precondition header (If-Match, If-None-Match,
    /// If-Modified-Since, If-Unmodified-Since, If-Range).
    ///
    /// The Fetch standard switches the `default` mode to `no-store` for such requests.
    public var hasConditionalHeaders: Bool {
        ["if-match", "if-none-match", "if-modified-since", "if-unmodified-since", "if-range"]
            .contains { headers.contains($0) }
    }
}
