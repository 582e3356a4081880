import Testing
@testable import BridgeCore

/// A jar at T0 with a test clock, and shorthands for storing lines and reading the header.
struct JarRig {
    let clock = TestClock()
    let jar: CookieJar

    init(
        persistence: (any CookiePersistence)? = nil, limits: (perDomain: Int, total: Int) = (CookieJar.perDomainLimit, CookieJar.totalLimit),
        thirdPartyCookies: ThirdPartyCookies = .block
    ) {
        jar = CookieJar(clock: clock, persistence: persistence, limits: limits, thirdPartyCookies: thirdPartyCookies)
    }

    @discardableResult
    func set(_ url: String, _ lines: String..., context: CookieContext = CookieContext()) -> [CookieJar.StoreOutcome] {
        lines.map { jar.store($0, for: CookieURL(url)!, context: context) }
    }

    func header(_ url: String, context: CookieContext = CookieContext()) -> String {
        jar.header(for: CookieURL(url)!, context: context) ?? ""
    }
}

struct CookieJarTests {
    /// One storage rule: lines set from `from`, then the `Cookie` header sent to `to`.
    struct Case: Sendable, CustomTestStringConvertible {
        let rule: String
        let from: String
        let lines: [String]
        let to: String
        let expected: String
        var testDescription: String { rule }
    }

