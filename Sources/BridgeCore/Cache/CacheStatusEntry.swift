/// One RFC 9211 `Cache-Status` list member, serialised by `headerValue`.
///
/// Example values: `bridge-broker; hit; ttl=42`, `bridge-broker; fwd=uri-miss; fwd-status=200;
/// stored`, `bridge-broker; fwd=stale; fwd-status=304; ttl=60`. Parameters are written in the
/// RFC's order; `detail` is a quoted sf-string; `ttl` may be negative (stale served).
public struct CacheStatusEntry: Sendable, Hashable {
    /// Why the request went forward (RFC 9211 §2.2).
    public enum Forward: String, Sendable, Hashable {
        /// The cache was configured not to handle the request (`no-store` mode, preconditions).
        case bypass
        /// The method must be forwarded (anything but GET).
        case method
        /// Nothing stored for the URL.
        case uriMiss = "uri-miss"
        /// Responses stored for the URL, none selected by Vary.
        case varyMiss = "vary-miss"
        /// No matching response (generic).
        case miss
        /// A fresh response was selected but the request (mode or directives) forbade its use.
        case request
        /// The selected response was stale (or needed validation by its own directives).
        case stale
        /// Only part of the response was stored.
        case partial
    }

    /// The cache name (default `bridge-broker`).
    public var cacheName: String
    /// Whether the reply was served without forwarding (`hit`).
    public var hit: Bool
    /// The `fwd` reason, when the request was forwarded.
    public var forward: Forward?
    /// The `fwd-status` from the next hop.
    public var forwardStatus: Int?
    /// The `ttl` in seconds (negative when a stale response was served).
    public var ttl: Int?
    /// Whether the cache stored the forwarded response (`stored`).
    public var stored: Bool
    /// Free-form `detail`.
    public var detail: String?

    /// Creates an entry; unset parameters are omitted from `headerValue`.
    public init(
        cacheName: String = "bridge-broker", hit: Bool = false, forward: Forward? = nil,
        forwardStatus: Int? = nil, ttl: Int? = nil, stored: Bool = false, detail: String? = nil
    ) {
        self.cacheName = cacheName
        self.hit = hit
        self.forward = forward
        self.forwardStatus = forwardStatus
        self.ttl = ttl
        self.stored = stored
        self.detail = detail
    }

    /// The serialised list member, e.g. `bridge-broker; fwd=miss; stored`.
    public var headerValue: String {
        var text = CacheStatusEntry.isToken(cacheName) ? cacheName : CacheStatusEntry.quoted(cacheName)
        if hit { text += "; hit" }
        if let forward { text += "; fwd=\(forward.rawValue)" }
        if let forwardStatus { text += "; fwd-status=\(forwardStatus)" }
        if let ttl { text += "; ttl=\(ttl)" }
        if stored { text += "; stored" }
        if let detail { text += "; detail=\(CacheStatusEntry.quoted(detail))" }
        return text
    }

    /// Converts seconds to an sf-integer `ttl`, rounding toward zero and clamping to ±2^31.
    public static func ttl(_ seconds: Double) -> Int {
        Int(max(-DeltaSeconds.maximum, min(DeltaSeconds.maximum, seconds)))
    }

    static func isToken(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first,
              first == "*" || (first.isASCII && first.properties.isAlphabetic)
        else { return false }
        return text.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                || tokenSymbols.contains(scalar))
        }
    }

    private static let tokenSymbols = Set("!#$%&'*+-.^_`|~:/".unicodeScalars)

    static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars where scalar.value >= 0x20 && scalar.value <= 0x7E {
            if scalar == "\"" || scalar == "\\" { result += "\\" }
            result.unicodeScalars.append(scalar)
        }
        return result + "\""
    }
}
