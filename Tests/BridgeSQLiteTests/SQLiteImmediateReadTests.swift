import BridgeCore
import Testing
@testable import BridgeSQLite

/// Reads answered without waiting: the metadata index and the memory tier, never SQLite.
struct SQLiteImmediateReadTests {
    @Test func entriesAndBodiesAreServedAtOnceOnlyFromMemory() async throws {
        let directory = TemporaryDirectory()
        let cache = SQLiteCacheStore(configuration: configuration(directory))
        let url = "https://a.test/x"
        // Nothing is listed for a URL before its first lookup.
        #expect(cache.entriesWithoutWaiting(for: url) == nil)
        #expect(await store(cache, entry(url), pattern(300)))
        // A store lists the URL and keeps the body in memory: the first request after it (a
        // preloaded resource) is served at once, with no awaited lookup before it.
        let stored = try #require(cache.entriesWithoutWaiting(for: url)?.first)
        #expect(cache.bodyWithoutWaiting(of: stored) == pattern(300))
        #expect(await cache.entries(for: url) == [stored])

        // A new response for the URL replaces the listing and its body; a clear empties both.
        #expect(await store(cache, entry(url, time: 2000), pattern(10)))
        let replacing = try #require(cache.entriesWithoutWaiting(for: url))
        #expect(replacing.count == 1 && replacing[0] != stored)
        #expect(cache.bodyWithoutWaiting(of: replacing[0]) == pattern(10))
        _ = await cache.clear(.all)
        #expect(cache.entriesWithoutWaiting(for: url) == nil)
        _ = await cache.entries(for: url)
        #expect(cache.entriesWithoutWaiting(for: url) == [])
        #expect(cache.bodyWithoutWaiting(of: replacing[0]) == nil)
    }

    @Test func aStoreThatEvictsForgetsOtherURLsListings() async throws {
        let directory = TemporaryDirectory()
        // Room on disk for ten 1000-byte bodies: the eleventh store evicts the first.
        let cache = SQLiteCacheStore(configuration: configuration(directory, disk: 10_000))
        for index in 0..<10 { #expect(await store(cache, entry("https://a.test/\(index)"), pattern(1000))) }
        #expect(cache.entriesWithoutWaiting(for: "https://a.test/0")?.count == 1)
        #expect(await store(cache, entry("https://a.test/10"), pattern(1000)))
        #expect(await cache.stats().evictions == 1)
        #expect(cache.entriesWithoutWaiting(for: "https://a.test/0") == nil)
        #expect(await cache.entries(for: "https://a.test/0") == [])
        #expect(cache.entriesWithoutWaiting(for: "https://a.test/10")?.count == 1)
    }

    @Test func aBodyOverTheMemoryTierLimitIsNeverServedAtOnce() async throws {
        let directory = TemporaryDirectory()
        let cache = SQLiteCacheStore(configuration: configuration(directory, memory: 8 * 1024))
        let url = "https://a.test/big"
        #expect(await store(cache, entry(url), pattern(2000)))
        let listed = try #require(await cache.entries(for: url).first)
        #expect(try await read(cache, url) == pattern(2000))
        #expect(cache.bodyWithoutWaiting(of: listed) == nil)
    }

    @Test func aReplacedEntrysIdNeverNamesItsReplacement() async throws {
        let directory = TemporaryDirectory()
        let cache = SQLiteCacheStore(configuration: configuration(directory))
        let url = "https://a.test/newest"
        // The newest row is the one SQLite would hand out again once it is deleted.
        #expect(await store(cache, entry(url), pattern(300)))
        let old = try #require(await cache.entries(for: url).first)
        #expect(await store(cache, entry(url, time: 2000), pattern(10, seed: 7)))
        let new = try #require(await cache.entries(for: url).first)
        #expect(new.id != old.id)
        // A task that listed the old entry before the replacement committed gets nothing for it,
        // never the new body under the old headers; nor can freshening the old entry touch the new.
        #expect(cache.bodyWithoutWaiting(of: old) == nil)
        #expect(await cache.body(of: old) == nil)
        var freshened = old
        freshened.headers.set("etag", "\"old\"")
        await cache.update(freshened)
        // Writes run one at a time in order: once this store is done, so is the freshening.
        #expect(await store(cache, entry("https://a.test/after"), pattern(5)))
        #expect(await cache.entries(for: url) == [new])
        #expect(try await read(cache, url) == pattern(10, seed: 7))
    }

    @Test func twoStoresOnOneDatabaseNeverTakeTheSameId() async throws {
        // Two brokers may share a cache directory (the default one, say): each one's inserts must
        // land beside the other's, never collide with them.
        let directory = TemporaryDirectory()
        let first = SQLiteCacheStore(configuration: configuration(directory))
        let second = SQLiteCacheStore(configuration: configuration(directory))
        #expect(await store(first, entry("https://a.test/1"), pattern(10)))
        #expect(await store(second, entry("https://a.test/2"), pattern(20)))
        #expect(await store(first, entry("https://a.test/3"), pattern(30)))
        let ids = [
            await second.entries(for: "https://a.test/1").first?.id, await first.entries(for: "https://a.test/2").first?.id,
            await second.entries(for: "https://a.test/3").first?.id,
        ]
        #expect(ids.allSatisfy { $0 != nil } && Set(ids).count == 3)
        #expect(try await read(first, "https://a.test/2") == pattern(20))
    }
}