    @Test(arguments: [
        Case(rule: "host-only is not sent to subdomains", from: "http://example.com/", lines: ["a=1"], to: "http://www.example.com/", expected: ""),
        Case(rule: "host-only is sent to its host", from: "http://example.com/", lines: ["a=1"], to: "http://example.com/x", expected: "a=1"),
        Case(rule: "a domain cookie reaches subdomains", from: "http://www.example.com/", lines: ["a=1; Domain=example.com"], to: "http://x.y.example.com/", expected: "a=1"),
        Case(rule: "a leading dot is dropped", from: "http://www.example.com/", lines: ["a=1; Domain=.EXAMPLE.com"], to: "http://example.com/", expected: "a=1"),
        Case(rule: "a foreign domain is refused", from: "http://example.com/", lines: ["a=1; Domain=other.com"], to: "http://other.com/", expected: ""),
        Case(rule: "a sibling domain is refused", from: "http://a.example.com/", lines: ["a=1; Domain=b.example.com"], to: "http://b.example.com/", expected: ""),
        Case(rule: "a public suffix is refused", from: "http://www.example.co.uk/", lines: ["a=1; Domain=co.uk"], to: "http://other.co.uk/", expected: ""),
        Case(rule: "a public suffix is refused (com)", from: "http://example.com/", lines: ["a=1; Domain=com"], to: "http://example.com/", expected: ""),
        Case(rule: "a public suffix equal to the host is host-only", from: "http://github.io/", lines: ["a=1; Domain=github.io"], to: "http://github.io/", expected: "a=1"),
        Case(rule: "...and not sent to its subdomains", from: "http://github.io/", lines: ["a=1; Domain=github.io"], to: "http://x.github.io/", expected: ""),
        Case(rule: "an IP host may name itself", from: "http://127.0.0.1:8080/", lines: ["a=1; Domain=127.0.0.1"], to: "http://127.0.0.1/", expected: "a=1"),
        Case(rule: "an IP host may not name a suffix", from: "http://10.0.0.1/", lines: ["a=1; Domain=0.0.1"], to: "http://10.0.0.1/", expected: ""),
        Case(rule: "cookies ignore ports", from: "http://example.com:8080/", lines: ["a=1"], to: "http://example.com:9090/", expected: "a=1"),
        Case(rule: "default-path is the directory", from: "http://example.com/dir/page", lines: ["a=1"], to: "http://example.com/dir/other", expected: "a=1"),
        Case(rule: "default-path is not sent above it", from: "http://example.com/dir/page", lines: ["a=1"], to: "http://example.com/", expected: ""),
        Case(rule: "default-path of one segment is /", from: "http://example.com/page?q=/x/y", lines: ["a=1"], to: "http://example.com/", expected: "a=1"),
        Case(rule: "path matches at a slash only", from: "http://example.com/", lines: ["a=1; Path=/dir"], to: "http://example.com/directory", expected: ""),
        Case(rule: "path matches below itself", from: "http://example.com/", lines: ["a=1; Path=/dir"], to: "http://example.com/dir/x", expected: "a=1"),
        Case(rule: "a relative Path uses the default", from: "http://example.com/d/p", lines: ["a=1; Path=x"], to: "http://example.com/d/q", expected: "a=1"),
        Case(rule: "Secure is not set over http", from: "http://example.com/", lines: ["a=1; Secure"], to: "https://example.com/", expected: ""),
        Case(rule: "Secure is not sent over http", from: "https://example.com/", lines: ["a=1; Secure"], to: "http://example.com/", expected: ""),
        Case(rule: "Secure goes over https", from: "https://example.com/", lines: ["a=1; Secure"], to: "https://example.com/", expected: "a=1"),
        Case(rule: "loopback is trustworthy (127/8)", from: "http://127.0.0.1/", lines: ["a=1; Secure"], to: "http://127.0.0.1/", expected: "a=1"),
        Case(rule: "loopback is trustworthy (localhost)", from: "http://localhost/", lines: ["a=1; Secure"], to: "http://localhost/", expected: "a=1"),
        Case(rule: "loopback is trustworthy (::1)", from: "http://[::1]:81/", lines: ["a=1; Secure"], to: "http://[::1]/", expected: "a=1"),
        Case(rule: "a non-secure cookie goes over http too", from: "https://example.com/", lines: ["a=1"], to: "http://example.com/", expected: "a=1"),
        Case(rule: "SameSite=None needs Secure", from: "https://example.com/", lines: ["a=1; SameSite=None"], to: "https://example.com/", expected: ""),
        Case(rule: "SameSite=None with Secure", from: "https://example.com/", lines: ["a=1; SameSite=None; Secure"], to: "https://example.com/", expected: "a=1"),
        Case(rule: "__Secure- needs Secure", from: "https://example.com/", lines: ["__Secure-a=1"], to: "https://example.com/", expected: ""),
        Case(rule: "__Secure- with Secure", from: "https://example.com/", lines: ["__Secure-a=1; Secure"], to: "https://example.com/", expected: "__Secure-a=1"),
        Case(rule: "prefixes are case-insensitive", from: "https://example.com/", lines: ["__SECURE-a=1", "__host-b=1; Secure"], to: "https://example.com/", expected: ""),
        Case(rule: "__Host- needs Path=/", from: "https://example.com/", lines: ["__Host-a=1; Secure"], to: "https://example.com/", expected: ""),
        Case(rule: "__Host- refuses Domain", from: "https://www.example.com/", lines: ["__Host-a=1; Secure; Path=/; Domain=www.example.com"], to: "https://www.example.com/", expected: ""),
        Case(rule: "__Host- complete", from: "https://example.com/", lines: ["__Host-a=1; Secure; Path=/"], to: "https://example.com/", expected: "__Host-a=1"),
        Case(rule: "__Host- on an IP host may name it", from: "http://127.0.0.1/", lines: ["__Host-a=1; Secure; Path=/; Domain=127.0.0.1"], to: "http://127.0.0.1/", expected: "__Host-a=1"),
        Case(rule: "a nameless cookie may not look prefixed", from: "https://example.com/", lines: ["__Secure-x", "=__Host-y"], to: "https://example.com/", expected: ""),
        Case(rule: "a nameless cookie is its value", from: "http://example.com/", lines: ["solo"], to: "http://example.com/", expected: "solo"),
        Case(rule: "a later line replaces by name, domain, path", from: "http://example.com/", lines: ["a=1", "a=2"], to: "http://example.com/", expected: "a=2"),
        Case(rule: "another path is another cookie", from: "http://example.com/", lines: ["a=1; Path=/", "a=2; Path=/x"], to: "http://example.com/x", expected: "a=2; a=1"),
        Case(rule: "longer paths first, then older first", from: "http://example.com/", lines: ["z=1", "b=2; Path=/x/y", "a=3", "c=4; Path=/x"], to: "http://example.com/x/y/z", expected: "b=2; c=4; z=1; a=3"),
        Case(rule: "malformed lines are skipped one by one", from: "http://example.com/", lines: ["a=1", "=", "b=\u{01}", "c=3"], to: "http://example.com/", expected: "a=1; c=3"),
        Case(rule: "Max-Age=0 deletes", from: "http://example.com/", lines: ["a=1", "a=; Max-Age=0"], to: "http://example.com/", expected: ""),
        Case(rule: "a past Expires deletes", from: "http://example.com/", lines: ["a=1", "a=x; Expires=Thu, 01 Jan 1970 00:00:00 GMT"], to: "http://example.com/", expected: ""),
        Case(rule: "Max-Age wins over a past Expires", from: "http://example.com/", lines: ["a=1; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=60"], to: "http://example.com/", expected: "a=1"),
        Case(rule: "Max-Age wins over a later Expires", from: "http://example.com/", lines: ["a=1; Max-Age=-1; Expires=Fri, 01 Jan 2100 00:00:00 GMT"], to: "http://example.com/", expected: ""),
        Case(rule: "a deletion needs the same path", from: "http://example.com/", lines: ["a=1; Path=/", "a=; Path=/x; Max-Age=0"], to: "http://example.com/x", expected: "a=1"),
    ])
    func storageAndRetrieval(_ test: Case) {
        let rig = JarRig()
        for line in test.lines { rig.set(test.from, line) }
        #expect(rig.header(test.to) == test.expected)
    }

