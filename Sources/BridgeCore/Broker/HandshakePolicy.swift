import Foundation

/// Decides whether a WebSocket handshake is accepted: path, `Origin`, and token.
public struct HandshakePolicy: Sendable {
    /// What an accepted handshake connects to.
    public enum Endpoint: Sendable, Equatable {
        /// The bridge protocol at `/bridge`.
        case bridge
        /// The diagnostic echo at `/echo`.
        case echo
    }

    /// Origins always allowed: the broker's own.
    public var ownOrigins: Set<String>
    /// Origins allowed by configuration; `*` allows any.
    public var allowedOrigins: Set<String>
    /// The token a client must present, if any.
    public var token: String?
    /// Whether the diagnostic echo is served at `/echo` (and `/` for conformance suites).
    public var diagnosticEcho: Bool

    /// Creates a policy for a broker listening on `host:port`.
    public init(host: String, port: Int, allowedOrigins: [String], token: String?, diagnosticEcho: Bool = false) {
        var own: Set<String> = ["http://127.0.0.1:\(port)", "http://localhost:\(port)", "http://\(host.lowercased()):\(port)"]
        own.insert("http://[::1]:\(port)")
        ownOrigins = own
        self.allowedOrigins = Set(allowedOrigins.map(HandshakePolicy.normalize))
        self.token = token?.isEmpty == true ? nil : token
        self.diagnosticEcho = diagnosticEcho
    }

    /// Checks a handshake; the error string says why it was refused.
    ///
    /// - Parameters:
    ///   - path: the request path without the query.
    ///   - origin: the `Origin` header, nil when absent (a non-browser client).
    ///   - query: the query string, which may carry `token=`.
    ///   - authorization: the `Authorization` header, which may carry `Bearer TOKEN`.
    public func check(path: String, origin: String?, query: String?, authorization: String?) -> Result<Endpoint, HandshakeRefusal> {
        let endpoint: Endpoint
        switch path {
        case "/bridge", "/bridge/": endpoint = .bridge
        // Conformance suites (Autobahn's fuzzing client) connect to "/".
        case "/echo" where diagnosticEcho, "/" where diagnosticEcho: endpoint = .echo
        default: return .failure(HandshakeRefusal("no WebSocket endpoint at \(path)"))
        }
        if let origin {
            let normalized = HandshakePolicy.normalize(origin)
            guard ownOrigins.contains(normalized) || allowedOrigins.contains(normalized) || allowedOrigins.contains("*") else {
                return .failure(HandshakeRefusal("origin \(origin) is not allowed (add it with --allow-origin)"))
            }
        }
        if let refusal = tokenRefusal(query: query, authorization: authorization) { return .failure(refusal) }
        return .success(endpoint)
    }

    /// Why a request that must present the token (a handshake, or `/metrics`) is refused: nil
    /// when no token is set or the right one came as `?token=` or `Authorization: Bearer`.
    public func tokenRefusal(query: String?, authorization: String?) -> HandshakeRefusal? {
        guard let token else { return nil }
        let presented = HandshakePolicy.queryValue("token", in: query) ?? HandshakePolicy.bearer(authorization)
        guard let presented, HandshakePolicy.constantTimeEquals(presented, token) else {
            return HandshakeRefusal(presented == nil ? "no token presented" : "wrong token")
        }
        return nil
    }

    static func normalize(_ origin: String) -> String {
        var value = origin.lowercased()
        // By Unicode scalars: a "/" after a prepended concatenation mark (U+06DD) is part of the
        // mark's Character, which `hasSuffix("/")` does not see (the `handshake` fuzz target's
        // input Fuzz/corpus/handshake/regression-origin-prepend-slash).
        while value.unicodeScalars.last == "/" { value.unicodeScalars.removeLast() }
        return value
    }

    /// The token of `Authorization: Bearer TOKEN`. Split by Unicode scalars, as HTTP's bytes are:
    /// split by Characters, a token that starts with a combining mark joins the space before it
    /// into one Character and was not found (the `handshake` fuzz target's finding).
    static func bearer(_ authorization: String?) -> String? {
        guard let authorization else { return nil }
        let scalars = authorization.trimmingSpaces.unicodeScalars
        guard let space = scalars.firstIndex(of: " "), String(scalars[..<space]).lowercased() == "bearer" else { return nil }
        let token = String(scalars[scalars.index(after: space)...]).trimmingSpaces
        return token.isEmpty ? nil : token
    }

    /// The percent-decoded value of `name` in a query string (split by Unicode scalars, like `bearer`).
    public static func queryValue(_ name: String, in query: String?) -> String? {
        guard let query else { return nil }
        for pair in query.unicodeScalars.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if String(parts[0]) == name {
                let raw = parts.count > 1 ? String(parts[1]) : ""
                return raw.replacingPlus.removingPercentEncoding ?? raw
            }
        }
        return nil
    }

    static func constantTimeEquals(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = UInt8(x.count == y.count ? 0 : 1)
        for index in 0..<max(x.count, y.count) {
            difference |= (index < x.count ? x[index] : 0) ^ (index < y.count ? y[index] : 0)
        }
        return difference == 0
    }
}

/// Why a handshake was refused.
public struct HandshakeRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// The reason, for the log.
    public let reason: String
    init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

extension String {
    var replacingPlus: String { replacingOccurrences(of: "+", with: " ") }
}
