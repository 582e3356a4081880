import BridgeCore
import BridgeServer
import BridgeTestOrigin
import Foundation
import Testing

/// The HTTP cache through the real server, real sockets and a local origin.
@Suite(.serialized)
struct CacheIntegrationTests {
    @Test func aSecondFetchIsAHitWithNoOriginRequest() async throws {
        let harness = try await CacheHarness.start()
        let path = "/cached?cc=max-age%3D600&etag=v1"
        let first = try await harness.fetch(path)
        #expect(first.reply.cacheStatus == "miss")
        // ttl is 600 minus the exchange's own delay, rounded toward zero.
        let cacheStatus = try #require(first.reply.header("cache-status"))
        #expect(cacheStatus.hasPrefix("bridge-broker; fwd=uri-miss; fwd-status=200; ttl=59") && cacheStatus.hasSuffix("; stored"))
        let second = try await harness.fetch(path)
        #expect(harness.origin.requestCount("/cached") == 1)
        #expect(second.reply.cacheStatus == "hit" && (second.reply["cache"]?["age"]?.intValue ?? -1) <= 1)
        #expect(second.reply.header("cache-status")?.hasPrefix("bridge-broker; hit") == true)
        #expect(second.reply.header("age") == second.reply["cache"]?["age"]?.intValue.map(String.init))
        #expect(second.response?.cacheStatus == "hit")
        #expect(second.reply["body"] == first.reply["body"] && second.reply["status"]?.intValue == 200)
        await harness.stop()
    }

    @Test func noCacheResponsesAreRevalidatedWith304() async throws {
        let harness = try await CacheHarness.start()
        let path = "/cached?cc=no-cache&etag=v1"
        _ = try await harness.fetch(path)
        let second = try await harness.fetch(path)
        #expect(second.reply.cacheStatus == "revalidated" && second.reply["body"]?.stringValue == "variant=")
        #expect(harness.origin.requestCount("/cached") == 2)
        await harness.stop()
    }

    @Test func modesNoStoreReloadForceCacheAndOnlyIfCached() async throws {
        let harness = try await CacheHarness.start()
        let path = "/cached?cc=max-age%3D600"
        #expect(try await harness.fetch(path, cache: "no-store").reply.cacheStatus == "bypass")
        do {
            _ = try await harness.fetch(path, cache: "only-if-cached")
            Issue.record("only-if-cached with nothing stored must fail")
        } catch let error as BridgeError {
            #expect(error.code == .notCached)
        }
        #expect(try await harness.fetch(path, cache: "reloadIgnoringLocalCacheData").reply.cacheStatus == "bypass")
        #expect(try await harness.fetch(path, cache: "returnCacheDataDontLoad").reply.cacheStatus == "hit")
        #expect(try await harness.fetch(path, cache: "force-cache").reply.cacheStatus == "hit")
        #expect(harness.origin.requestCount("/cached") == 2)
        await harness.stop()
    }

    /// `fresh-only` over the real broker (SQLite on disk, the real origin): a fresh stored
    /// response is a hit, and a stale one or none fails with `not_cached` without a request upstream.
    @Test func freshOnlyServesFreshHitsAndNothingElse() async throws {
        let harness = try await CacheHarness.start()
        let fresh = "/cached?cc=max-age%3D600"
        let stale = "/cached?cc=max-age%3D0"
        for path in [fresh, stale] {
            do {
                _ = try await harness.fetch(path, cache: "fresh-only")
                Issue.record("fresh-only with nothing stored must fail")
            } catch let error as BridgeError {
                #expect(error.code == .notCached)
            }
            _ = try await harness.fetch(path)
        }
        #expect(harness.origin.requestCount("/cached") == 2)
        #expect(try await harness.fetch(fresh, cache: "fresh-only").reply.cacheStatus == "hit")
        do {
            _ = try await harness.fetch(stale, cache: "fresh-only")
            Issue.record("fresh-only must not serve a stale response")
        } catch let error as BridgeError {
            #expect(error.code == .notCached)
        }
        #expect(try await harness.fetch(stale, cache: "only-if-cached").reply.cacheStatus == "stale")
        #expect(harness.origin.requestCount("/cached") == 2)
        await harness.stop()
    }

    @Test func varyServesEachLanguageItsOwnVariant() async throws {
        let harness = try await CacheHarness.start()
        let path = "/cached?cc=max-age%3D600&vary=Accept-Language"
        for language in ["en", "fr", "en", "fr"] {
            let reply = try await harness.fetch(path, headers: [["Accept-Language", .string(language)]]).reply
            #expect(reply["body"]?.stringValue == "variant=\(language)")
        }
        #expect(harness.origin.requestCount("/cached") == 2)
        await harness.stop()
    }

