import BridgeCore
import Testing
@testable import BridgeSQLite

/// Reads answered without waiting: the metadata index and the memory tier, never SQLite.
struct SQLiteImmediateReadTests {
    @Test func entriesAndBodiesAreServedAtOnceOnlyFromMemory() async throws {
        let directory = TemporaryDirectory()
        let cache = SQLiteCacheStore(configuration: configuration(directory))
        let url = "https://a.test/x"
        #expect(await store(cache, entry(url), pattern(300)))
        // Not listed yet: the index fills on the first awaited lookup.
        #expect(cache.entriesWithoutWaiting(for: url) == nil)
        let listed = try #require(await cache.entries(for: url).first)
        #expect(cache.entriesWithoutWaiting(for: url) == [listed])
        _ = try await read(cache, url)
        #expect(cache.bodyWithoutWaiting(of: listed) == pattern(300))

        // A write to the URL invalidates the index; a clear empties the memory tier too.
        #expect(await store(cache, entry(url, time: 2000), pattern(10)))
        #expect(cache.entriesWithoutWaiting(for: url) == nil)
        _ = await cache.clear(.all)
        _ = await cache.entries(for: url)
        #expect(cache.entriesWithoutWaiting(for: url) == [])
        #expect(cache.bodyWithoutWaiting(of: listed) == nil)
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
}
