import BridgeCore
import Foundation
import Testing

/// A page connection without a handshake (the WKWebView transport and the WebKit host): identity
/// only from `page.identity`, an opaque origin for a page that is not http(s).
@Suite struct PageIdentityTests {
    let sink = RecordingSink()

    func pageConnection(upstream: ScriptedUpstream) -> BrokerConnection {
        let broker = Broker()
        let jar = CookieJar()
        jar.store("c=1; Path=/", for: CookieURL("https://api.example/")!, context: CookieContext())
        broker.register("fetch", FetchHandler(upstream: upstream, rules: URLRules(allow: ["*"]), cookies: jar))
        broker.register("page.identity", PageIdentityHandler())
        return broker.connect(sink: sink, info: ConnectionInfo(origin: nil, peer: "webview", isPage: true))
    }

    func sent(_ upstream: ScriptedUpstream, _ name: String) -> String? {
        upstream.requests.last?.headers[name]
    }

    @Test func anOpaquePageKeepsItsUserAgentAndSendsNoCookiesSameOrigin() async throws {
        let upstream = FetchHandlerTests.okText
        let connection = pageConnection(upstream: upstream)
        post(connection, ["type": "post", "name": "page.identity", "id": 1, "body": ["url": "app://bundle/index.html", "userAgent": "AppView/2", "languages": ["fr-CA", "fr", "en", "de", "it", "es", "pt", "nl", "sv", "da", "no"]]])
        #expect(try await sink.reply(1)["ok"] == true)
        post(connection, ["type": "post", "name": "fetch", "id": 2, "body": ["url": "https://api.example/x", "headers": [["Cookie", "forged=1"]]]])
        #expect(try await sink.reply(2)["ok"] == true)
        #expect(sent(upstream, "user-agent") == "AppView/2")
        #expect(sent(upstream, "accept-language") == "fr-CA,fr;q=0.9,en;q=0.8,de;q=0.7,it;q=0.6,es;q=0.5,pt;q=0.4,nl;q=0.3,sv;q=0.2,da;q=0.1,no;q=0.1")
        #expect(sent(upstream, "cookie") == nil)  // same-origin from an opaque origin; the page's own Cookie is dropped
        #expect(sent(upstream, "referer") == nil && sent(upstream, "origin") == nil)
        post(connection, ["type": "post", "name": "fetch", "id": 3, "body": ["url": "https://api.example/x", "credentials": "include"]])
        #expect(try await sink.reply(3)["ok"] == true)
        #expect(sent(upstream, "cookie") == "c=1")
    }

    @Test func anHTTPPageGivesReferrerAndOrigin() async throws {
        let upstream = FetchHandlerTests.okText
        let connection = pageConnection(upstream: upstream)
        post(connection, ["type": "post", "name": "page.identity", "id": 1, "body": ["url": "https://www.example/app/view?q=1"]])
        #expect(try await sink.reply(1)["ok"] == true)
        post(connection, ["type": "post", "name": "fetch", "id": 2, "body": ["url": "https://api.example/x", "method": "POST", "body": ["text": "x"], "referrerPolicy": "origin-when-cross-origin"]])
        #expect(try await sink.reply(2)["ok"] == true)
        #expect(sent(upstream, "referer") == "https://www.example/" && sent(upstream, "origin") == "https://www.example")
        #expect(sent(upstream, "user-agent") == "bridge-broker/\(BrokerConfiguration.version)")  // none reported
        post(connection, ["type": "post", "name": "fetch", "id": 3, "body": ["url": "http://www.example/y", "method": "POST", "body": ["text": "x"], "mode": "no-cors"]])
        #expect(try await sink.reply(3)["ok"] == true)
        // strict-origin-when-cross-origin: https to http is a downgrade: no Referer, and Origin null.
        #expect(sent(upstream, "referer") == nil && sent(upstream, "origin") == "null")
        post(connection, ["type": "post", "name": "page.identity", "id": 4, "body": ["url": "not a url"]])
        #expect(try await sink.reply(4)["error"]?["code"] == "bad_request")
    }
}
