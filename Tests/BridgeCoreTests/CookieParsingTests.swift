import Testing
@testable import BridgeCore

struct CookieParsingTests {
    static let rfcExample: Double = 784_111_777  // Sun, 06 Nov 1994 08:49:37 GMT

    @Test(arguments: [
        "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
        "06 Nov 1994 08:49:37", "Nov 06 08:49:37 1994 GMT", "1994 Nov 6 08:49:37", "sun, 06 nov 1994 08:49:37 utc",
        "Sun, 06-Nov-1994 08:49:37 GMT", "6 NOVEMBER 1994 8:49:37", "Sun, 06 Nov 94 08:49:37 +0000",
        "08:49:37;06;nov;1994", "Sun, 06 Nov 1994 08:49:37am GMT",
    ])
    func cookieDatesParseLeniently(text: String) {
        #expect(CookieDate.parse(text) == Self.rfcExample)
    }

    @Test(arguments: [
        "", "now", "Sun, 06 Nov 1994", "Sun, 32 Nov 1994 08:49:37 GMT", "Wed, 29 Feb 1995 08:49:37 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
        "Sun, 06 Nov 1600 08:49:37 GMT", "Sun, 06 Nov 08:49:37 GMT", "Sun, 06 Nov 1994 08:49 GMT", "123 Nov 1994 08:49:37",
    ])
    func badCookieDatesFail(text: String) {
        #expect(CookieDate.parse(text) == nil)
    }

    @Test func twoDigitYearsFollowTheRFCWindow() {
        #expect(CookieDate.parse("01 Jan 70 00:00:00") == 0)
        #expect(CookieDate.parse("01 Jan 69 00:00:00") == HTTPDate.epoch(year: 2069, month: 1, day: 1, time: (0, 0, 0)))
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let line: String
        let name: String?
        let value: String
        var testDescription: String { line.count > 40 ? "\(line.prefix(20))... (\(line.utf8.count) bytes)" : line }
    }

    @Test(arguments: [
        Case(line: "a=b", name: "a", value: "b"),
        Case(line: " a = b ; Path=/", name: "a", value: "b"),
        Case(line: "a=b=c", name: "a", value: "b=c"),
        Case(line: "justvalue", name: "", value: "justvalue"),
        Case(line: "=v", name: "", value: "v"),
        Case(line: "a=", name: "a", value: ""),
        Case(line: "a=\"quoted, with comma\"", name: "a", value: "\"quoted, with comma\""),
        Case(line: "a=1\tb", name: "a", value: "1\tb"),
        Case(line: "=", name: nil, value: ""),
        Case(line: "", name: nil, value: ""),
        Case(line: "  ; Path=/", name: nil, value: ""),
        Case(line: "a=b\u{01}", name: nil, value: ""),
        Case(line: "a=b\u{7F}", name: nil, value: ""),
        Case(line: "a=b\r\nc=d", name: nil, value: ""),
        Case(line: "a=" + String(repeating: "x", count: 4096), name: nil, value: ""),
        Case(line: "a=" + String(repeating: "x", count: 4095) + "; Path=/", name: "a", value: String(repeating: "x", count: 4095)),
    ])
    func nameAndValue(_ test: Case) {
        let parsed = try? SetCookie(parsing: test.line)
        #expect(parsed?.name == test.name)
        if test.name != nil { #expect(parsed?.value == test.value) }
    }

    @Test func attributesTheLastOneWins() throws {
        let parsed = try SetCookie(parsing: "a=b; path=/x; Path=/y; DOMAIN=.Example.COM; secure; HTTPONLY; SameSite=strict; samesite=LAX; Max-Age=60; Expires=Sun, 06 Nov 1994 08:49:37 GMT; Unknown=1")
        #expect(parsed.path == "/y")
        #expect(parsed.domain == "example.com")
        #expect(parsed.secure && parsed.httpOnly)
        #expect(parsed.sameSite == .lax)
        #expect(parsed.maxAge == 60)
        #expect(parsed.expires == Self.rfcExample)
    }

    /// Fuzz target `set-cookie`, Fuzz/corpus/set-cookie/crash-domain-dot: `Domain=.` is an
    /// empty cookie-domain, so no Domain attribute (host-only), also after an earlier Domain.
    @Test func domainOfOnlyADotIsNoDomain() throws {
        #expect(try SetCookie(parsing: "a=b; Domain=.").domain == nil)
        #expect(try SetCookie(parsing: "a=b; Domain=example.com; Domain=.").domain == nil)
        let rig = JarRig()
        rig.set("https://www.example.com/", "a=b; Domain=.")
        #expect(rig.header("https://www.example.com/") == "a=b")
        #expect(rig.header("https://api.example.com/") == "")
    }

    @Test(arguments: [
        ("a=b; Path=relative", nil), ("a=b; Path=", nil), ("a=b; Domain=", nil), ("a=b; Max-Age=+5", nil), ("a=b; Max-Age=5s", nil),
        ("a=b; Max-Age=", nil), ("a=b; Expires=garbage", nil), ("a=b; SameSite=bogus", nil),
        ("a=b; Path=/" + String(repeating: "p", count: 1024), nil),
    ] as [(String, String?)])
    func invalidAttributesAreIgnoredNotTheCookie(line: String, _: String?) throws {
        let parsed = try SetCookie(parsing: line)
        #expect(parsed.name == "a" && parsed.path == nil && parsed.domain == nil && parsed.maxAge == nil && parsed.expires == nil)
        #expect(parsed.sameSite == .unspecified)
    }

    @Test func maxAgeSignsAndSaturation() throws {
        #expect(try SetCookie(parsing: "a=b; Max-Age=-1").maxAge == -1)
        #expect(try SetCookie(parsing: "a=b; Max-Age=0").maxAge == 0)
        #expect(try SetCookie(parsing: "a=b; Max-Age=99999999999999999999999").maxAge == 999_999_999_999_999)
    }

    @Test func publicSuffixes() {
        let list = PublicSuffixList.shared
        #expect(list.source == PublicSuffixList.debianPath)
        #expect(list.isPublicSuffix("com"))
        #expect(list.isPublicSuffix("co.uk"))
        #expect(!list.isPublicSuffix("example.co.uk"))
        #expect(list.registrableDomain(of: "a.b.example.co.uk") == "example.co.uk")
        #expect(list.registrableDomain(of: "co.uk") == nil)
        #expect(list.isPublicSuffix("github.io"))  // the private section counts, as in browsers
        #expect(list.publicSuffix(of: "www.ck") == "ck")  // an exception to *.ck
        #expect(list.publicSuffix(of: "foo.ck") == "foo.ck")
        #expect(list.publicSuffix(of: "foo.unknowntld") == "unknowntld")  // the default rule
        #expect(list.isPublicSuffix("xn--p1ai"))  // рф, written in Unicode in the file
        #expect(PublicSuffixList.builtIn.isPublicSuffix("co.uk") && !PublicSuffixList.builtIn.isPublicSuffix("example.com"))
    }

    @Test func punycode() {
        #expect(Punycode.asciiLabel("bücher") == "xn--bcher-kva")
        #expect(Punycode.asciiLabel("рф") == "xn--p1ai")
        #expect(Punycode.asciiDomain("münchen.de") == "xn--mnchen-3ya.de")
    }
}
