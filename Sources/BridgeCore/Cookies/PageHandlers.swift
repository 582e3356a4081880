import Foundation

/// `page.identity`: the page reports its URL, `navigator.userAgent` and `navigator.languages`,
/// kept for the connection's later requests. Answered at once, so it is in force for every post
/// that follows it.
public struct PageIdentityHandler: ImmediateBridgeHandler {
    /// Creates the handler.
    public init() {}

    public func handleImmediately(_ call: HandlerCall) -> ImmediateReply? {
        do { return .body(try identify(call)) } catch { return .failure(error) }
    }

    public func handle(_ call: HandlerCall) async throws -> JSONValue {
        try identify(call)
    }

    private func identify(_ call: HandlerCall) throws(BridgeError) -> JSONValue {
        guard case .object(let body) = call.body else { throw BridgeError(.badRequest, "page.identity needs an object body") }
        guard let url = try FetchRequest.string(body, "url") else { throw BridgeError(.badRequest, "page.identity needs a \"url\"") }
        guard URLComponents(string: url)?.scheme?.isEmpty == false else {
            throw BridgeError(.badRequest, "\"url\" must be the page's absolute URL (location.href)")
        }
        // A page that is not http(s) (file:, an app's own scheme) has an opaque origin: no
        // referrer, no Origin, no cookies of its own; its user agent and languages still count.
        var report = PageIdentity.Report()
        if let origin = WebOrigin(url: url), let normalized = try? FetchRequest.normalize(url: url) {
            if let handshake = call.connection.info.origin, HandshakePolicy.normalize(handshake) != origin.description {
                throw BridgeError(.forbidden, "the page's origin \(origin) is not the connection's origin \(handshake)")
            }
            report.url = normalized
        }
        if let userAgent = try FetchRequest.string(body, "userAgent") {
            guard HeaderRules.isValidValue(userAgent) else { throw BridgeError(.badRequest, "\"userAgent\" has CR, LF or NUL") }
            report.userAgent = userAgent
        }
        if let languages = body["languages"], !languages.isNull {
            guard let list = languages.arrayValue?.compactMap(\.stringValue), list.count == languages.arrayValue?.count else {
                throw BridgeError(.badRequest, "\"languages\" must be a list of strings")
            }
            report.languages = list
        }
        call.connection.page.update(report)
        return .object(JSONObject())
    }
}

/// `page.cookie`: page script assigned `cookie` to `document.cookie`; the jar stores it as a
/// non-HTTP write for the page's URL (it cannot set or replace an HttpOnly cookie). Answered at
/// once, so it is in the jar before any later fetch on the connection runs.
public struct PageCookieHandler: ImmediateBridgeHandler {
    /// The jar.
    public let jar: CookieJar

    /// Creates the handler over `jar`.
    public init(jar: CookieJar) { self.jar = jar }

    public func handleImmediately(_ call: HandlerCall) -> ImmediateReply? {
        do { return .body(try store(call)) } catch { return .failure(error) }
    }

    public func handle(_ call: HandlerCall) async throws -> JSONValue {
        try store(call)
    }

    private func store(_ call: HandlerCall) throws(BridgeError) -> JSONValue {
        guard case .object(let body) = call.body, let line = try FetchRequest.string(body, "cookie") else {
            throw BridgeError(.badRequest, "page.cookie needs {\"cookie\": string}")
        }
        let identity = RequestIdentity(connection: call.connection)
        guard let page = identity.pageCookieURL else {
            throw BridgeError(.badRequest, "page.cookie needs the page's URL: send page.identity first")
        }
        let context = CookieContext(site: identity.site, fromScript: true)
        let outcome = jar.store(line, for: page, context: context)
        if case .stored = outcome { return ["stored": true] }
        return ["stored": false]
    }
}
