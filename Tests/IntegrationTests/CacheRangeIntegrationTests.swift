import BridgeCore
import BridgeServer
import BridgeTestOrigin
import Foundation
import Testing

/// Byte ranges and the browser-cache rules through the real server, the SQLite store on disk
/// and the local origin's `/range` and `/headers` endpoints.
@Suite(.serialized)
struct CacheRangeIntegrationTests {
    func ranged(_ harness: CacheHarness, _ path: String, _ range: String?) async throws -> (reply: JSONValue, body: [UInt8]) {
        let headers: JSONValue = range.map { [["Range", .string($0)]] } ?? .array([])
        let result = try await harness.fetch(path, responseBody: "binary", headers: headers)
        return (result.reply, result.binary)
    }

    @Test func rangesAreServedFromAWholeStoredBody() async throws {
        let harness = try await CacheHarness.start()
        let path = "/range/100000"
        let whole = try await ranged(harness, path, nil)
        #expect(whole.reply.cacheStatus == "miss" && whole.body == patternBytes(from: 0, count: 100_000))
        for (range, first, count) in [("bytes=10-19", 10, 10), ("bytes=-5", 99_995, 5), ("bytes=99990-", 99_990, 10), ("bytes=0-0", 0, 1)] {
            let part = try await ranged(harness, path, range)
            #expect(part.reply["status"]?.intValue == 206 && part.reply.cacheStatus == "hit", "\(range)")
            #expect(part.body == patternBytes(from: first, count: count))
            #expect(part.reply.header("content-range") == "bytes \(first)-\(first + count - 1)/100000")
            #expect(part.reply.header("content-length") == String(count))
        }
        let refused = try await ranged(harness, path, "bytes=100000-")
        #expect(refused.reply["status"]?.intValue == 416 && refused.reply.header("content-range") == "bytes */100000")
        let several = try await ranged(harness, path, "bytes=0-1,5-6")
        #expect(several.reply["status"]?.intValue == 200 && several.body.count == 100_000)
        #expect(harness.origin.requestCount("/range/100000") == 1)
        await harness.stop()
    }

    @Test func aRangeOfALargeBodyOnDiskIsReadFromWhereItStarts() async throws {
        let harness = try await CacheHarness.start()
        let path = "/range/3000000"  // over the memory tier's entry limit: a body file on disk
        _ = try await ranged(harness, path, nil)
        await harness.server.cache.waitForPendingWrites()
        for (range, first, count) in [("bytes=-1000", 2_999_000, 1000), ("bytes=1500000-1600000", 1_500_000, 100_001), ("bytes=65520-65530", 65520, 11)] {
            let part = try await ranged(harness, path, range)
            #expect(part.reply.cacheStatus == "hit" && part.reply["status"]?.intValue == 206, "\(range)")
            #expect(part.body == patternBytes(from: first, count: count))
        }
        #expect(harness.origin.requestCount(path) == 1)
        await harness.stop()
    }

    @Test func partsFromTheOriginCombineUntilWhole() async throws {
        let harness = try await CacheHarness.start()
        let path = "/range/50000"
        let first = try await ranged(harness, path, "bytes=1000-1999")
        #expect(first.reply["status"]?.intValue == 206 && first.reply.cacheStatus == "miss")
        #expect(first.body == patternBytes(from: 1000, count: 1000))
        // Inside the stored part: no origin request.
        let inside = try await ranged(harness, path, "bytes=1500-1599")
        #expect(inside.reply.cacheStatus == "hit" && inside.body == patternBytes(from: 1500, count: 100))
        #expect(harness.origin.requestCount("/range/50000") == 1)
        // Overlapping the end: only the missing bytes, with If-Range.
        let later = try await ranged(harness, path, "bytes=1900-2999")
        #expect(later.reply["status"]?.intValue == 206 && later.body == patternBytes(from: 1900, count: 1100))
        #expect(harness.origin.requestCounts["range bytes=2000-2999"] == 1)
        // A plain request: the rest is fetched, the entry becomes whole, and then it is a hit.
        let whole = try await ranged(harness, path, nil)
        #expect(whole.reply["status"]?.intValue == 200 && whole.body == patternBytes(from: 0, count: 50_000))
        #expect(harness.origin.requestCounts["range bytes=0-49999"] == 1)
        let again = try await ranged(harness, path, nil)
        #expect(again.reply.cacheStatus == "hit" && again.body.count == 50_000)
        #expect(harness.origin.requestCount("/range/50000") == 3)
        await harness.stop()
    }