    @Test func aBinaryBodyIsStoredWhileItStreamsAndServedAsBinaryFrames() async throws {
        let harness = try await CacheHarness.start()
        let path = "/cached?cc=max-age%3D600&size=1048576"
        let expected = (0..<1_048_576).map(patternByte)
        let first = try await harness.fetch(path, responseBody: "binary")
        #expect(first.binary == expected)
        let second = try await harness.fetch(path, responseBody: "binary")
        #expect(second.reply.cacheStatus == "hit" && second.binary == expected)
        #expect(second.reply["bodyBytes"]?.intValue == 1_048_576)
        #expect(harness.origin.requestCount("/cached") == 1)
        await harness.stop()
    }

    /// Body files are not fsynced; one that does not match its row's checksum (as after a crash
    /// before the kernel wrote it) is a miss: the entry is deleted, the origin asked again, and
    /// `cache.stats` counts it.
    @Test func aDamagedBodyFileIsAMissCountedInStats() async throws {
        let harness = try await CacheHarness.start()
        let path = "/cached?cc=max-age%3D600&size=1048576"
        let expected = (0..<1_048_576).map(patternByte)
        #expect(try await harness.fetch(path, responseBody: "binary").binary == expected)
        // Committed (not read back: that would put the body in the memory tier).
        let deadline = ContinuousClock.now + .seconds(30)
        while try await harness.client.post("cache.stats")["disk"]?["entries"]?.intValue != 1, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: harness.directory + "/bodies")
        let file = harness.directory + "/bodies/" + (try #require(names.first))
        var bytes = try #require(FileManager.default.contents(atPath: file))
        bytes[1000] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: file))

        let second = try await harness.fetch(path, responseBody: "binary")
        #expect(second.reply.cacheStatus == "miss" && second.binary == expected)
        #expect(harness.origin.requestCount("/cached") == 2)
        let stats = try await harness.client.post("cache.stats")
        #expect(stats["damaged"]?.intValue == 1)
        // Stored again from that miss, then a hit with the right bytes.
        try await waitForCommit(of: harness.origin.url(path), harness.client)
        let third = try await harness.fetch(path, responseBody: "binary")
        #expect(third.reply.cacheStatus == "hit" && third.binary == expected)
        await harness.stop()
    }

    @Test func statsAndClearOverTheProtocol() async throws {
        let harness = try await CacheHarness.start()
        _ = try await harness.fetch("/cached?cc=max-age%3D600&etag=a")
        _ = try await harness.fetch("/cached?cc=max-age%3D600&etag=a")
        let stats = try await harness.client.post("cache.stats")
        #expect(stats["disk"]?["entries"]?.intValue == 1 && stats["hits"]?.intValue == 1 && stats["misses"]?.intValue == 1)
        #expect(stats["disabled"]?.boolValue == false)
        let cleared = try await harness.client.post("cache.clear", ["prefix": .string(harness.origin.url("/cached"))])
        #expect(cleared["removed"]?.intValue == 1)
        #expect(try await harness.fetch("/cached?cc=max-age%3D600&etag=a").reply.cacheStatus == "miss")
        await #expect(throws: BridgeError.self) { try await harness.client.post("cache.clear", ["prefix": 5]) }
        await harness.stop()
    }

    @Test func entriesSurviveABrokerRestart() async throws {
        let first = try await CacheHarness.start()
        _ = try await first.fetch("/cached?cc=max-age%3D600")
        try await waitForCommit(of: first.origin.url("/cached?cc=max-age%3D600"), first.client)
        await first.stop(removing: false)
        let second = try await CacheHarness.start(directory: first.directory)
        let reply = try await second.client.post("fetch", ["url": .string(first.origin.url("/cached?cc=max-age%3D600")), "cache": "only-if-cached"])
        #expect(reply.cacheStatus == "hit")
        await second.stop()
    }

    @Test func aCorruptDatabaseServesUncachedAndSaysSo() async throws {
        let harness = try await CacheHarness.start { directory in
            let garbage = Data(repeating: 0x42, count: 4096)
            FileManager.default.createFile(atPath: directory + "/bridge-broker.sqlite", contents: garbage)
        }
        let path = "/cached?cc=max-age%3D600"
        #expect(try await harness.fetch(path).reply["status"]?.intValue == 200)
        #expect(try await harness.fetch(path).reply.cacheStatus == "miss")
        #expect(harness.origin.requestCount("/cached") == 2)
        let stats = try await harness.client.post("cache.stats")
        #expect(stats["disabled"]?.boolValue == true && stats["reason"]?.stringValue?.isEmpty == false)
        await harness.stop()
    }
}
