import BridgeCore
import Foundation
import Synchronization
import Testing
@testable import BridgeSQLite

/// A fresh temporary directory per test, removed at the end.
final class TemporaryDirectory {
    let path: String
    init() {
        path = NSTemporaryDirectory() + "cache-test-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

func entry(_ url: String, vary: HeaderList = HeaderList(), request: HeaderList = HeaderList(), time: Double = 1000) -> CachedResponse {
    var headers: HeaderList = ["cache-control": "max-age=60", "content-type": "text/plain"]
    for field in vary { headers.add(field.name, field.value) }
    return CachedResponse(url: url, status: 200, headers: headers, requestHeaders: request, requestTime: time, responseTime: time)
}

func pattern(_ count: Int, seed: Int = 0) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed) } }

/// Writes `body` in 10 KiB chunks and commits; true when stored.
@discardableResult
func store(_ store: SQLiteCacheStore, _ entry: CachedResponse, _ body: [UInt8]) async -> Bool {
    guard let writer = await store.makeWriter(for: entry, expectedLength: nil) else { return false }
    var offset = 0
    while offset < body.count {
        let end = min(body.count, offset + 10_240)
        guard await writer.write(Array(body[offset..<end])) else { return false }
        offset = end
    }
    return await writer.commit()
}

func read(_ store: SQLiteCacheStore, _ url: String) async throws -> [UInt8]? {
    guard let found = await store.entries(for: url).first, let body = await store.body(of: found) else { return nil }
    var bytes: [UInt8] = []
    while let chunk = try await body.next() { bytes += chunk }
    #expect(bytes.count == body.length)
    return bytes
}

/// Waits until `condition` holds or `timeout` passes, for work the store does in the background;
/// the caller then checks the outcome itself.
func waitAWhile(for timeout: Duration = .seconds(120), until condition: () async -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline, await !condition() { try await Task.sleep(for: .milliseconds(5)) }
}

/// Writes the database an older broker left in `directory`: the cache table without `column` (as
/// `BrokerDatabase.cacheSchema` writes it, say ", checksum INTEGER"), `schema` as its version in
/// `meta` when given, and one entry for https://a.test/old with `status` and the inline body 01 02 03.
func writeOldDatabase(in directory: TemporaryDirectory, without column: String, schema: Int? = nil, status: Int = 200) throws {
    let old = try SQLiteConnection(path: directory.path + "/" + BrokerDatabase.fileName)
    if let schema {
        try old.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO meta VALUES ('schema', '\(schema)')")
    }
    try old.execute(BrokerDatabase.cacheSchema.replacingOccurrences(of: column, with: ""))
    try old.execute("""
        INSERT INTO cache_entries (id, url, vary, status, headers, request_time, response_time, size, file, accessed)
        VALUES (1, 'https://a.test/old', '{"names":[],"values":[],"wildcard":false}', \(status), '[["cache-control","max-age=60"]]', 1, 1, 3, NULL, 1);
        INSERT INTO cache_bodies VALUES (1, x'010203');
        """)
}

func configuration(_ directory: TemporaryDirectory, disk: Int = 64 << 20, memory: Int = 8 << 20) -> SQLiteCacheStoreConfiguration {
    var configuration = SQLiteCacheStoreConfiguration(directory: directory.path)
    configuration.diskCapacity = disk
    configuration.memoryCapacity = memory
    return configuration
}

struct SQLiteCacheStoreTests {
    @Test(arguments: [0, 100, 256 * 1024, 256 * 1024 + 1, 3 * 1024 * 1024])
    func roundTripKeepsMetadataAndBody(size: Int) async throws {
        let directory = TemporaryDirectory()
        let cache = SQLiteCacheStore(configuration: configuration(directory))
        let original = entry("https://a.test/x", vary: ["vary": "Accept-Language"], request: ["accept-language": "fr"])
        #expect(await store(cache, original, pattern(size)))
        let found = try #require(await cache.entries(for: "https://a.test/x").first)
        #expect(found.headers == original.headers && found.varyKey == original.varyKey && found.status == 200)
        #expect(found.responseTime == original.responseTime)
        #expect(try await read(cache, "https://a.test/x") == pattern(size))
        let spilled = try FileManager.default.contentsOfDirectory(atPath: directory.path + "/bodies")
        #expect(spilled.count == (size > 256 * 1024 ? 1 : 0))
        #expect(try SQLiteConnection(path: directory.path + "/" + BrokerDatabase.fileName).journalMode() == "wal")
    }

