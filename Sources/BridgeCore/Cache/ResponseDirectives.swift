/// The response `Cache-Control` directives as a private cache interprets them.
///
/// Decisions where RFC 9111 leaves room (see §4.2.1 "either the first occurrence should be used
/// or the response should be considered stale"; "the most restrictive directive should be
/// honored"; invalid freshness information is "encouraged" to mean stale):
/// - `max-age`: an invalid occurrence (non-digits, sign, fraction, missing argument, whitespace
///   around `=`) or conflicting duplicates (different values, within or across lines) make the
///   response stale (0). Identical duplicates are fine. Values above 2^31 are clamped to 2^31.
/// - `stale-while-revalidate` / `stale-if-error`: invalid occurrences are ignored; of several
///   valid ones the smallest (most restrictive) wins.
/// - `no-cache="field, ..."` (qualified, RFC 9111 §5.2.2.4): the response is served from
///   storage without revalidation, but without the named fields (`noCacheFields`); after a
///   revalidation they are served. Unqualified `no-cache` — or an invalid one, or a qualified one
///   with an empty list — means always revalidate (`noCache`), and wins over qualified ones.
/// - `private="field, ..."` (qualified, §5.2.2.7) restricts only a shared cache by the RFC; the
///   broker may serve several apps, so it treats the named fields like qualified `no-cache`:
///   never replayed from storage without revalidation (`privateFields`). Unqualified `private`
///   does not restrict a private cache.
/// - `s-maxage` and `proxy-revalidate` are shared-cache directives: parsed, never used for
///   freshness (only `s-maxage`'s presence matters, for the Authorization storage rule).
/// - Boolean directives count even when written invalidly (`no-store =1` is `no-store`).
public struct ResponseDirectives: Sendable, Hashable {
    /// `max-age` in seconds; nil when absent, 0 when invalid or conflicting.
    public var maxAge: Double?
    /// Whether `s-maxage` appears (ignored for freshness in a private cache).
    public var hasSMaxAge: Bool
    /// Whether the response must be revalidated before every reuse: unqualified `no-cache`
    /// (or an invalid or empty qualified one).
    public var noCache: Bool
    /// The field names listed by valid qualified `no-cache="..."`, lowercase.
    public var noCacheFields: [String]
    /// The field names listed by valid qualified `private="..."`, lowercase.
    public var privateFields: [String]
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
        if cc.hasInvalid("max-age") {
            maxAge = 0
        } else if maxAges.isEmpty {
            maxAge = nil
        } else {
            let parsed = maxAges.map { $0.flatMap(DeltaSeconds.parse) }
            let first = parsed[0]
            maxAge = parsed.allSatisfy { $0 != nil && $0 == first } ? first : 0
        }
        hasSMaxAge = cc.contains("s-maxage")
        let noCacheArguments = cc.arguments("no-cache")
        noCacheFields = ResponseDirectives.fieldNames(noCacheArguments)
        noCache = cc.hasInvalid("no-cache")
            || noCacheArguments.contains { $0 == nil || ResponseDirectives.fieldNames([$0]).isEmpty }
        privateFields = ResponseDirectives.fieldNames(cc.arguments("private"))
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

    /// The fields a stored response must not serve without revalidation (qualified `no-cache`
    /// and `private`), lowercase.
    public var restrictedFields: Set<String> { Set(noCacheFields).union(privateFields) }

    /// The lowercase field names listed by qualified arguments (nil arguments list none).
    static func fieldNames(_ arguments: [String?]) -> [String] {
        arguments.compactMap { $0 }.flatMap { HeaderList.splitList($0) }.map { $0.lowercased() }.filter { !$0.isEmpty }
    }

    /// The smallest valid delta-seconds among the arguments, or nil when none is valid.
    static func smallest(_ arguments: [String?]) -> Double? {
        arguments.compactMap { $0.flatMap(DeltaSeconds.parse) }.min()
    }
}
