import Foundation

/// A tuple origin (scheme, host, port) of an http(s) URL, serialised as browsers do.
public struct WebOrigin: Sendable, Hashable, CustomStringConvertible {
    /// `http` or `https`.
    public var scheme: String
    /// The host, lower-case; IPv6 in brackets.
    public var host: String
    /// The port, always given.
    public var port: Int

    /// The origin of an absolute http(s) URL; nil for anything else.
    public init?(url: String) {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let rawHost = components.percentEncodedHost?.lowercased(), !rawHost.isEmpty
        else { return nil }
        self.scheme = scheme
        host = rawHost.contains(":") && !rawHost.hasPrefix("[") ? "[\(rawHost)]" : rawHost
        port = components.port ?? (scheme == "https" ? 443 : 80)
    }

    /// `scheme://host[:port]`, the default port left out.
    public var description: String {
        "\(scheme)://\(host)\(port == (scheme == "https" ? 443 : 80) ? "" : ":\(port)")"
    }

    /// Whether the origin is potentially trustworthy (Secure Contexts §3.1): https, or a
    /// loopback host over http.
    public var isPotentiallyTrustworthy: Bool {
        if scheme == "https" { return true }
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        if bare == "localhost" || bare.hasSuffix(".localhost") { return true }
        guard let address = IPAddress(bare) else { return false }
        return address.bytes.count == 4 ? address.bytes[0] == 127 : address.bytes == [UInt8](repeating: 0, count: 15) + [1]
    }
}