    @Test func entriesSurviveARestart() async throws {
        let directory = TemporaryDirectory()
        do {
            let cache = SQLiteCacheStore(configuration: configuration(directory))
            #expect(await store(cache, entry("https://a.test/small"), pattern(10)))
            #expect(await store(cache, entry("https://a.test/large"), pattern(300_000)))
        }
        let reopened = SQLiteCacheStore(configuration: configuration(directory))
        #expect(try await read(reopened, "https://a.test/small") == pattern(10))
        #expect(try await read(reopened, "https://a.test/large") == pattern(300_000))
        let stats = await reopened.stats()
        #expect(stats.diskEntries == 2 && stats.diskBytes == 300_010 && stats.disabledReason == nil)
    }

    @Test func theReasonPhraseSurvivesARestartAndAnUpdate() async throws {
        let directory = TemporaryDirectory()
        let phrases: [String: String?] = ["https://a.test/custom": "Fin\u{E9} By Me", "https://a.test/h2": "", "https://a.test/none": nil]
        do {
            let cache = SQLiteCacheStore(configuration: configuration(directory))
            for (url, phrase) in phrases {
                var stored = entry(url)
                stored.statusText = phrase
                #expect(await store(cache, stored, pattern(url.hasSuffix("custom") ? 300_000 : 10)))
            }
            // A 304's freshening (`Validation.freshen`) rewrites headers and times, not the phrase.
            let stored = try #require(await cache.entries(for: "https://a.test/custom").first)
            let freshened = Validation.freshen(stored, with: ["cache-control": "max-age=600"], requestTime: 2000, responseTime: 2000)
            await cache.update(freshened)
            try await waitAWhile { await cache.entries(for: "https://a.test/custom").first?.responseTime == 2000 }
        }
        let reopened = SQLiteCacheStore(configuration: configuration(directory))
        for (url, phrase) in phrases {
            let found = try #require(await reopened.entries(for: url).first)
            #expect(found.statusText == phrase, "\(url)")
        }
        let custom = try #require(await reopened.entries(for: "https://a.test/custom").first)
        #expect(custom.headers.first("cache-control") == "max-age=600" && custom.servedStatusText == "Fin\u{E9} By Me")
        #expect(try await reopened.entries(for: "https://a.test/none").first?.servedStatusText == "OK")
    }

    @Test func rowsFromBeforeStoredPhrasesServeTheStandardOne() async throws {
        let directory = TemporaryDirectory()
        // A schema 4 database: no status_text column.
        try writeOldDatabase(in: directory, without: ", status_text TEXT", schema: 4, status: 404)
        let cache = SQLiteCacheStore(configuration: configuration(directory))
        #expect(cache.disabledReason == nil)
        let found = try #require(await cache.entries(for: "https://a.test/old").first)
        #expect(found.statusText == nil && found.servedStatusText == "Not Found")
        #expect(try await read(cache, "https://a.test/old") == [1, 2, 3])
        var new = entry("https://a.test/new")
        new.statusText = "Custom Reason"
        #expect(await store(cache, new, pattern(10)))
        #expect(try await SQLiteCacheStore(configuration: configuration(directory)).entries(for: "https://a.test/new").first?.statusText == "Custom Reason")
        let version = try SQLiteConnection(path: directory.path + "/" + BrokerDatabase.fileName).prepare("SELECT value FROM meta WHERE key = 'schema'")
        #expect(try version.step() && version.string(at: 0) == String(BrokerDatabase.schemaVersion), "upgraded through every version")
    }

