import Foundation

/// The parts of a request URL the cookie rules look at.
public struct CookieURL: Sendable, Equatable {
    /// `http` or `https`.
    public var scheme: String
    /// The host, lower-case, ASCII, without IPv6 brackets.
    public var host: String
    /// The path, without the query; `/` when empty.
    public var path: String

    /// Parses an absolute http(s) URL; nil for anything else.
    public init?(_ url: String) {
        guard let components = URLParts(url), let scheme = components.scheme,
            scheme == "http" || scheme == "https", var host = components.host, !host.isEmpty
        else { return nil }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.hasSuffix(".") { host.removeLast() }
        self.scheme = scheme
        self.host = Punycode.asciiDomain(host)
        path = components.path.isEmpty ? "/" : components.path
    }

    /// Whether the host is an IPv4 or IPv6 address.
    public var isIPAddress: Bool { IPAddress(host) != nil }

    /// Whether Chromium treats the URL as potentially trustworthy for cookies: `https`, or a
    /// loopback host (`localhost`, `*.localhost`, 127.0.0.0/8, `::1`) over plain http. Secure
    /// cookies and the `__Secure-`/`__Host-` prefixes are allowed there (checked against
    /// Chromium 156: `document.cookie = "a=1; Secure"` sticks on http://127.0.0.1 and
    /// http://localhost, and not on another http host).
    public var isTrustworthy: Bool {
        if scheme == "https" { return true }
        if host == "localhost" || host.hasSuffix(".localhost") { return true }
        guard let address = IPAddress(host) else { return false }
        if address.bytes.count == 4 { return address.bytes[0] == 127 }
        return address.bytes == [UInt8](repeating: 0, count: 15) + [1]
    }

    /// The default-path of RFC 6265bis §5.1.4: the path up to, not including, its last `/`.
    public var defaultPath: String {
        guard path.hasPrefix("/"), let last = path.lastIndex(of: "/"), last != path.startIndex else { return "/" }
        return String(path[..<last])
    }

    /// RFC 6265bis §5.1.3: whether this URL's host domain-matches `domain`.
    public func domainMatches(_ domain: String) -> Bool {
        Self.domain(host, matches: domain)
    }

    /// Whether `host` is `domain` or a subdomain of it (never for an IP address).
    static func domain(_ host: String, matches domain: String) -> Bool {
        // Bytes, as for paths: hosts here are ASCII (punycode), but a Character-based suffix
        // would not be the bytes the index below counts.
        if host.utf8.elementsEqual(domain.utf8) { return true }
        guard host.utf8.count > domain.utf8.count, host.utf8.suffix(domain.utf8.count).elementsEqual(domain.utf8) else { return false }
        let before = host.utf8[host.utf8.index(host.utf8.endIndex, offsetBy: -domain.utf8.count - 1)]
        return before == UInt8(ascii: ".") && IPAddress(host) == nil
    }

    /// RFC 6265bis §5.1.4: whether this URL's path path-matches `cookiePath`.
    public func pathMatches(_ cookiePath: String) -> Bool {
        Self.path(path, matches: cookiePath)
    }

    /// Whether `path` is `cookiePath` or under it.
    static func path(_ path: String, matches cookiePath: String) -> Bool {
        // Bytes throughout (RFC 6265 compares octets): String's == and hasPrefix compare
        // Characters, under which a prefix may be longer in bytes than the path it matches.
        if path.utf8.elementsEqual(cookiePath.utf8) { return true }
        guard path.utf8.starts(with: cookiePath.utf8) else { return false }
        if cookiePath.hasSuffix("/") { return true }
        return path.utf8[path.utf8.index(path.utf8.startIndex, offsetBy: cookiePath.utf8.count)] == UInt8(ascii: "/")
    }

    /// The URL's schemeful site, for `SameSite`.
    public func site(_ suffixes: PublicSuffixList = .shared) -> CookieSite {
        CookieSite(scheme: scheme, domain: isIPAddress ? host : (suffixes.registrableDomain(of: host) ?? host))
    }
}

/// A schemeful site (scheme and registrable domain), as Chromium compares them for `SameSite`.
public struct CookieSite: Sendable, Hashable {
    /// `http` or `https`.
    public var scheme: String
    /// The registrable domain (eTLD+1), or the host when it has none (an IP address, a suffix).
    public var domain: String

    /// Creates a site.
    public init(scheme: String, domain: String) {
        self.scheme = scheme
        self.domain = domain
    }

    /// `scheme://domain`, as Chromium writes a partition key's top-level site.
    public var serialized: String { "\(scheme)://\(domain)" }

    /// Parses `scheme://domain`; nil for anything else.
    public init?(serialized: String) {
        guard let range = serialized.range(of: "://"), !serialized[range.upperBound...].isEmpty else { return nil }
        scheme = String(serialized[..<range.lowerBound])
        domain = String(serialized[range.upperBound...])
        guard scheme == "http" || scheme == "https" else { return nil }
    }
}

/// The request a cookie is set from or sent with, for the `SameSite` and HttpOnly rules.
public struct CookieContext: Sendable, Equatable {
    /// The site of the page the request is made for; nil treats every request as same-site
    /// (a headless client is its own top-level user agent).
    public var site: CookieSite?
    /// A top-level navigation (`mode: "navigate"`): cross-site `Lax` cookies go with a safe method.
    public var topLevelNavigation: Bool
    /// The request method.
    public var method: String
    /// Set from page script (`document.cookie`), a "non-HTTP" API: cannot set or replace `HttpOnly`.
    public var fromScript: Bool

    /// Creates a context; the default is a same-site HTTP GET.
    public init(site: CookieSite? = nil, topLevelNavigation: Bool = false, method: String = "GET", fromScript: Bool = false) {
        self.site = site
        self.topLevelNavigation = topLevelNavigation
        self.method = method
        self.fromScript = fromScript
    }

    /// The top-level site a `Partitioned` cookie of `url` is kept under: the page's; the URL's
    /// own for a headless client (its own top-level context) and for a top-level navigation
    /// (whose document becomes the top level).
    func partition(for url: CookieURL, _ suffixes: @autoclosure () -> PublicSuffixList) -> CookieSite {
        guard let site, !topLevelNavigation else { return url.site(suffixes()) }
        return site
    }

    /// Whether a request to `url` is same-site with the page.
    func isSameSite(_ url: CookieURL, _ suffixes: @autoclosure () -> PublicSuffixList) -> Bool {
        guard let site else { return true }
        return url.site(suffixes()) == site
    }

    var isSafeMethod: Bool { ["GET", "HEAD", "OPTIONS", "TRACE"].contains(method.uppercased()) }
}
