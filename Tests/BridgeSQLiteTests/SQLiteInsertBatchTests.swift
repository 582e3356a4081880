import BridgeCore
import Dispatch
import Foundation
import Testing
@testable import BridgeSQLite

/// Commits that arrive while the writer is busy are inserted in one transaction
/// (`SQLiteCacheStore.queueInsert`), and behave as if inserted one by one.
@Suite struct SQLiteInsertBatchTests {
    /// Holds the store's writer queue until the returned function is called, so that the commits
    /// made meanwhile queue up together.
    private func holdWriter(_ cache: SQLiteCacheStore) -> @Sendable () -> Void {
        let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        cache.writer!.enqueue { _ in
            held.signal()
            release.wait()
        }
        held.wait()
        return { release.signal() }
    }

    /// Commits `bodies` (URL, body) while the writer is held, each queuing its insert before the
    /// next commit starts (so the batch has their order), then lets the writer go; returns what
    /// each commit answered, in the order given.
    private func commitTogether(_ cache: SQLiteCacheStore, _ bodies: [(String, [UInt8])]) async -> [Bool] {
        var writers: [any CacheEntryWriter] = []
        for (url, body) in bodies {
            let writer = await cache.makeWriter(for: entry(url), expectedLength: body.count)!
            #expect(await writer.write(body))
            writers.append(writer)
        }
        let release = holdWriter(cache)
        return await withTaskGroup(of: (Int, Bool).self) { group in
            for (index, writer) in writers.enumerated() {
                group.addTask { (index, await writer.commit()) }
                // Its insert is queued (a file body's via the file queue, which is not held).
                try? await waitAWhile(for: .seconds(30)) { cache.inserts.withLock { $0.count } > index }
            }
            #expect(cache.inserts.withLock { $0.count } == writers.count)
            release()
            var results = Array(repeating: false, count: writers.count)
            for await (index, stored) in group { results[index] = stored }
            return results
        }
    }

    @Test func commitsQueuedTogetherShareOneTransactionAndAreAllStored() async throws {
        let directory = TemporaryDirectory()
        let cache = SQLiteCacheStore(configuration: configuration(directory))
        let before = cache.health.withLock { $0.insertTransactions }
        let bodies = (0..<20).map { ("https://a.test/\($0)", pattern(1000 + $0, seed: $0)) } + [("https://a.test/large", pattern(400_000, seed: 7))]
        let results = await commitTogether(cache, bodies)
        #expect(results.allSatisfy { $0 })
        #expect(cache.health.withLock { $0.insertTransactions } - before <= 2)
        for (url, body) in bodies { #expect(try await read(cache, url) == body) }
        let stats = await cache.stats()
        #expect(stats.diskEntries == 21)
        #expect(stats.diskBytes == bodies.reduce(0) { $0 + $1.1.count })
        // And after a restart, from the database alone.
        let reopened = SQLiteCacheStore(configuration: configuration(directory))
        for (url, body) in bodies { #expect(try await read(reopened, url) == body) }
    }

    @Test func aLaterEntryOfTheSameURLInTheBatchReplacesTheEarlierOne() async throws {
        let directory = TemporaryDirectory()
        let cache = SQLiteCacheStore(configuration: configuration(directory))
        let results = await commitTogether(cache, [("https://a.test/same", pattern(100, seed: 1)), ("https://a.test/other", pattern(50)),
                                                   ("https://a.test/same", pattern(200, seed: 2))])
        #expect(results == [true, true, true])
        #expect(await cache.entries(for: "https://a.test/same").count == 1)
        #expect(try await read(cache, "https://a.test/same") == pattern(200, seed: 2))
        #expect(await cache.stats().diskEntries == 2)
        let reopened = SQLiteCacheStore(configuration: configuration(directory))
        #expect(try await read(reopened, "https://a.test/same") == pattern(200, seed: 2))
    }

    @Test func anEntryThatFailsInABatchFailsAloneAndTheOthersAreStored() async throws {
        let directory = TemporaryDirectory()
        var limited = configuration(directory)
        limited.maxPageCount = 40  // Room for the small bodies, not for the large inline one.
        let cache = SQLiteCacheStore(configuration: limited)
        let bodies = [("https://a.test/1", pattern(500, seed: 1)), ("https://a.test/big", pattern(250_000, seed: 9)),
                      ("https://a.test/2", pattern(500, seed: 2))]
        let results = await commitTogether(cache, bodies)
        #expect(results == [true, false, true])
        #expect(try await read(cache, "https://a.test/1") == bodies[0].1)
        #expect(try await read(cache, "https://a.test/2") == bodies[2].1)
        #expect(await cache.entries(for: "https://a.test/big").isEmpty)
        #expect(await cache.stats().diskEntries == 2)
    }
}