    @Test func anInsecureURLMayNotShadowASecureCookie() {
        let rig = JarRig()
        rig.set("https://example.com/", "a=secure; Secure")
        let outcome = rig.set("http://example.com/", "a=plain")[0]
        #expect(outcome.cookie == nil)
        #expect(rig.header("https://example.com/") == "a=secure")
        rig.set("http://example.com/", "b=plain")
        #expect(rig.header("http://example.com/") == "b=plain")
    }

    @Test func expiryFollowsTheClock() {
        let rig = JarRig()
        rig.set("http://example.com/", "short=1; Max-Age=10", "long=2; Expires=Fri, 01 Jan 2100 00:00:00 GMT", "session=3")
        #expect(rig.header("http://example.com/") == "short=1; long=2; session=3")
        rig.clock.set(T0 + 10)
        #expect(rig.header("http://example.com/") == "long=2; session=3")
        // Expires is capped at 400 days.
        rig.clock.set(T0 + CookieJar.maxLifetime - 1)
        #expect(rig.header("http://example.com/") == "long=2; session=3")
        rig.clock.set(T0 + CookieJar.maxLifetime)
        #expect(rig.header("http://example.com/") == "session=3")
        #expect(rig.jar.all().map(\.name) == ["session"])
    }

    @Test func replacingKeepsTheCreationTimeOnlyForTheSameValue() {
        let rig = JarRig()
        rig.set("http://example.com/", "a=1", "b=1")
        rig.clock.set(T0 + 5)
        rig.set("http://example.com/", "a=1; Max-Age=100")
        #expect(rig.header("http://example.com/") == "a=1; b=1", "the same value keeps its place")
        rig.set("http://example.com/", "a=2")
        #expect(rig.header("http://example.com/") == "b=1; a=2", "a new value sorts as a new cookie, as in Chromium")
    }