    @Test func aChangedRepresentationComesWholeThroughIfRange() async throws {
        let harness = try await CacheHarness.start()
        let path = "/range/3000"
        let first = try await harness.fetch(path, responseBody: "binary", headers: [["Range", "bytes=0-99"], ["X-Etag", "one"]])
        #expect(first.reply["status"]?.intValue == 206 && first.reply.header("etag") == "\"one\"")
        // The representation behind the URL changed: If-Range fails and the origin sends it whole.
        let changed = try await harness.fetch(path, responseBody: "binary", headers: [["Range", "bytes=50-199"], ["X-Etag", "two"]])
        #expect(harness.origin.requestCounts["range bytes=100-199"] == 1)
        #expect(changed.reply["status"]?.intValue == 200 && changed.binary.count == 3000 && changed.reply.header("etag") == "\"two\"")
        await harness.server.cache.waitForPendingWrites()
        let entries = await harness.server.cache.store.entries(for: harness.origin.url(path))
        #expect(entries.count == 1 && entries.first?.status == 200 && entries.first?.headers.first("etag") == "\"two\"")
        await harness.stop()
    }

    @Test func browserRulesAgainstTheRealOrigin() async throws {
        let harness = try await CacheHarness.start()
        // 204 is cacheable by default, like 200.
        let noContent = "/headers?status=204&Cache-Control=max-age%3D60"
        _ = try await harness.fetch(noContent)
        let second = try await harness.fetch(noContent)
        #expect(second.reply.cacheStatus == "hit" && second.reply["status"]?.intValue == 204)
        // An Expires with a bad zone means already expired.
        let badZone = "/headers?Expires=" + "Thu, 01 Jan 2099 00:00:00 UTC".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        _ = try await harness.fetch(badZone)
        #expect(try await harness.fetch(badZone).reply.cacheStatus == "miss")
        let goodZone = "/headers?Expires=" + "Thu, 01 Jan 2099 00:00:00 GMT".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        _ = try await harness.fetch(goodZone)
        #expect(try await harness.fetch(goodZone).reply.cacheStatus == "hit")
        // Conflicting max-age: stale.
        let conflicting = "/headers?Cache-Control=max-age%3D1&Cache-Control=max-age%3D3600"
        _ = try await harness.fetch(conflicting)
        #expect(try await harness.fetch(conflicting).reply.cacheStatus == "miss")
        // A space before "=": invalid, stale.
        let spaced = "/headers?Cache-Control=max-age%20%3D3600"
        _ = try await harness.fetch(spaced)
        #expect(try await harness.fetch(spaced).reply.cacheStatus == "miss")
        // Qualified no-cache: a hit without the named field; cookies stored, never replayed (and
        // hidden from a client that does not ask for them with exposeSetCookie).
        let qualified = "/headers?Cache-Control=max-age%3D60%2C%20no-cache%3D%22x-user%22&X-User=alice&X-Other=1&Set-Cookie=s%3D1"
        let live = try await harness.fetch(qualified)
        #expect(live.reply.header("x-user") == "alice" && live.reply.header("set-cookie") == nil)
        let hit = try await harness.fetch(qualified)
        #expect(hit.reply.cacheStatus == "hit" && hit.reply.header("x-user") == nil && hit.reply.header("x-other") == "1")
        #expect(hit.reply.header("set-cookie") == nil)
        await harness.server.cache.waitForPendingWrites()
        let entries = await harness.server.cache.store.entries(for: harness.origin.url(qualified))
        #expect(entries.first?.headers.first("set-cookie") == "s=1")
        await harness.stop()
    }
}
