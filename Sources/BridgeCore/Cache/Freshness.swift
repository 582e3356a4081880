/// The freshness lifetime and current age of a stored response at a given time (RFC 9111 §4.2).
///
/// Lifetime: `max-age` (invalid or conflicting → 0), else `Expires` − `Date` (invalid or
/// conflicting `Expires` → 0; missing/invalid `Date` → response time), else heuristic
/// `heuristicFraction` × (`Date` − `Last-Modified`), capped at `heuristicCap`, only for
/// heuristically cacheable statuses or `public` responses. `s-maxage` is ignored (private cache).
/// Age follows §4.2.3 exactly; an invalid `Age` header is ignored (taken as 0).
public struct Freshness: Sendable, Hashable {
    /// Where the freshness lifetime came from.
    public enum Source: String, Sendable, Hashable {
        /// The `max-age` directive.
        case maxAge = "max-age"
        /// `Expires` minus `Date`.
        case expires
        /// A heuristic from `Last-Modified`.
        case heuristic
        /// No explicit or heuristic freshness: stale on arrival.
        case none
    }

    /// The freshness lifetime in seconds.
    public let lifetime: Double
    /// What determined `lifetime`.
    public let source: Source
    /// The current age in seconds (`current_age`).
    public let currentAge: Double

    /// Creates a freshness value from its parts.
    public init(lifetime: Double, source: Source, currentAge: Double) {
        self.lifetime = lifetime
        self.source = source
        self.currentAge = currentAge
    }

    /// Computes freshness of a stored response at `now`.
    public init(response: CachedResponse, now: Double, options: CachePolicyOptions) {
        let (lifetime, source) = Freshness.lifetime(
            status: response.status, headers: response.headers,
            responseTime: response.responseTime, options: options)
        self.init(
            lifetime: lifetime, source: source,
            currentAge: Freshness.currentAge(
                headers: response.headers, requestTime: response.requestTime,
                responseTime: response.responseTime, now: now))
    }

    /// Whether the response is fresh: lifetime strictly greater than current age.
    public var isFresh: Bool { lifetime > currentAge }
    /// Remaining freshness in seconds (negative once stale).
    public var timeToLive: Double { lifetime - currentAge }
    /// Seconds past expiry (0 while fresh).
    public var staleness: Double { max(0, currentAge - lifetime) }
    /// The `Age` header value to send: whole seconds of current age, clamped to 2^31.
    public var ageHeaderValue: Int { Int(min(max(0, currentAge), DeltaSeconds.maximum)) }

    /// The statuses that are heuristically cacheable by default (RFC 9110 §15.1).
    public static let heuristicallyCacheableStatuses: Set<Int> =
        [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]

    /// The freshness lifetime and its source for a response (RFC 9111 §4.2.1, §4.2.2).
    public static func lifetime(
        status: Int, headers: HeaderList, responseTime: Double, options: CachePolicyOptions
    ) -> (Double, Source) {
        let directives = ResponseDirectives(headers: headers)
        if let maxAge = directives.maxAge { return (maxAge, .maxAge) }
        let date = dateValue(headers: headers, responseTime: responseTime)
        let expiresLines = headers.values("expires")
        if !expiresLines.isEmpty {
            let parsed = expiresLines.map { HTTPDate.parse($0, now: responseTime) }
            guard let expires = parsed[0], parsed.allSatisfy({ $0 == expires }) else {
                return (0, .expires)
            }
            return (min(max(0, expires - date), DeltaSeconds.maximum), .expires)
        }
        guard heuristicallyCacheableStatuses.contains(status) || directives.isPublic,
              let modifiedText = headers.first("last-modified"),
              let modified = HTTPDate.parse(modifiedText, now: responseTime), modified <= date
        else { return (0, .none) }
        return (min((date - modified) * options.heuristicFraction, options.heuristicCap), .heuristic)
    }

    /// The `date_value`: the `Date` header, or the response time when missing or invalid.
    public static func dateValue(headers: HeaderList, responseTime: Double) -> Double {
        headers.first("date").flatMap { HTTPDate.parse($0, now: responseTime) } ?? responseTime
    }

    /// The `age_value`: the first `Age` member if it is `1*DIGIT` (clamped to 2^31), else 0.
    ///
    /// Like Chromium, `Age: 10, 20` uses 10, and `-5`, `1.5`, `abc` are ignored.
    public static func ageValue(headers: HeaderList) -> Double {
        guard let first = headers.listMembers("age").first else { return 0 }
        return DeltaSeconds.parse(first) ?? 0
    }

    /// `current_age` per RFC 9111 §4.2.3 (negative intervals from clock skew are clamped to 0).
    public static func currentAge(
        headers: HeaderList, requestTime: Double, responseTime: Double, now: Double
    ) -> Double {
        let apparentAge = max(0, responseTime - dateValue(headers: headers, responseTime: responseTime))
        let responseDelay = max(0, responseTime - requestTime)
        let correctedAgeValue = ageValue(headers: headers) + responseDelay
        let correctedInitialAge = max(apparentAge, correctedAgeValue)
        let residentTime = max(0, now - responseTime)
        return correctedInitialAge + residentTime
    }
}