    @Test func httpOnlyAndScript() {
        let rig = JarRig()
        let script = CookieContext(fromScript: true)
        #expect(rig.set("http://example.com/", "h=1; HttpOnly", context: script)[0].cookie == nil)
        rig.set("http://example.com/", "h=1; HttpOnly")
        #expect(rig.set("http://example.com/", "h=2", context: script)[0].cookie == nil)
        #expect(rig.set("http://example.com/", "h=; Max-Age=0", context: script)[0].cookie == nil)
        rig.set("http://example.com/", "s=1", context: script)
        #expect(rig.header("http://example.com/") == "h=1; s=1")
        #expect(rig.header("http://example.com/", context: script) == "s=1")
    }

    @Test func sameSite() {
        // The SameSite rules alone, with third-party cookies allowed (thirdPartyCookies below).
        let rig = JarRig(thirdPartyCookies: .allow)
        let page = CookieURL("https://www.example.com/")!.site()
        let sameSite = CookieContext(site: page)
        let crossSite = CookieContext(site: CookieURL("https://other.org/")!.site())
        rig.set("https://api.example.com/", "d=1", "l=1; SameSite=Lax", "s=1; SameSite=Strict", "n=1; SameSite=None; Secure", context: sameSite)
        #expect(rig.header("https://api.example.com/", context: sameSite) == "d=1; l=1; s=1; n=1")
        #expect(rig.header("https://api.example.com/", context: crossSite) == "n=1")
        var navigation = crossSite
        navigation.topLevelNavigation = true
        #expect(rig.header("https://api.example.com/", context: navigation) == "d=1; l=1; n=1")
        navigation.method = "POST"
        #expect(rig.header("https://api.example.com/", context: navigation) == "n=1")
        // Schemeful: http and https of one domain are different sites.
        #expect(rig.header("https://api.example.com/", context: CookieContext(site: CookieURL("http://www.example.com/")!.site())) == "n=1")
        // A cross-site response may set only SameSite=None cookies.
        let outcomes = rig.set("https://tracker.net/", "x=1", "y=1; SameSite=Lax", "z=1; SameSite=None; Secure", context: sameSite)
        #expect(outcomes.map { $0.cookie != nil } == [false, false, true])
    }

    /// One third-party cookie rule: lines set by a page on `page` from `from` (nil: a headless
    /// client), then the `Cookie` header a page on `sendPage` gets from `to`.
    struct ThirdPartyCase: Sendable, CustomTestStringConvertible {
        let rule: String
        let mode: ThirdPartyCookies
        let page: String?
        let from: String
        let lines: [String]
        let sendPage: String?
        let to: String
        let expected: String
        var testDescription: String { "\(rule) (\(mode))" }
    }

    static let none = "n=1; SameSite=None; Secure; Path=/"
    static let chips = "p=1; SameSite=None; Secure; Path=/; Partitioned"

