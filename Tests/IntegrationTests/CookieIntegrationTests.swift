import BridgeCore
import BridgeServer
import BridgeTestOrigin
import BridgeWebSocket
import Foundation
import Testing

/// The cookie jar and identity headers through a real broker against the real local origin.
@Suite(.serialized) struct CookieIntegrationTests {
    /// The origin's view of a request (`/cookies/echo`, `/cookies/set`, a redirect's last hop).
    static func echoed(_ reply: JSONValue) throws -> (cookie: String?, headers: [String: String]) {
        let text = try #require(reply["body"]?.stringValue)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        return (object["cookie"] as? String, object["headers"] as? [String: String] ?? [:])
    }

    static func body(_ reply: JSONValue) throws -> [String: Any] {
        let text = try #require(reply["body"]?.stringValue)
        return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func headlessLoginSessionAndLogout() async throws {
        let harness = try await BrokerHarness.start()
        defer { Task { await harness.stop() } }
        let client = try await harness.client()
        defer { client.close() }
        let login = try await client.post("fetch", ["url": .string(harness.origin.url("/cookies/login?user=ann")), "method": "POST"])
        #expect(login["status"] == 200)
        #expect(login["headers"]?.arrayValue?.contains { $0.arrayValue?.first == "set-cookie" } == false)
        #expect(login["cookies"] == nil)  // headless: nothing for document.cookie
        let whoami = try Self.body(try await client.post("fetch", ["url": .string(harness.origin.url("/cookies/whoami"))]))
        #expect(whoami["user"] as? String == "ann")
        #expect((whoami["cookie"] as? String)?.hasPrefix("session=s-ann-") == true)

        // exposeSetCookie shows the lines to a headless client.
        let exposed = try await client.post("fetch", [
            "url": .string(harness.origin.url("/cookies/set?c=x%3D1%3B%20Path%3D%2F")), "exposeSetCookie": true,
        ])
        #expect(exposed["headers"]?.arrayValue?.contains { $0 == ["set-cookie", "x=1; Path=/"] } == true)

        // On a cache hit, the lines stored with the response (a hit sets no cookie itself).
        let cached = harness.origin.url("/headers?Cache-Control=max-age%3D60&Set-Cookie=stored%3D1")
        _ = try await client.post("fetch", ["url": .string(cached)])
        await harness.server.cache.waitForPendingWrites()
        let hit = try await client.post("fetch", ["url": .string(cached), "exposeSetCookie": true])
        #expect(hit["cache"]?["status"] == "hit")
        #expect(hit["headers"]?.arrayValue?.contains { $0 == ["set-cookie", "stored=1"] } == true)
        #expect(try await client.post("cookies.set", ["url": .string(cached), "setCookie": "stored=; Max-Age=0"])["deleted"] == true)
        _ = try await client.post("fetch", ["url": .string(cached)])
        #expect(try await client.post("cookies.get", ["url": .string(cached)])["header"]?.stringValue?.contains("stored=") == false)

        _ = try await client.post("fetch", ["url": .string(harness.origin.url("/cookies/logout")), "method": "POST"])
        let after = try Self.body(try await client.post("fetch", ["url": .string(harness.origin.url("/cookies/whoami"))]))
        #expect(after["user"] is NSNull)
        #expect(after["cookie"] as? String == "x=1")

        // omit: nothing sent, nothing stored.
        let omitted = try Self.echoed(try await client.post("fetch", [
            "url": .string(harness.origin.url("/cookies/set?c=y%3D2")), "credentials": "omit",
        ]))
        #expect(omitted.cookie == nil)
        #expect(try Self.echoed(try await client.post("fetch", ["url": .string(harness.origin.url("/cookies/echo"))])).cookie == "x=1")
    }

    @Test func everyRedirectHopSetsCookiesAndCarriesThem() async throws {
        let harness = try await BrokerHarness.start()
        defer { Task { await harness.stop() } }
        let client = try await harness.client()
        defer { client.close() }
        let reply = try await client.post("fetch", ["url": .string(harness.origin.url("/cookies/redirect?hops=2&c=first%3D1%3B%20Path%3D%2F"))])
        #expect(reply["redirected"] == true)
        // The last hop received the cookies the two earlier hops set.
        #expect(try Self.echoed(reply).cookie == "first=1; hop2=1; hop1=1")
    }

    @Test func headlessIdentityHeadersAndItsOwnWin() async throws {
        let harness = try await BrokerHarness.start()
        defer { Task { await harness.stop() } }
        let client = try await harness.client()
        defer { client.close() }
        let plain = try Self.echoed(try await client.post("fetch", ["url": .string(harness.origin.url("/cookies/echo")), "method": "POST", "body": ["text": "x"]]))
        #expect(plain.headers["user-agent"] == "bridge-broker/\(BrokerConfiguration.version)")
        #expect(plain.headers["accept"] == "*/*")
        #expect(plain.headers["accept-language"] == nil && plain.headers["origin"] == nil && plain.headers["referer"] == nil)
        let own = try Self.echoed(try await client.post("fetch", [
            "url": .string(harness.origin.url("/cookies/echo")),
            "headers": [["User-Agent", "mine/1"], ["Cookie", "c=own"], ["Referer", "https://r.example/"], ["Accept", "text/html"]],
        ]))
        #expect(own.headers["user-agent"] == "mine/1" && own.cookie == "c=own" && own.headers["referer"] == "https://r.example/")
        #expect(own.headers["accept"] == "text/html")
        let referred = try Self.echoed(try await client.post("fetch", [
            "url": .string(harness.origin.url("/cookies/echo")), "referrer": "https://example.com/a/b?c#frag", "referrerPolicy": "unsafe-url",
        ]))
        #expect(referred.headers["referer"] == "https://example.com/a/b?c")
    }

    @Test func pageConnectionIdentityCookiesListAndForbiddenHeaders() async throws {
        let harness = try await BrokerHarness.start { $0.allowURLs.append("http://localhost:*") }
        defer { Task { await harness.stop() } }
        let pageOrigin = "http://127.0.0.1:\(harness.server.port)"
        let page = try await harness.client(origin: pageOrigin)
        defer { page.close() }
        // Before page.identity: the handshake's own facts (this client sends no User-Agent).
        let early = try Self.echoed(try await page.post("fetch", ["url": .string(harness.origin.url("/cookies/echo"))]))
        #expect(early.headers["origin"] == pageOrigin)  // cross-origin (another port) in cors mode
        #expect(early.headers["referer"] == nil)  // no page URL yet

        await #expect(throws: BridgeError.self) {
            try await page.post("page.identity", ["url": "http://evil.example/"])
        }
        _ = try await page.post("page.identity", [
            "url": .string(pageOrigin + "/app/page.html?q=1#top"), "userAgent": "TestBrowser/1.0", "languages": ["de-DE", "de", "en"],
        ])
        let identified = try await page.post("fetch", [
            "url": .string(harness.origin.url("/cookies/set?c=vis%3D1%3B%20Path%3D%2F&c=hid%3D1%3B%20HttpOnly%3B%20Path%3D%2F&c=bad%3D1%3B%20Domain%3Dexample.com")),
            "credentials": "include",
            "headers": [["Cookie", "forged=1"], ["User-Agent", "forged"], ["Origin", "http://forged"], ["Accept-Language", "fr"]],
        ])
        let seen = try Self.echoed(identified)
        #expect(seen.headers["user-agent"] == "TestBrowser/1.0")
        #expect(seen.headers["accept"] == "*/*")
        #expect(seen.headers["accept-language"] == "fr")  // a page may set it, as in Chromium
        #expect(seen.headers["referer"] == pageOrigin + "/")  // strict-origin-when-cross-origin, cross-origin
        #expect(seen.headers["origin"] == pageOrigin)
        #expect(seen.cookie == nil)
        #expect(identified["cookies"] == ["vis=1; Path=/"])  // not HttpOnly, not the refused one
        #expect(identified["headers"]?.arrayValue?.contains { $0.arrayValue?.first == "set-cookie" } == false)

        // same-origin (the default for a page): the origin is another origin, so no cookies.
        let sameOrigin = try Self.echoed(try await page.post("fetch", ["url": .string(harness.origin.url("/cookies/echo"))]))
        #expect(sameOrigin.cookie == nil)
        #expect(sameOrigin.headers["accept-language"] == "de-DE,de;q=0.9,en;q=0.8")
        // include: the jar's cookies (HttpOnly too), then documentCookie's pairs the jar does not send.
        _ = try await page.post("page.cookie", ["cookie": "script=1; Path=/"])
        let stored = try await page.post("page.cookie", ["cookie": "hid=overwritten; Path=/"])
        #expect(stored == ["stored": false])
        let included = try Self.echoed(try await page.post("fetch", [
            "url": .string(harness.origin.url("/cookies/echo")), "credentials": "include", "documentCookie": "vis=1; early=1",
        ]))
        // The origin has the page's scheme and host (cookies ignore ports), so documentCookie counts.
        #expect(included.cookie == "vis=1; hid=1; script=1; early=1")
        let elsewhere = try Self.echoed(try await page.post("fetch", [
            "url": .string("http://localhost:\(harness.origin.port)/cookies/echo"), "credentials": "include", "documentCookie": "vis=1; early=1",
            "referrerPolicy": "no-referrer",
        ]))
        #expect(elsewhere.headers["referer"] == nil)
        #expect(elsewhere.cookie == nil)  // another host: neither the jar's 127.0.0.1 cookies nor documentCookie

        await #expect(throws: BridgeError.self) { try await page.post("cookies.get", ["url": .string(harness.origin.url("/"))]) }
        let headless = try await harness.client()
        defer { headless.close() }
        let listed = try await headless.post("cookies.get", ["url": .string(harness.origin.url("/"))])
        #expect(listed["header"] == "vis=1; hid=1; script=1")
    }

