import Foundation
import Testing
@testable import BridgeCore

struct UpstreamProxyTests {
    @Test func parsesTheThreeKindsWithDefaultsAndCredentials() throws {
        let http = try UpstreamProxy(url: "http://fleet:p%40ss%3Aw@squid.internal")
        #expect(http.kind == .http && http.host == "squid.internal" && http.port == 3128)
        #expect(http.username == "fleet" && http.password == "p@ss:w")
        #expect(http.authorization == "Basic " + "fleet:p@ss:w".data(using: .utf8)!.base64EncodedString())
        #expect(http.description == "http://fleet:***@squid.internal:3128")
        let socks = try UpstreamProxy(url: "SOCKS5://[::1]")
        #expect(socks.kind == .socks5 && socks.host == "::1" && socks.port == 1080 && socks.authorization == nil)
        #expect(try UpstreamProxy(url: "socks5h://127.0.0.1:9050/").kind == .socks5h)
    }

    @Test(arguments: [
        "ftp://127.0.0.1:21", "127.0.0.1:3128", "http://", "http://host:0", "http://host:70000", "http://host/path",
        "http://host?x=1", "socks5://user:pw@host", "socks5h://user@host",
    ])
    func refusesWhatItCannotUse(url: String) {
        #expect(throws: BridgeError.self) { try UpstreamProxy(url: url) }
    }

    @Test func noProxyPatterns() throws {
        let proxy = try UpstreamProxy(url: "http://p", noProxy: ["Example.com, .corp.internal", "10.1.2.3", "svc:8080"])
        let cases: [(String, Int, Bool)] = [
            ("example.com", 80, true), ("www.EXAMPLE.com", 443, true), ("badexample.com", 80, false),
            ("a.corp.internal", 80, true), ("corp.internal", 80, true), ("internal", 80, false),
            ("10.1.2.3", 80, true), ("10.1.2.4", 80, false), ("svc", 8080, true), ("svc", 80, false),
            ("127.0.0.1", 80, false),
        ]
        for (host, port, expected) in cases {
            #expect(proxy.bypasses(host: host, port: port) == expected, "\(host):\(port)")
        }
        #expect(try UpstreamProxy(url: "http://p", noProxy: ["*"]).bypasses(host: "anything", port: 1))
        #expect(throws: BridgeError.self) { try UpstreamProxy(url: "http://p", noProxy: ["10.0.0.0/8"]) }
    }
}
