/// The response `Cache-Control` directives as a private cache interprets them.
///
/// Decisions where RFC 9111 leaves room (see §4.2.1 "either the first occurrence should be used
/// or the response should be considered stale"):
/// - `max-age`: an invalid argument (non-digits, sign, fraction, missing) or conflicting
///   duplicates (different values, within or across lines) make the response stale (0).
///   Identical duplicates are fine. Values above 2^31 are clamped to 2^31.
/// - `stale-while-revalidate` / `stale-if-error`: invalid occurrences are ignored; of several
///   valid ones the smallest (most restrictive) wins.
/// - `no-cache="field"` (qualified) is treated exactly like unqualified `no-cache`: always
///   revalidate, as browsers do. The field names are still exposed in `noCacheFields`.
/// - `s-maxage` and `proxy-revalidate` are shared-cache directives: parsed, never used for
///   freshness (only `s-maxage`'s presence matters, for the Authorization storage rule).
/// - `private` (qualified or not) does not restrict a private cache.
public struct ResponseDirectives: Sendable, Hashable {
    /// `max-age` in seconds; nil when absent, 0 when invalid or conflicting.
    public var maxAge: Double?
    /// Whether `s-maxage` appears (ignored for freshness in a private cache).
    public var hasSMaxAge: Bool
    /// Whether `no-cache` appears, qualified or not.
    public var noCache: Bool
    /// The field names listed by qualified `no-cache="..."`, lowercase.
    public var noCacheFields: [String]
    /// Whether `no-store` appears.
    public var noStore: Bool
    /// Whether `private` appears.
    public var isPrivate: Bool
    /// Whether `public` appears.
    public var isPublic: Bool
    /// Whether `must-revalidate` appears.
    public var mustRevalidate: Bool
    /// Whether `proxy-revalidate` appears (ignored by a private cache).
    public var proxyRevalidate: Bool
    /// Whether `must-understand` appears.
    public var mustUnderstand: Bool
    /// Whether `no-transform` appears (informational: this policy never transforms).
    public var noTransform: Bool
    /// Whether `immutable` (RFC 8246) appears.
    public var immutable: Bool
    /// The `stale-while-revalidate` window in seconds (RFC 5861), if valid.
    public var staleWhileRevalidate: Double?
    /// The `stale-if-error` window in seconds (RFC 5861), if valid.
    public var staleIfError: Double?

    /// Interprets parsed `Cache-Control` directives of a response.
    public init(_ cacheControl: CacheControl) {
        let cc = cacheControl
        let maxAges = cc.arguments("max-age")
        if maxAges.isEmpty {
            maxAge = nil
        } else {
            let parsed = maxAges.map { $0.flatMap(DeltaSeconds.parse) }
            let first = parsed[0]
            maxAge = parsed.allSatisfy { $0 != nil && $0 == first } ? first : 0
        }
        hasSMaxAge = cc.contains("s-maxage")
        noCache = cc.contains("no-cache")
        noCacheFields = cc.arguments("no-cache").compactMap { $0 }
            .flatMap { HeaderList.splitList($0) }.map { $0.lowercased() }
        noStore = cc.contains("no-store")
        isPrivate = cc.contains("private")
        isPublic = cc.contains("public")
        mustRevalidate = cc.contains("must-revalidate")
        proxyRevalidate = cc.contains("proxy-revalidate")
        mustUnderstand = cc.contains("must-understand")
        noTransform = cc.contains("no-transform")
        immutable = cc.contains("immutable")
        staleWhileRevalidate = ResponseDirectives.smallest(cc.arguments("stale-while-revalidate"))
        staleIfError = ResponseDirectives.smallest(cc.arguments("stale-if-error"))
    }

    /// Interprets the `Cache-Control` lines of response headers.
    public init(headers: HeaderList) {
        self.init(CacheControl(headers: headers))
    }

    /// The smallest valid delta-seconds among the arguments, or nil when none is valid.
    static func smallest(_ arguments: [String?]) -> Double? {
        arguments.compactMap { $0.flatMap(DeltaSeconds.parse) }.min()
    }
}