    /// The host API's `thirdPartyCookies` reaches the jar: a page on 127.0.0.1 calling localhost
    /// (another site) gets a `SameSite=None` cookie stored and sent only when allowed, and a
    /// `Partitioned` one either way; a headless client is first-party everywhere.
    @Test(arguments: [ThirdPartyCookies.block, .allow])
    func thirdPartyCookiesFollowTheConfiguration(_ mode: ThirdPartyCookies) async throws {
        let harness = try await BrokerHarness.start {
            $0.allowURLs.append("http://localhost:*")
            $0.thirdPartyCookies = mode
        }
        defer { Task { await harness.stop() } }
        let pageOrigin = "http://127.0.0.1:\(harness.server.port)"
        let page = try await harness.client(origin: pageOrigin)
        defer { page.close() }
        _ = try await page.post("page.identity", ["url": .string(pageOrigin + "/app/page.html")])
        let other = "http://localhost:\(harness.origin.port)/cookies/"
        let lines = ["n=1; SameSite=None; Secure; Path=/", "p=1; SameSite=None; Secure; Path=/; Partitioned"]
        let query = lines.map { "c=" + $0.addingPercentEncoding(withAllowedCharacters: .alphanumerics)! }.joined(separator: "&")
        _ = try await page.post("fetch", ["url": .string(other + "set?" + query), "credentials": "include"])
        let sent = try Self.echoed(try await page.post("fetch", ["url": .string(other + "echo"), "credentials": "include"]))
        #expect(sent.cookie == (mode == .allow ? "n=1; p=1" : "p=1"))

        let headless = try await harness.client()
        defer { headless.close() }
        // The partitioned cookie is the page's site's; a headless client is its own top level.
        #expect(try Self.echoed(try await headless.post("fetch", ["url": .string(other + "echo")])).cookie == (mode == .allow ? "n=1" : nil))
        _ = try await headless.post("fetch", ["url": .string(other + "set?c=h%3D1%3B%20SameSite%3DNone%3B%20Secure%3B%20Path%3D%2F")])
        #expect(try Self.echoed(try await headless.post("fetch", ["url": .string(other + "echo")])).cookie == (mode == .allow ? "n=1; h=1" : "h=1"))
        let listed = try await headless.post("cookies.get", ["url": .string(other)])
        #expect(listed["cookies"]?.arrayValue?.map { $0["partition"] } == (mode == .allow ? [.null, .null] : [.null]))
    }

