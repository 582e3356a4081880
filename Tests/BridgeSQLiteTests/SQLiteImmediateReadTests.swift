import BridgeCore
import Testing
@testable import BridgeSQLite

/// Reads answered without waiting: the metadata index and the memory tier, never SQLite.
struct SQLiteImmediateReadTests {
    @Test func entriesAndBodiesAreServedAtOnceOnlyFromMemory() async throws {
        let directory = TemporaryDirectory()
        let cache = SQLiteCacheStore(configuration: configuration(directory))
        let url = "https://a.test/x"
        // The stored URLs are listed at open, on the writer's queue: once a write is through,
        // a URL never stored surely has nothing.
        #expect(await store(cache, entry("https://a.test/other"), pattern(1)))
        #expect(cache.entriesWithoutWaiting(for: url) == [])
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
        // A URL that had entries is asked of SQLite again (its hash stays until the set is rebuilt).
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

    @Test func aReopenedStoreKnowsWhichURLsHaveNothingWithoutAQuery() async throws {
        let directory = TemporaryDirectory()
        do {
            let cache = SQLiteCacheStore(configuration: configuration(directory))
            for index in 0..<20 { #expect(await store(cache, entry("https://a.test/\(index)"), pattern(10))) }
        }
        let cache = SQLiteCacheStore(configuration: configuration(directory))
        #expect(await store(cache, entry("https://a.test/new"), pattern(10)))
        // Stored before the open: not in the index, so asked of SQLite; never stored: nothing.
        for index in 0..<20 { #expect(cache.entriesWithoutWaiting(for: "https://a.test/\(index)") == nil) }
        #expect(cache.entriesWithoutWaiting(for: "https://a.test/new")?.count == 1)
        #expect(cache.entriesWithoutWaiting(for: "https://a.test/never") == [])
        #expect(await cache.entries(for: "https://a.test/3").count == 1)
    }

    @Test func deletionsRebuildTheStoredURLsOnceTheyOutnumberTheEntries() async throws {
        let directory = TemporaryDirectory()
        let cache = SQLiteCacheStore(configuration: configuration(directory))
        let count = StoredKeys.slack + 10
        let urls = (0..<count).map { "https://a.test/\($0)" }
        // One transaction's worth of rows, as another process would leave them, then a store.
        try cache.writer?.runBlocking { connection in
            try connection.transaction {
                for (index, url) in urls.enumerated() {
                    try connection.run(
                        "INSERT INTO cache_entries (id, url, vary, status, headers, request_time, response_time, size, accessed) VALUES (?, ?, '[]', 200, '[]', 0, 0, 0, 0)",
                        [.integer(Int64(index + 1)), .text(url)])
                }
            }
        }
        // Rows written behind the store's back are not in its set: only fresh-only takes that risk.
        #expect(cache.entriesWithoutWaiting(for: urls[0]) == [])
        cache.writer?.enqueue { cache.loadKeys(on: $0) }
        #expect(await store(cache, entry("https://b.test/kept"), pattern(10)))
        #expect(cache.entriesWithoutWaiting(for: urls[0]) == nil)
        // Deleting them leaves their hashes past the slack: the set is built again, without them.
        _ = await cache.clear(.prefix("https://a.test/"))
        #expect(cache.entriesWithoutWaiting(for: urls[0]) == [])
        // The clear forgot the index: the kept URL is asked of SQLite, never said to have nothing.
        #expect(cache.entriesWithoutWaiting(for: "https://b.test/kept") == nil)
        #expect(await cache.entries(for: "https://b.test/kept").count == 1)
    }
}