    @Test(arguments: [
        // Checked in headless Chromium 156 (tests/browser/test_identity.py, crossSite).
        ThirdPartyCase(rule: "a cross-site response's SameSite=None cookie is not stored", mode: .block, page: "https://a.test/",
                       from: "https://tracker.net/", lines: [none], sendPage: nil, to: "https://tracker.net/", expected: ""),
        ThirdPartyCase(rule: "a first-party SameSite=None cookie is not sent cross-site", mode: .block, page: "https://tracker.net/",
                       from: "https://tracker.net/", lines: [none], sendPage: "https://a.test/", to: "https://tracker.net/", expected: ""),
        ThirdPartyCase(rule: "a first-party SameSite=None cookie is sent same-site", mode: .block, page: "https://www.tracker.net/",
                       from: "https://tracker.net/", lines: [none], sendPage: "https://tracker.net/", to: "https://tracker.net/", expected: "n=1"),
        ThirdPartyCase(rule: "allowed, a third-party cookie is stored and sent", mode: .allow, page: "https://a.test/",
                       from: "https://tracker.net/", lines: [none], sendPage: "https://b.test/", to: "https://tracker.net/", expected: "n=1"),
        ThirdPartyCase(rule: "a partitioned cookie is kept for its top-level site", mode: .block, page: "https://a.test/",
                       from: "https://tracker.net/", lines: [chips], sendPage: "https://a.test/", to: "https://tracker.net/", expected: "p=1"),
        ThirdPartyCase(rule: "a partitioned cookie is not sent under another top-level site", mode: .block, page: "https://a.test/",
                       from: "https://tracker.net/", lines: [chips], sendPage: "https://b.test/", to: "https://tracker.net/", expected: ""),
        ThirdPartyCase(rule: "a partitioned cookie is not sent first-party", mode: .allow, page: "https://a.test/",
                       from: "https://tracker.net/", lines: [chips], sendPage: "https://tracker.net/", to: "https://tracker.net/", expected: ""),
        ThirdPartyCase(rule: "partitions are schemeful sites", mode: .block, page: "https://a.test/",
                       from: "https://tracker.net/", lines: [chips], sendPage: "http://a.test/", to: "https://tracker.net/", expected: ""),
        ThirdPartyCase(rule: "a partition is the registrable domain", mode: .block, page: "https://www.a.test/",
                       from: "https://tracker.net/", lines: [chips], sendPage: "https://shop.a.test/", to: "https://tracker.net/", expected: "p=1"),
        ThirdPartyCase(rule: "Partitioned needs Secure", mode: .block, page: "https://a.test/",
                       from: "http://a.test/", lines: ["p=1; Path=/; Partitioned"], sendPage: "https://a.test/", to: "http://a.test/", expected: ""),
        ThirdPartyCase(rule: "a same-site partitioned cookie is kept under its own site", mode: .block, page: "https://a.test/",
                       from: "https://api.a.test/", lines: [chips], sendPage: "https://a.test/", to: "https://api.a.test/", expected: "p=1"),
        ThirdPartyCase(rule: "partitions do not replace each other", mode: .block, page: "https://a.test/",
                       from: "https://a.test/", lines: ["p=0; Path=/", chips], sendPage: "https://a.test/", to: "https://a.test/", expected: "p=0; p=1"),
        ThirdPartyCase(rule: "a headless client is first-party everywhere", mode: .block, page: nil,
                       from: "https://tracker.net/", lines: [none, chips], sendPage: nil, to: "https://tracker.net/", expected: "n=1; p=1"),
        ThirdPartyCase(rule: "a headless client's partitioned cookie is its site's", mode: .block, page: nil,
                       from: "https://tracker.net/", lines: [chips], sendPage: "https://a.test/", to: "https://tracker.net/", expected: ""),
    ])
    func thirdPartyCookies(_ test: ThirdPartyCase) {
        let rig = JarRig(thirdPartyCookies: test.mode)
        let context = { (page: String?) in CookieContext(site: page.map { CookieURL($0)!.site() }) }
        for line in test.lines { rig.set(test.from, line, context: context(test.page)) }
        #expect(rig.header(test.to, context: context(test.sendPage)) == test.expected)
    }

    @Test func aTopLevelNavigationIsFirstPartyAndPartitionsUnderItsOwnSite() {
        let rig = JarRig()
        var navigation = CookieContext(site: CookieURL("https://a.test/")!.site())
        navigation.topLevelNavigation = true
        rig.set("https://tracker.net/", Self.none, Self.chips, context: navigation)
        #expect(rig.header("https://tracker.net/", context: navigation) == "n=1; p=1")
        #expect(rig.header("https://tracker.net/", context: CookieContext(site: CookieURL("https://tracker.net/")!.site())) == "n=1; p=1")
        #expect(rig.header("https://tracker.net/", context: CookieContext(site: CookieURL("https://a.test/")!.site())) == "")
        let line = rig.jar.all().first { $0.name == "p" }?.setCookieLine
        #expect(line == "p=1; Path=/; Secure; SameSite=None; Partitioned")
    }

    @Test func theCapsAreChromiums() {
        #expect(CookieJar.perDomainLimit == 180 && CookieJar.totalLimit == 3000)
        #expect(CookieJar().limits == (180, 3000))
    }

