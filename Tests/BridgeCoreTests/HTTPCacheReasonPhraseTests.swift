import Testing
@testable import BridgeCore

/// The origin's reason phrase is stored with the entry and answered by hits, stale serves and
/// 304 revalidations, as Chromium's cache keeps the stored status line.
struct HTTPCacheReasonPhraseTests {
    func phrased(_ status: Int, _ phrase: String, _ headers: HeaderList, body: String = "hello") -> UpstreamResponse {
        var answer = response(status, headers, body: body)
        answer.statusText = phrase
        return answer
    }

    @Test func aHitAnswersTheStoredPhraseByteForByte() async throws {
        // "Fin\u{E9}": the byte 0xE9 as one character, as the upstream adapter gives it.
        let rig = CacheRig { _ in self.phrased(200, "Fin\u{E9} By Me", ["cache-control": "max-age=60"]) }
        let (_, _, miss) = try await rig.fetch()
        #expect(miss.response.statusText == "Fin\u{E9} By Me")
        #expect(try await rig.store.entries(for: url).first?.statusText == "Fin\u{E9} By Me")
        let (status, body, hit) = try await rig.fetch()
        #expect(status == .hit && body == "hello" && rig.upstream.count == 1)
        #expect(hit.response.status == 200 && hit.response.statusText == "Fin\u{E9} By Me")
    }

    @Test func anEmptyPhraseStaysEmptyAndAnUnknownOneIsTheStandardPhrase() async throws {
        // Over HTTP/2 there is no phrase: a hit says "" as the network did.
        let rig = CacheRig { _ in self.phrased(200, "", ["cache-control": "max-age=60"]) }
        try await rig.fetch()
        #expect(try await rig.fetch().2.response.statusText == "")
        // An entry stored before phrases were kept (nil) answers the standard phrase.
        var old = try #require(await rig.store.entries(for: url).first)
        old.statusText = nil
        #expect(old.servedStatusText == "OK")
        #expect(CachedResponse(url: url, status: 404, headers: [:], requestHeaders: [:], requestTime: 0, responseTime: 0)
            .servedStatusText == "Not Found")
    }

    @Test func aStaleServeOnErrorAnswersTheStoredPhrase() async throws {
        let rig = CacheRig { request in
            if request.headers.contains("if-none-match") { return self.phrased(503, "Down For Now", [:], body: "") }
            return self.phrased(200, "Fine By Me", ["cache-control": "max-age=1, stale-if-error=600", "etag": "\"v1\""])
        }
        try await rig.fetch()
        rig.clock.set(T0 + 100)
        let (status, body, stale) = try await rig.fetch()
        #expect(status == .stale && body == "hello" && rig.upstream.count == 2)
        #expect(stale.response.status == 200 && stale.response.statusText == "Fine By Me")
    }

    @Test func a304KeepsTheStoredStatusLine() async throws {
        let rig = CacheRig { request in
            if request.headers.first("if-none-match") == "\"v1\"" {
                return self.phrased(304, "Still The Same", ["etag": "\"v1\"", "cache-control": "max-age=60"], body: "")
            }
            return self.phrased(200, "Fine By Me", ["cache-control": "no-cache", "etag": "\"v1\""])
        }
        try await rig.fetch()
        let (status, _, revalidated) = try await rig.fetch()
        #expect(status == .revalidated && rig.upstream.count == 2)
        #expect(revalidated.response.status == 200 && revalidated.response.statusText == "Fine By Me")
        // The freshened entry keeps it too, for the hits that follow.
        #expect(try await rig.store.entries(for: url).first?.statusText == "Fine By Me")
        let (hit, _, after) = try await rig.fetch()
        #expect(hit == .hit && after.response.statusText == "Fine By Me")
    }
}