    @Test func leastRecentlyUsedEntriesAreEvictedByBytes() async throws {
        let directory = TemporaryDirectory()
        let cache = SQLiteCacheStore(configuration: configuration(directory, disk: 10_000))
        for index in 0..<5 { #expect(await store(cache, entry("https://a.test/\(index)"), pattern(1000))) }
        // Now the most recently used: its use waits for its batch (touchDelay), and the store that
        // evicts right after it writes the use first.
        _ = try await read(cache, "https://a.test/0")
        for index in 5..<12 { #expect(await store(cache, entry("https://a.test/\(index)"), pattern(1000))) }
        let stats = await cache.stats()
        #expect(stats.diskBytes <= 10_000 && stats.diskEntries == 10 && stats.evictions == 2)
        #expect(await cache.entries(for: "https://a.test/0").count == 1)
        #expect(await cache.entries(for: "https://a.test/1").isEmpty)
        #expect(await cache.entries(for: "https://a.test/2").isEmpty)
        #expect(await cache.entries(for: "https://a.test/11").count == 1)
    }

    @Test func anEntryOverAnEighthOfTheCapacityIsNotStored() async throws {
        let directory = TemporaryDirectory()
        let cache = SQLiteCacheStore(configuration: configuration(directory, disk: 80_000))
        #expect(await cache.makeWriter(for: entry("https://a.test/big"), expectedLength: 10_001) == nil)
        #expect(await cache.makeWriter(for: entry("https://a.test/ok"), expectedLength: 10_000) != nil)
        #expect(await store(cache, entry("https://a.test/streamed"), pattern(10_001)) == false)
        #expect(await store(cache, entry("https://a.test/fits"), pattern(10_000)))
        #expect(await cache.entries(for: "https://a.test/streamed").isEmpty)
        #expect(await cache.stats().diskEntries == 1)
    }

    @Test func aNewResponseReplacesTheVariantWithTheSameVaryValues() async throws {
        let directory = TemporaryDirectory()
        let cache = SQLiteCacheStore(configuration: configuration(directory))
        let url = "https://a.test/v"
        for (language, seed) in [("en", 1), ("fr", 2), ("en", 3)] {
            #expect(await store(cache, entry(url, vary: ["vary": "Accept-Language"], request: ["accept-language": language]), pattern(300_000, seed: seed)))
        }
        let variants = await cache.entries(for: url)
        #expect(variants.count == 2)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/bodies").count == 2)
    }

    @Test func theInMemoryIndexFollowsEveryKindOfWrite() async throws {
        let directory = TemporaryDirectory()
        let cache = SQLiteCacheStore(configuration: configuration(directory, disk: 20_000))
        let url = "https://a.test/indexed"
        #expect(await cache.entries(for: url).isEmpty)  // An empty answer is remembered too.
        await store(cache, entry(url, vary: ["vary": "Accept-Language"], request: ["accept-language": "en"]), pattern(100))
        #expect(await cache.entries(for: url).count == 1)
        await store(cache, entry(url, vary: ["vary": "Accept-Language"], request: ["accept-language": "fr"]), pattern(100))
        let variants = await cache.entries(for: url)
        #expect(variants.count == 2)

        var freshened = variants[0]
        freshened.headers.set("etag", "\"v2\"")
        await cache.update(freshened)
        try await waitAWhile(for: .seconds(2)) { await cache.entries(for: url).first { $0.id == freshened.id }?.headers.first("etag") != nil }
        #expect(await cache.entries(for: url).first { $0.id == freshened.id }?.headers.first("etag") == "\"v2\"")

        await cache.remove(freshened)
        #expect(await cache.entries(for: url).map(\.id) == [variants[1].id])

        // Eviction removes another URL's entry that was looked up (and so remembered) before.
        #expect(await cache.entries(for: url).count == 1)
        for index in 0..<30 { await store(cache, entry("https://a.test/filler\(index)"), pattern(1000)) }
        #expect(await cache.entries(for: url).isEmpty)
        #expect(try await read(cache, url) == nil)

        await store(cache, entry(url), pattern(10))
        #expect(await cache.entries(for: url).count == 1)
        #expect(await cache.clear(.prefix("https://a.test/ind")) == 1)
        #expect(await cache.entries(for: url).isEmpty)
    }

    @Test func clearByPrefixSinceAndEverything() async throws {
        let directory = TemporaryDirectory()
        let cache = SQLiteCacheStore(configuration: configuration(directory))
        await store(cache, entry("https://a.test/1", time: 100), pattern(10))
        await store(cache, entry("https://a.test/2", time: 200), pattern(300_000))
        await store(cache, entry("https://b.test/1", time: 300), pattern(10))
        await store(cache, entry("https://c.test/1", time: 400), pattern(10))
        #expect(await cache.clear(.prefix("https://a.test/")) == 2)
        #expect(await cache.clear(.modifiedSince(350)) == 1)
        #expect(await cache.entries(for: "https://b.test/1").count == 1)
        #expect(await cache.clear(.all) == 1)
        let stats = await cache.stats()
        #expect(stats.diskEntries == 0 && stats.diskBytes == 0 && stats.memoryEntries == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/bodies").isEmpty)
    }

    /// A prefix is a prefix of the URL's bytes in the SQLite store (`substr`) and in
    /// `CacheClearScope.contains` (the memory store) alike, also where it ends before a
    /// combining mark, inside what Swift's String counts as one Character.
    @Test func aPrefixEndingInsideACharacterClearsInBothStores() async throws {
        let url = "https://a.test/e\u{301}"
        #expect(CacheClearScope.prefix("https://a.test/e").contains(entry(url)))
        let directory = TemporaryDirectory()
        let cache = SQLiteCacheStore(configuration: configuration(directory))
        await store(cache, entry(url), pattern(10))
        #expect(await cache.clear(.prefix("https://a.test/e")) == 1)
    }

    @Test func aCorruptDatabaseDisablesTheStoreWithoutFailing() async throws {
        let directory = TemporaryDirectory()
        let garbage = [UInt8](repeating: 0x5A, count: 8192)
        FileManager.default.createFile(atPath: directory.path + "/" + BrokerDatabase.fileName, contents: Data(garbage))
        let logged = Mutex<[String]>([])
        let cache = SQLiteCacheStore(configuration: configuration(directory)) { message in logged.withLock { $0.append(message) } }
        let stats = await cache.stats()
        #expect(stats.disabledReason != nil)
        #expect(logged.withLock { $0.count } == 1)
        #expect(await cache.makeWriter(for: entry("https://a.test/"), expectedLength: 1) == nil)
        #expect(await cache.entries(for: "https://a.test/").isEmpty)
    }

    @Test func aFullDiskStopsWritesButKeepsServing() async throws {
        let directory = TemporaryDirectory()
        var limited = configuration(directory)
        limited.maxPageCount = 40
        let cache = SQLiteCacheStore(configuration: limited)
        #expect(await store(cache, entry("https://a.test/kept"), pattern(1000)))
        var stored = 0
        for index in 0..<20 where await store(cache, entry("https://a.test/\(index)"), pattern(60_000, seed: index)) { stored += 1 }
        #expect(stored < 20)
        let stats = await cache.stats()
        #expect(stats.writesDisabledReason?.contains("full") == true && stats.disabledReason == nil)
        #expect(try await read(cache, "https://a.test/kept") == pattern(1000))
    }

    @Test func lookupsReadOnTheCallersThreadAndSeeAnotherWritersCommits() async throws {
        let directory = TemporaryDirectory()
        let cache = SQLiteCacheStore(configuration: configuration(directory))
        // Another writer of the same database file (as another process would be).
        let other = SQLiteCacheStore(configuration: configuration(directory))
        #expect(await store(other, entry("https://a.test/other"), pattern(300_000, seed: 3)))
        // Never looked up by `cache` before, so not in its index: read through a pooled connection.
        #expect(try await read(cache, "https://a.test/other") == pattern(300_000, seed: 3))
        #expect(cache.reads.openedCount >= 1)
        // Many lookups at once: more than the pool holds; every one answered right, the extra
        // ones through the reader's queue, and never more connections than the limit.
        for index in 0..<40 { #expect(await store(other, entry("https://a.test/\(index)"), pattern(10, seed: index))) }
        let found = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<40 {
                group.addTask { (try? await read(cache, "https://a.test/\(index)")) == pattern(10, seed: index) }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(found == 40)
        #expect(cache.reads.openedCount <= SQLiteCacheStore.readConnections)
    }

    @Test func bodyFileNamesAreUniqueAndDifferBetweenStores() {
        let first = BodyFileNames(), second = BodyFileNames()
        let names = (0..<1000).map { _ in first.next() } + (0..<1000).map { _ in second.next() }
        #expect(Set(names).count == 2000)
    }

    @Test func bodyFilesNoEntryReferencesAreSweptAtStart() async throws {
        let directory = TemporaryDirectory()
        _ = SQLiteCacheStore(configuration: configuration(directory))
        let orphan = directory.path + "/bodies/orphan"
        FileManager.default.createFile(atPath: orphan, contents: Data(pattern(10)))
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -60)], ofItemAtPath: orphan)
        let reopened = SQLiteCacheStore(configuration: configuration(directory))
        _ = await reopened.entries(for: "x")
        try await waitAWhile { !FileManager.default.fileExists(atPath: orphan) }  // The sweep runs in the background after open.
        #expect(!FileManager.default.fileExists(atPath: orphan))
    }
}
