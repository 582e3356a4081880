import Foundation

/// The proxy every upstream request goes through (`--upstream-proxy URL`), and the hosts that
/// bypass it (`--no-proxy PATTERN`).
///
/// URL forms: `http://[user:password@]host[:port]` (port 3128 by default; `http` targets are
/// sent to it in absolute form so a caching proxy such as Squid can cache them, `https`
/// targets are tunnelled with `CONNECT`), `socks5://host[:port]` (port 1080; the broker
/// resolves the target itself and asks the proxy for the address it checked) and
/// `socks5h://host[:port]` (the proxy resolves the name). Credentials are percent-decoded and
/// sent as `Proxy-Authorization: Basic` to an HTTP proxy; SOCKS authentication is not supported
/// by the HTTP client the broker uses (AsyncHTTPClient 1.37), so credentials in a SOCKS URL are
/// refused rather than ignored.
///
/// No-proxy patterns (comma-separated or repeated): `*` (everything), a host name that matches
/// itself and its subdomains (`example.com`, `.example.com`), an IP address, each optionally
/// with `:port`. Names compare case-insensitively; nothing bypasses the proxy by default, not
/// even loopback, so that a shared cache sees every request.
public struct UpstreamProxy: Sendable, Hashable, CustomStringConvertible {
    /// How the proxy is spoken to.
    public enum Kind: String, Sendable, Hashable {
        /// An HTTP proxy: absolute-form requests for `http`, `CONNECT` for `https`.
        case http
        /// SOCKS5, with the target's address resolved and checked by the broker.
        case socks5
        /// SOCKS5, with the target's name resolved by the proxy.
        case socks5h
    }

    /// The protocol.
    public var kind: Kind
    /// The proxy's host name or address.
    public var host: String
    /// The proxy's port.
    public var port: Int
    /// The user name for `Proxy-Authorization`, percent-decoded.
    public var username: String?
    /// The password for `Proxy-Authorization`, percent-decoded.
    public var password: String?
    /// Hosts that are reached directly (see the type's documentation).
    public var noProxy: [String]

    /// Parses a proxy URL; throws `BridgeError(.badRequest)` with the reason.
    public init(url text: String, noProxy: [String] = []) throws {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              let kind = Kind(rawValue: scheme)
        else {
            throw BridgeError(.badRequest, "\(text) is not a proxy URL: use http://, socks5:// or socks5h://")
        }
        guard let rawHost = components.host, !rawHost.isEmpty else {
            throw BridgeError(.badRequest, "\(text) names no proxy host")
        }
        guard components.path.isEmpty || components.path == "/", components.query == nil, components.fragment == nil else {
            throw BridgeError(.badRequest, "\(text): a proxy URL has no path, query or fragment")
        }
        let port = components.port ?? (kind == .http ? 3128 : 1080)
        guard (1...65535).contains(port) else { throw BridgeError(.badRequest, "\(text): port out of range") }
        let username = components.percentEncodedUser.flatMap { $0.removingPercentEncoding }
        let password = components.percentEncodedPassword.flatMap { $0.removingPercentEncoding }
        if kind != .http, username != nil || password != nil {
            throw BridgeError(.badRequest, "\(text): SOCKS proxy authentication is not supported; use an http:// proxy for credentials")
        }
        self.kind = kind
        self.host = rawHost.hasPrefix("[") && rawHost.hasSuffix("]") ? String(rawHost.dropFirst().dropLast()) : rawHost
        self.port = port
        self.username = username
        self.password = password
        self.noProxy = try noProxy.flatMap { $0.split(separator: ",") }.map { $0.trimmingSpaces }.filter { !$0.isEmpty }
            .map { pattern in
                guard !pattern.contains("/"), !pattern.contains(" ") else {
                    throw BridgeError(.badRequest, "no-proxy pattern \(pattern): give a host, .domain, IP address or *, optionally with :port")
                }
                return pattern.lowercased()
            }
    }

    /// Whether a request to `host:port` goes to the origin directly.
    public func bypasses(host: String, port: Int) -> Bool {
        let name = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]."))
        return noProxy.contains { pattern in
            if pattern == "*" { return true }
            var patternHost = pattern
            if let colon = pattern.lastIndex(of: ":"), !pattern.hasSuffix("]"), pattern.filter({ $0 == ":" }).count == 1 {
                guard Int(pattern[pattern.index(after: colon)...]) == port else { return false }
                patternHost = String(pattern[..<colon])
            }
            patternHost = patternHost.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            let domain = patternHost.hasPrefix(".") ? String(patternHost.dropFirst()) : patternHost
            return name == domain || name.hasSuffix("." + domain)
        }
    }

    /// The `Proxy-Authorization` value for an HTTP proxy, when credentials were given.
    public var authorization: String? {
        guard kind == .http, username != nil || password != nil else { return nil }
        let pair = "\(username ?? ""):\(password ?? "")"
        return "Basic " + Data(pair.utf8).base64EncodedString()
    }

    /// The proxy URL without its password.
    public var description: String {
        let user = username.map { "\($0):***@" } ?? ""
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "\(kind.rawValue)://\(user)\(shownHost):\(port)"
    }
}
