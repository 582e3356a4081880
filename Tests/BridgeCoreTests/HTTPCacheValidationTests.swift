import Testing
@testable import BridgeCore

/// Hits, revalidation, Vary and invalidation through `HTTPCache`.
struct HTTPCacheValidationTests {
    @Test func hitCarriesAgeAndCacheStatusAndNoOriginRequest() async throws {
        let rig = CacheRig(validatingOrigin(["cache-control": "max-age=60", "set-cookie": "a=1"]))
        let (first, _, miss) = try await rig.fetch()
        #expect(first == .miss && miss.response.headers.first("cache-status") == "bridge-broker; fwd=uri-miss; fwd-status=200; ttl=60; stored")
        rig.clock.set(T0 + 12)
        let (status, body, hit) = try await rig.fetch()
        #expect(status == .hit && body == "hello" && rig.upstream.count == 1)
        #expect(hit.age == 12 && hit.response.headers.first("age") == "12")
        #expect(hit.response.headers.first("cache-status") == "bridge-broker; hit; ttl=48")
        #expect(!hit.response.headers.contains("set-cookie"))
        #expect(hit.response.body.length == 5)
        #expect(rig.cache.statistics.hits == 1 && rig.cache.statistics.misses == 1)
    }

    @Test func mustRevalidateNeverServesStaleEvenOnError() async throws {
        let rig = CacheRig { request in
            if request.headers.contains("if-none-match") { throw BridgeError(.network, "down") }
            return response(200, ["cache-control": "max-age=60, must-revalidate, stale-if-error=600", "etag": "\"v1\""])
        }
        try await rig.fetch()
        rig.clock.set(T0 + 30)
        #expect(try await rig.fetch().0 == .hit)
        rig.clock.set(T0 + 100)
        await #expect(throws: BridgeError.self) { try await rig.fetch() }
        #expect(rig.upstream.count == 2)
    }

    @Test func noCacheResponseRevalidatesAndA304ServesTheStoredBody() async throws {
        let rig = CacheRig(validatingOrigin(["cache-control": "no-cache", "etag": "\"v1\""], body: "stored body"))
        try await rig.fetch()
        let (status, body, exchange) = try await rig.fetch()
        #expect(status == .revalidated && body == "stored body")
        #expect(rig.upstream.requests.last?.headers.first("if-none-match") == "\"v1\"")
        #expect(exchange.response.status == 200)
        #expect(rig.cache.statistics.revalidations == 1)
    }

    @Test func a304WithANewContentTypeKeepsTheStoredOne() async throws {
        let rig = CacheRig { request in
            if request.headers.contains("if-none-match") {
                return response(304, ["etag": "\"v1\"", "content-type": "text/plain", "cache-control": "max-age=60"], body: "")
            }
            return response(200, ["content-type": "text/html", "etag": "\"v1\"", "cache-control": "max-age=60"])
        }
        try await rig.fetch()
        rig.clock.set(T0 + 100)
        let (status, _, exchange) = try await rig.fetch()
        #expect(status == .revalidated)
        #expect(exchange.response.headers.values("content-type") == ["text/html"])
        #expect(try await rig.store.entries(for: url).first?.headers.values("content-type") == ["text/html"])
    }

    @Test func varyKeepsOneVariantPerLanguage() async throws {
        let rig = CacheRig { request in
            let language = request.headers.first("accept-language") ?? "none"
            return response(200, ["cache-control": "max-age=60", "vary": "Accept-Language"], body: language)
        }
        let en = request(url, ["accept-language": "en"])
        let fr = request(url, ["accept-language": "fr"])
        #expect(try await rig.fetch(en).0 == .miss)
        #expect(try await rig.fetch(fr).0 == .miss)
        let (status, body, _) = try await rig.fetch(en)
        #expect(status == .hit && body == "en")
        #expect(try await rig.fetch(fr).1 == "fr")
        #expect(rig.upstream.count == 2 && rig.store.count == 2)
    }

    @Test func postSuccessInvalidatesAndPostErrorDoesNot() async throws {
        let rig = CacheRig { request in
            if request.method == "POST" { return response(request.url.hasSuffix("fail") ? 500 : 201, [:]) }
            return response(200, ["cache-control": "max-age=600"])
        }
        let failing = url + "?fail"
        try await rig.fetch()
        try await rig.fetch(request(failing))
        try await rig.fetch(request(url, method: "POST"))
        try await rig.fetch(request(failing, method: "POST"))
        #expect(try await rig.store.entries(for: url).isEmpty)
        #expect(try await rig.store.entries(for: failing).count == 1)
        let (status, _, exchange) = try await rig.fetch(request(url, method: "POST"))
        #expect(status == .bypass && exchange.response.headers.first("cache-status") == "bridge-broker; fwd=method; fwd-status=201")
    }

    @Test func aMismatched304IsRetriedUnconditionally() async throws {
        let rig = CacheRig { request in
            if request.headers.contains("if-none-match") { return response(304, ["etag": "\"other\""], body: "") }
            return response(200, ["cache-control": "max-age=60", "etag": "\"v1\""], body: "fresh")
        }
        try await rig.fetch()
        rig.clock.set(T0 + 100)
        let (_, body, exchange) = try await rig.fetch()
        #expect(body == "fresh" && exchange.response.status == 200 && rig.upstream.count == 3)
    }
}