    @Test func managementHandlers() async throws {
        let harness = try await BrokerHarness.start()
        defer { Task { await harness.stop() } }
        let client = try await harness.client()
        defer { client.close() }
        #expect(try await client.post("cookies.set", ["url": "https://shop.example/", "setCookie": "cart=3; Max-Age=60; Secure"]) == ["stored": true])
        do {
            _ = try await client.post("cookies.set", ["url": "https://shop.example/", "setCookie": "x=1; Domain=other.example"])
            Issue.record("a foreign Domain was accepted")
        } catch let error as BridgeError {
            #expect(error.code == .badRequest && error.message.contains("domain-match"))
        }
        await #expect(throws: BridgeError.self) { try await client.post("cookies.set", ["url": "not a url", "setCookie": "a=1"]) }
        let got = try await client.post("cookies.get", ["url": "https://shop.example/cart"])
        #expect(got["header"] == "cart=3")
        #expect(got["cookies"]?.arrayValue?.first?["secure"] == true)
        #expect(try await client.post("cookies.get", ["url": "http://shop.example/cart"])["header"] == "")
        #expect(try await client.post("cookies.clear", ["domain": "other.example"]) == ["removed": 0])
        #expect(try await client.post("cookies.clear", ["domain": "shop.example"]) == ["removed": 1])
    }

    @Test func aRestartKeepsPersistentCookiesAndDropsSessionOnes() async throws {
        let first = try await BrokerHarness.start()
        let client = try await first.client()
        _ = try await client.post("fetch", ["url": .string(first.origin.url("/cookies/login?user=bo")), "method": "POST"])
        client.close()
        await first.stop(removing: false)
        let second = try await BrokerHarness.start { $0.cacheDirectory = first.cacheDirectory }
        defer { Task { await second.stop() } }
        let again = try await second.client()
        defer { again.close() }
        let whoami = try Self.body(try await again.post("fetch", ["url": .string(second.origin.url("/cookies/whoami"))]))
        #expect(whoami["cookie"] as? String == "remember=bo")  // the session and user cookies were session cookies
        #expect(whoami["remembered"] as? String == "bo")
    }
}
