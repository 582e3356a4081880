import BridgeCore
import BridgeTestOrigin
import Foundation
import Testing

@Suite struct PreloadIntegrationTests {
    @Test func aFetchForAURLBeingPreloadedJoinsThatTransfer() async throws {
        // The page's request must arrive while the origin holds the preload's answer back; a slow
        // CI machine needs a wide window for that.
        let harness = try await BrokerHarness.start(originLatency: .milliseconds(1500))
        let preloader = try await harness.client()
        let page = try await harness.client()
        let url = harness.origin.url("/cached?cc=max-age%3D600&size=50000")
        async let preloaded = preloader.post("preload", ["urls": [.string(url)]])
        // The preload is waiting for the origin's answer when the page asks for the same URL.
        try await waitFor { harness.origin.requestCount("/cached") == 1 }
        let fetched = try await page.post("fetch", ["url": .string(url), "responseBody": "none"])
        let reply = try await preloaded
        #expect(reply["resources"]?.arrayValue?.first?["result"] == "stored")
        #expect(fetched["status"] == 200)
        #expect(harness.origin.requestCount("/cached") == 1)
        let stats = try await page.post("cache.stats")
        #expect(stats["collapsed"] == 1)
        await harness.stop()
    }

    @Test func preloadsTheDemoPageSoItsLoadsHitTheCache() async throws {
        let harness = try await BrokerHarness.start()
        let client = try await harness.client()
        let pageURL = harness.origin.url("/page?n=12&size=1000")
        let reply = try await client.post("preload", ["page": .string(pageURL), "concurrency": 4])
        #expect(reply["totals"]?["stored"] == 12 && reply["totals"]?["bytes"] == 12_000)
        #expect(reply["sources"]?.arrayValue?.first?["resources"] == 12)
        harness.origin.resetCounts()
        for index in 1...12 {
            let fetched = try await client.post("fetch", ["url": .string(harness.origin.url("/cached?cc=max-age%3D600&size=1000&r=\(index)"))])
            #expect(fetched["cache"]?["status"] == "hit")
        }
        #expect(harness.origin.requestCounts.isEmpty)

        let manifest = try await client.post("preload", ["manifest": .string(harness.origin.url("/manifest?n=14&size=1000")), "maxCount": 13])
        #expect(manifest["totals"] == ["resources": 14, "cached": 12, "stored": 1, "uncacheable": 0, "failed": 0, "skipped": 1, "bytes": 13_000])
        await harness.stop()
    }

    @Test func aBadPreloadBodyIsBadRequest() async throws {
        let harness = try await BrokerHarness.start()
        let client = try await harness.client()
        await #expect(throws: BridgeError.self) { try await client.post("preload", ["urls": "not a list"]) }
        do {
            _ = try await client.post("preload", ["page": "http://127.0.0.1/", "maxCount": -1])
            Issue.record("a negative maxCount was accepted")
        } catch let error as BridgeError {
            #expect(error.code == .badRequest && error.message.contains("maxCount"))
        }
        await harness.stop()
    }
}
