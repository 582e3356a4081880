/// The identity headers and cookies of each hop of one `fetch`, as a browser would send them for
/// the page (or the broker for a headless client), and the cookies each hop's response sets.
struct HopIdentity: Sendable {
    let request: FetchRequest
    let identity: RequestIdentity
    let jar: CookieJar

    init(request: FetchRequest, identity: RequestIdentity, jar: CookieJar) {
        self.request = request
        self.identity = identity
        self.jar = jar
    }

    /// The credentials mode in force: the request's, else `include` for headless clients and
    /// `same-origin` (fetch's default) for pages.
    var credentials: CredentialsMode { request.credentials ?? (identity.isPage ? .sameOrigin : .include) }

    /// Whether cookies go with, and are taken from, a hop to `url`. A headless client has no
    /// origin: for it `same-origin` counts as `include`; a page without an http(s) origin (an
    /// opaque one) is same-origin with no URL.
    func credentialsAllowed(for url: String) -> Bool {
        switch credentials {
        case .omit: return false
        case .include: return true
        case .sameOrigin:
            guard let page = identity.pageOrigin else { return !identity.isPage }
            return WebOrigin(url: url) == page
        }
    }

    var cookieContext: CookieContext {
        CookieContext(site: identity.site, topLevelNavigation: request.mode == .navigate, method: request.method)
    }

    /// `headers` with the identity headers added for a hop to `url` with `method`. A header the
    /// request carries already wins (a page cannot carry the forbidden ones: they were dropped).
    func headers(_ headers: HeaderList, url: String, method: String, tainted: Bool) -> HeaderList {
        var result = headers
        if !result.contains("user-agent") { result.add("User-Agent", identity.userAgent) }
        if !result.contains("accept") { result.add("Accept", "*/*") }
        if !result.contains("accept-language"), let language = identity.acceptLanguage { result.add("Accept-Language", language) }
        if !result.contains("referer"), let referer = referer(for: url) { result.add("Referer", referer) }
        if !result.contains("origin"), let origin = origin(for: url, method: method, tainted: tainted) { result.add("Origin", origin) }
        if !result.contains("cookie"), credentialsAllowed(for: url), let cookie = cookieHeader(for: url, method: method) {
            result.add("Cookie", cookie)
        }
        return result
    }

    /// The `Referer` for a hop to `url` under the request's policy.
    func referer(for url: String) -> String? {
        let source: String?
        switch request.referrer {
        case .none: return nil
        case .client: source = identity.pageURL.flatMap(FetchRequest.referrerForm(of:))
        case .url(let given):
            // A page may name only a URL of its own origin; another one means its own URL (Fetch §5.4).
            if identity.isPage, let page = identity.pageOrigin, WebOrigin(url: given) != page {
                source = identity.pageURL.flatMap(FetchRequest.referrerForm(of:))
            } else {
                source = given
            }
        }
        return source.flatMap { request.referrerPolicy.referer(for: url, referrer: $0) }
    }

    /// The `Origin` for a hop (Fetch "append a request `Origin` header"): for cross-origin
    /// requests in `cors` mode and for every request whose method is not GET or HEAD; `null`
    /// after a redirect tainted the origin, or where the referrer policy hides it. None for a
    /// headless client, which has no origin.
    func origin(for url: String, method: String, tainted: Bool) -> String? {
        guard let page = identity.pageOrigin else { return nil }
        let serialized = tainted ? "null" : page.description
        let target = WebOrigin(url: url)
        let crossOrigin = target != page
        if request.mode == .cors && crossOrigin { return serialized }
        guard method != "GET" && method != "HEAD" else { return nil }
        if request.mode != .cors {
            switch request.referrerPolicy {
            case .noReferrer: return "null"
            case .noReferrerWhenDowngrade, .strictOrigin, .strictOriginWhenCrossOrigin:
                if page.scheme == "https" && !(target?.isPotentiallyTrustworthy ?? false) { return "null" }
            case .sameOrigin:
                if crossOrigin { return "null" }
            case .origin, .originWhenCrossOrigin, .unsafeURL:
                break
            }
        }
        return serialized
    }

    /// The `Cookie` value for a hop: the jar's cookies, then the pairs of the page's
    /// `documentCookie` whose names the jar does not send (for the page's own scheme and host only).
    func cookieHeader(for url: String, method: String) -> String? {
        guard let cookieURL = CookieURL(url) else { return nil }
        var context = cookieContext
        context.method = method
        let cookies = jar.cookies(for: cookieURL, context: context)
        var pairs = cookies.map(\.pair)
        if identity.isPage, let documentCookie = request.documentCookie, let page = identity.pageCookieURL,
            page.scheme == cookieURL.scheme, page.host == cookieURL.host
        {
            var names = Set(cookies.map(\.name))
            for raw in documentCookie.split(separator: ";") {
                let pair = raw.trimmingSpaces
                guard !pair.isEmpty, HeaderRules.isValidValue(pair) else { continue }
                let name = pair.firstIndex(of: "=").map { String(pair[..<$0]).trimmingSpaces } ?? ""
                if names.insert(name).inserted { pairs.append(pair) }
            }
        }
        return pairs.isEmpty ? nil : pairs.joined(separator: "; ")
    }

    /// Stores the `Set-Cookie` lines of a hop's response (when credentials allow) and returns, for
    /// a page, the cookies its `document.cookie` should see, as `Set-Cookie` lines in the jar's
    /// canonical form (explicit `Path`, `Domain` for domain cookies, `Expires`; a deletion as an
    /// expired line). HttpOnly cookies are never among them.
    func storeCookies(from headers: HeaderList, url: String, method: String) -> [String] {
        // Most responses set no cookie: nothing to parse the URL for.
        guard headers.contains("set-cookie"), credentialsAllowed(for: url), let cookieURL = CookieURL(url) else { return [] }
        // Header values are byte strings (ByteString); a cookie line is read as UTF-8, as Chromium does.
        let lines = headers.values("set-cookie").map(ByteString.utf8Text)
        var context = cookieContext
        context.method = method
        var visible: [String] = []
        let page = identity.isPage ? identity.pageCookieURL : nil
        for line in lines {
            guard let cookie = jar.store(line, for: cookieURL, context: context).cookie, let page, !cookie.httpOnly else { continue }
            let matches = cookie.hostOnly ? cookie.domain == page.host : page.domainMatches(cookie.domain)
            if matches && (!cookie.secure || page.isTrustworthy) { visible.append(cookie.setCookieLine) }
        }
        return visible
    }
}
