/// Refuses a cookie management post from a page: the jar's HttpOnly cookies are not for script.
private func refusePages(_ call: HandlerCall) throws(BridgeError) {
    if call.connection.info.isPage {
        throw BridgeError(.forbidden, "\(call.name) is not available to pages (it would reveal HttpOnly cookies)")
    }
}

private func cookieURL(_ body: JSONObject) throws(BridgeError) -> CookieURL? {
    guard let url = try FetchRequest.string(body, "url") else { return nil }
    guard let parsed = CookieURL(url) else { throw BridgeError(.badRequest, "\"url\" must be an absolute http(s) URL") }
    return parsed
}

extension Cookie {
    /// The cookie as `cookies.get` lists it.
    public var json: JSONValue {
        .object(JSONObject([
            ("name", .string(name)), ("value", .string(value)), ("domain", .string(domain)), ("path", .string(path)),
            ("expires", expires.map { .double($0) } ?? .null), ("secure", .bool(secure)), ("httpOnly", .bool(httpOnly)),
            ("sameSite", .string(sameSite.rawValue)), ("hostOnly", .bool(hostOnly)),
            ("partition", partition.map { .string($0.serialized) } ?? .null),
        ]))
    }
}

/// `cookies.get`: the cookies a request to `url` would carry, HttpOnly ones included, in `Cookie`
/// header order, and that header; without `url`, every cookie in the jar. Headless clients only.
public struct CookiesGetHandler: BridgeHandler {
    /// The jar.
    public let jar: CookieJar
    /// Creates the handler over `jar`.
    public init(jar: CookieJar) { self.jar = jar }

    public func handle(_ call: HandlerCall) async throws -> JSONValue {
        try refusePages(call)
        let body = call.body.isNull ? JSONObject() : call.body.objectValue
        guard let body else { throw BridgeError(.badRequest, "cookies.get takes {\"url\"?}") }
        guard let url = try cookieURL(body) else { return ["cookies": .array(jar.all().map(\.json))] }
        let cookies = jar.cookies(for: url, context: CookieContext())
        return .object(JSONObject([
            ("cookies", .array(cookies.map(\.json))), ("header", .string(cookies.map(\.pair).joined(separator: "; "))),
        ]))
    }
}

/// `cookies.set`: stores a `Set-Cookie` line as if `url` had answered it. A line the jar refuses
/// is `bad_request` with the reason. Headless clients only.
public struct CookiesSetHandler: BridgeHandler {
    /// The jar.
    public let jar: CookieJar
    /// Creates the handler over `jar`.
    public init(jar: CookieJar) { self.jar = jar }

    public func handle(_ call: HandlerCall) async throws -> JSONValue {
        try refusePages(call)
        guard let body = call.body.objectValue, let url = try cookieURL(body), let line = try FetchRequest.string(body, "setCookie") else {
            throw BridgeError(.badRequest, "cookies.set needs {\"url\", \"setCookie\"}")
        }
        switch jar.store(line, for: url, context: CookieContext()) {
        case .stored: return ["stored": true]
        case .deleted: return ["stored": false, "deleted": true]
        case .rejected(let rejection): throw BridgeError(.badRequest, "the cookie was refused: \(rejection.reason)")
        }
    }
}

/// `cookies.clear`: removes every cookie, or those of a `domain` (and its subdomains), or those
/// created at or after `since` (seconds since the epoch). Headless clients only.
public struct CookiesClearHandler: BridgeHandler {
    /// The jar.
    public let jar: CookieJar
    /// Creates the handler over `jar`.
    public init(jar: CookieJar) { self.jar = jar }

    public func handle(_ call: HandlerCall) async throws -> JSONValue {
        try refusePages(call)
        let body = call.body.isNull ? JSONObject() : call.body.objectValue
        guard let body else { throw BridgeError(.badRequest, "cookies.clear takes {\"domain\"?, \"since\"?}") }
        let domain = try FetchRequest.string(body, "domain")
        if let domain, domain.isEmpty || domain.contains("/") || domain.contains(" ") {
            throw BridgeError(.badRequest, "\"domain\" must be a host name")
        }
        var since: Double?
        if let value = body["since"], !value.isNull {
            guard let seconds = value.doubleValue else { throw BridgeError(.badRequest, "\"since\" must be seconds since the epoch") }
            since = seconds
        }
        return ["removed": .integer(jar.clear(domain: domain, since: since))]
    }
}