    @Test func perDomainCapEvictsExpiredThenLeastRecentlyUsed() {
        let limit = 12
        let rig = JarRig(limits: (limit, 100))
        rig.set("http://b.example.com/", "expired=1; Max-Age=5")
        rig.set("http://example.com/", "old=1")
        for index in 0..<(limit - 2) { rig.set("http://a.example.com/", "c\(index)=1; Domain=example.com") }
        rig.clock.set(T0 + 10)
        _ = rig.header("http://a.example.com/")  // touches every domain cookie, not `old` (host-only)
        rig.set("http://example.com/", "new1=1")
        #expect(rig.jar.all().count == limit)
        #expect(!rig.jar.all().contains { $0.name == "expired" })
        rig.set("http://example.com/", "new2=1")
        let names = Set(rig.jar.all().map(\.name))
        #expect(names.count == limit && !names.contains("old") && names.contains("new1") && names.contains("new2"))
        rig.set("http://other.com/", "o=1")
        #expect(rig.jar.all().count == limit + 1)
        // At the cap exactly, nothing goes.
        let small = JarRig(limits: (3, 100))
        for index in 0..<3 {
            small.clock.set(T0 + Double(index))
            small.set("http://x.com/", "c\(index)=1")
        }
        #expect(small.jar.all().map(\.name) == ["c0", "c1", "c2"])
    }

    @Test func totalCapEvicts() {
        let rig = JarRig(limits: (50, 30))
        for site in 0..<4 {
            rig.clock.set(T0 + Double(site))
            for index in 0..<10 { rig.set("http://s\(site).com/", "c\(index)=1") }
        }
        let all = rig.jar.all()
        #expect(all.count == 30)
        #expect(!all.contains { $0.domain == "s0.com" })
    }

    @Test func clearByDomainAndTime() {
        let rig = JarRig()
        rig.set("http://a.example.com/", "a=1", "d=1; Domain=example.com")
        rig.set("http://other.com/", "o=1")
        rig.clock.set(T0 + 100)
        rig.set("http://other.com/", "p=1")
        #expect(rig.jar.clear(domain: "example.com") == 2)
        #expect(rig.jar.clear(since: T0 + 50) == 1)
        #expect(rig.jar.all().map(\.name) == ["o"])
        #expect(rig.jar.clear() == 1)
    }

    @Test func setCookieLineRoundTrips() {
        let rig = JarRig()
        let cookie = rig.set("https://www.example.com/a/b", "n=v; Domain=example.com; Max-Age=3600; Secure; HttpOnly; SameSite=Strict")[0].cookie!
        #expect(cookie.setCookieLine == "n=v; Domain=example.com; Path=/a; Expires=\(HTTPDate.format(T0 + 3600)); Secure; HttpOnly; SameSite=Strict")
        let again = JarRig()
        again.set("https://x.example.com/", cookie.setCookieLine)
        #expect(again.jar.all().first.map { ($0.domain, $0.path, $0.expires, $0.hostOnly) } ?? ("", "", nil, true) == ("example.com", "/a", T0 + 3600, false))
    }

    /// Paths and domains match by their bytes (RFC 6265 5.1.3, 5.1.4): an "é" written as one
    /// scalar and one written as "e" and a combining accent differ, though Swift's String calls
    /// them equal (and, compared that way, a path prefix's byte count ran past the end of the
    /// path: a trap).
    @Test func pathsAndDomainsMatchByBytesNotCharacters() {
        #expect(!CookieURL.path("/\u{E9}a", matches: "/e\u{301}"))
        #expect(!CookieURL.path("/\u{E9}", matches: "/e\u{301}"))
        #expect(CookieURL.path("/e\u{301}/a", matches: "/e\u{301}"))
        #expect(!CookieURL.path("/e", matches: "/e\u{301}"))
        #expect(CookieURL.domain("a.example.com", matches: "example.com"))
        // Not a byte suffix, though String's hasSuffix says it is and the byte before is a dot.
        #expect(!CookieURL.domain("..\u{E9}", matches: "e\u{301}"))
    }
}
