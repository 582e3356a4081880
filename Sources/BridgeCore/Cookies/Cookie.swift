/// One cookie in the jar, as RFC 6265bis §5.7 stores it.
public struct Cookie: Sendable, Equatable {
    /// The name; may be empty (a `Set-Cookie: value` line without `=`).
    public var name: String
    /// The value.
    public var value: String
    /// The host (host-only) or the domain (without a leading dot) the cookie belongs to, lower-case.
    public var domain: String
    /// The path it applies to.
    public var path: String
    /// When it expires, in seconds since the epoch; nil for a session cookie.
    public var expires: Double?
    /// When it was first stored; kept when a later `Set-Cookie` replaces it.
    public var creation: Double
    /// When it was last sent or replaced, for eviction.
    public var lastAccess: Double
    /// Sent only over secure (or loopback) connections.
    public var secure: Bool
    /// Hidden from page script.
    public var httpOnly: Bool
    /// The `SameSite` attribute as given.
    public var sameSite: SameSite
    /// Sent to `domain` only, not to its subdomains.
    public var hostOnly: Bool
    /// For a `Partitioned` (CHIPS) cookie, the top-level site it was set under: it is sent only
    /// to requests made under that site. Nil for an unpartitioned cookie.
    public var partition: CookieSite?

    /// Creates a cookie.
    public init(
        name: String, value: String, domain: String, path: String, expires: Double?, creation: Double, lastAccess: Double,
        secure: Bool, httpOnly: Bool, sameSite: SameSite, hostOnly: Bool, partition: CookieSite? = nil
    ) {
        self.name = name
        self.value = value
        self.domain = domain
        self.path = path
        self.expires = expires
        self.creation = creation
        self.lastAccess = lastAccess
        self.secure = secure
        self.httpOnly = httpOnly
        self.sameSite = sameSite
        self.hostOnly = hostOnly
        self.partition = partition
    }

    /// A persistent cookie survives a broker restart; a session cookie does not.
    public var isPersistent: Bool { expires != nil }

    /// What identifies a cookie in the jar: a newer one with the same key replaces it.
    public struct Key: Hashable, Sendable {
        /// The cookie's name.
        public var name: String
        /// The cookie's domain.
        public var domain: String
        /// The cookie's path.
        public var path: String
        /// Whether the cookie is host-only.
        public var hostOnly: Bool
        /// The cookie's partition (a `Partitioned` cookie of another top-level site is another cookie).
        public var partition: CookieSite? = nil
    }

    /// The cookie's identity in the jar.
    public var key: Key { Key(name: name, domain: domain, path: path, hostOnly: hostOnly, partition: partition) }

    /// `name=value` as the `Cookie` header carries it (only the value for a nameless cookie).
    public var pair: String { name.isEmpty ? value : "\(name)=\(value)" }

    /// The cookie as a `Set-Cookie` line that recreates it.
    public var setCookieLine: String {
        var line = pair
        if !hostOnly { line += "; Domain=\(domain)" }
        line += "; Path=\(path)"
        if let expires { line += "; Expires=\(HTTPDate.format(expires.rounded(.down)))" }
        if secure { line += "; Secure" }
        if httpOnly { line += "; HttpOnly" }
        if sameSite != .unspecified { line += "; SameSite=\(sameSite.attribute)" }
        if partition != nil { line += "; Partitioned" }
        return line
    }
}

/// What the jar does with third-party cookies: those of a request whose site is not the page's.
public enum ThirdPartyCookies: String, Sendable, CaseIterable {
    /// Neither stored from nor sent with a cross-site request (headless Chromium's default, and
    /// Chrome's with third-party cookies blocked); `Partitioned` cookies still work, per top-level site.
    case block
    /// Stored and sent when `SameSite=None` allows it (Chrome Stable's older default).
    case allow
}

/// The `SameSite` attribute of a cookie.
public enum SameSite: String, Sendable, CaseIterable {
    /// No attribute (or an unknown value): treated as `Lax`, as browsers do.
    case unspecified
    /// Sent with cross-site requests; requires `Secure`.
    case none
    /// Sent with same-site requests and top-level navigations with a safe method.
    case lax
    /// Sent with same-site requests only.
    case strict

    /// How the attribute is written in a `Set-Cookie` line.
    public var attribute: String {
        switch self {
        case .unspecified: return ""
        case .none: return "None"
        case .lax: return "Lax"
        case .strict: return "Strict"
        }
    }

    /// The value of an attribute, case-insensitively; anything else is `unspecified`.
    init(attribute: String) {
        switch attribute.lowercased() {
        case "none": self = .none
        case "lax": self = .lax
        case "strict": self = .strict
        default: self = .unspecified
        }
    }
}
