import BridgeCore
import Foundation
import Synchronization

/// How a `SQLiteCacheStore` sizes itself.
public struct SQLiteCacheStoreConfiguration: Sendable {
    /// The cache directory: the database file and the `bodies/` directory go here.
    public var directory: String
    /// Bytes of bodies kept in the memory tier (like `URLCache.memoryCapacity`).
    public var memoryCapacity = 64 * 1024 * 1024
    /// Bytes of bodies kept on disk (like `URLCache.diskCapacity`); LRU entries are evicted beyond.
    public var diskCapacity = 1024 * 1024 * 1024
    /// An entry larger than 1/`entryFraction` of a tier's capacity is not kept in that tier.
    public var entryFraction = 8
    /// Bodies up to this size are stored inline as blobs; larger ones as files (see BENCHMARKS.md).
    public var inlineThreshold = 256 * 1024
    /// The size of the chunks a file body is read in.
    public var readChunkBytes = 256 * 1024
    /// The most body-file bytes waiting to be written (store-wide) before a response being
    /// stored waits for the disk: what a disk slower than the network may hold in memory.
    public var pendingFileBytes = 8 * 1024 * 1024
    /// Limits the database to this many pages: a way for tests to make the disk "full".
    public var maxPageCount: Int?

    /// Creates a configuration for `directory` with the default capacities.
    public init(directory: String) { self.directory = directory }
}

/// The broker's `CacheStore`: SQLite in WAL mode under the cache directory, with a memory tier.
///
/// - Small bodies (up to `inlineThreshold`) are blobs; larger ones are files in `bodies/`,
///   written while they stream and referenced by a row only once complete, so a process killed
///   mid-write leaves no entry (and an unreferenced file, swept at the next start).
/// - One writer connection and one reader connection, each owned by its own serial queue: in WAL
///   mode reads proceed while a slow write runs. Lookups run on the caller's thread through a few
///   pooled read connections (`ReadConnections`) and use the reader's queue only when all are
///   busy. LRU touches are batched and never awaited.
/// - Entries over 1/`entryFraction` of the disk capacity are not stored; past the capacity the
///   least recently used entries are evicted, by bytes.
/// - A database that cannot be opened (corrupt, unreadable) disables the store: it acts empty,
///   logs once and says why in `stats()`. A full disk stops writes only, and writes resume after
///   `clear` or a minute later.
public final class SQLiteCacheStore: CacheStore {
    struct Health {
        var disabled: String?
        var writesDisabled: String?
        var writesDisabledAt: Date = .distantPast
        var entries = 0
        var bytes = 0
        var evictions = 0
        /// Entries dropped because their body file was missing or did not match its row.
        var damaged = 0
        /// Insert transactions committed (several entries may share one: `queueInsert`).
        var insertTransactions = 0
        var nextAccess: Int64 = 0
        /// No entry stored from now on gets a lower id (see `takeEntryID`).
        var nextID: Int64 = 1
        var pendingTouches: [Int64: Int64] = [:]
    }

    /// The configuration in force.
    public let configuration: SQLiteCacheStoreConfiguration
    let writer: SerialConnection?
    let reader: SerialConnection?
    let memory: Mutex<LRUCache<Int64, [UInt8]>>
    let index = Mutex(EntryIndex())
    let keys = Mutex(StoredKeys())
    let health = Mutex(Health())
    let log: @Sendable (String) -> Void
    let bodiesPath: String
    let openedAt = Date()
    /// Where body files are written, off the delivery path.
    let files: BodyFileQueue
    /// Connections for reads on the calling thread (lookups and body locations), no hop.
    let reads: ReadConnections
    /// Complete entries waiting for the writer's queue, inserted together (`queueInsert`).
    let inserts = Mutex<[PendingInsert]>([])

    /// The most connections reading on callers' threads at once (more readers use the reader's
    /// queue): one per event loop of a small machine, and some to spare.
    static let readConnections = 8

    /// How long writes stay off after the disk was found full.
    static let fullDiskRetry: TimeInterval = 60

    /// Opens (creating if needed) the store in `configuration.directory`; never throws: a store
    /// that cannot open is disabled and says why through `log` and `stats()`.
    public init(configuration: SQLiteCacheStoreConfiguration, log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.configuration = configuration
        self.log = log
        self.bodiesPath = configuration.directory + "/" + BrokerDatabase.bodiesDirectory
        files = BodyFileQueue(limit: configuration.pendingFileBytes)
        reads = ReadConnections(path: configuration.directory + "/" + BrokerDatabase.fileName, limit: Self.readConnections)
        memory = Mutex(LRUCache(capacity: configuration.memoryCapacity))
        var opened: (SerialConnection, SerialConnection, Int, Int, Int64)?
        do {
            let writeConnection = try BrokerDatabase.open(in: configuration.directory)
            if let pages = configuration.maxPageCount { try writeConnection.execute("PRAGMA max_page_count = \(pages)") }
            try FileManager.default.createDirectory(atPath: bodiesPath, withIntermediateDirectories: true)
            let writer = SerialConnection(writeConnection, label: "bridge.cache.writer")
            let reader = SerialConnection(
                try SQLiteConnection(path: configuration.directory + "/" + BrokerDatabase.fileName),
                label: "bridge.cache.reader")
            let (entries, bytes, access) = try writer.runBlocking { connection in
                let totals = try connection.query("SELECT entries, bytes FROM cache_totals") { (Int($0.int(at: 0)), Int($0.int(at: 1))) }
                let access = try connection.query("SELECT coalesce(max(accessed), 0) FROM cache_entries") { $0.int(at: 0) }
                return (totals.first?.0 ?? 0, totals.first?.1 ?? 0, access.first ?? 0)
            }
            opened = (writer, reader, entries, bytes, access)
        } catch {
            log("the HTTP cache is disabled: cannot open \(configuration.directory)/\(BrokerDatabase.fileName): \(error)")
            health.locked { $0.disabled = "cannot open the cache database: \(error)" }
        }
        writer = opened?.0
        reader = opened?.1
        if let opened {
            health.locked { health in
                (health.entries, health.bytes, health.nextAccess) = (opened.2, opened.3, opened.4 + 1)
            }
            sweepOrphanFiles()
            opened.0.enqueue { connection in self.loadKeys(on: connection) }
        }
    }

    /// The largest body stored on disk.
    public var maximumEntryBytes: Int { configuration.diskCapacity / configuration.entryFraction }
    var maximumMemoryEntryBytes: Int { configuration.memoryCapacity / configuration.entryFraction }

    /// Whether the store is disabled, and why.
    public var disabledReason: String? { health.locked { $0.disabled } }

    public func entries(for key: String) async -> [CachedResponse] {
        guard let reader, disabledReason == nil else { return [] }
        let (indexed, generation) = indexedEntries(for: key)
        if let indexed { return indexed }
        do {
            let entries = try await read(reader) { connection in try Self.entries(of: key, in: connection) }
            rememberEntries(entries, for: key, generation: generation)
            return entries
        } catch {
            failed(error, while: "reading \(key)")
            return []
        }
    }

    /// The stored entries of the URL `key`, read through `connection`.
    static func entries(of key: String, in connection: SerialConnection) throws -> [CachedResponse] {
        try connection.query(
            "SELECT id, url, vary, status, headers, request_time, response_time, status_text FROM cache_entries WHERE url = ?",
            [.text(key)], row: Self.decodeEntry
        ).compactMap { $0 }
    }

    /// Runs a read on the calling thread with a pooled connection, or on the reader's queue when
    /// none is free: an indexed query takes microseconds, the hop two thread wakes.
    func read<T: Sendable>(_ reader: SerialConnection, _ body: @escaping @Sendable (SerialConnection) throws -> T) async throws -> T {
        if let result = try reads.withConnection(body) { return result }
        return try await reader.run(body)
    }

    static func decodeEntry(_ row: SQLiteStatement) -> CachedResponse? {
        guard let url = row.string(at: 1), let vary = row.string(at: 2).flatMap(CacheEntryCoding.decodeVaryKey),
              let headers = row.string(at: 4).flatMap(CacheEntryCoding.decodeHeaders)
        else { return nil }
        return CachedResponse(
            id: String(row.int(at: 0)), url: url, status: Int(row.int(at: 3)), headers: headers, varyKey: vary,
            requestTime: row.double(at: 5), responseTime: row.double(at: 6), statusText: row.string(at: 7))
    }

    public func body(of entry: CachedResponse) async -> CacheBody? {
        guard let reader, let id = Int64(entry.id), disabledReason == nil else { return nil }
        if let bytes = memory.locked({ $0.get(id) }) {
            touch(id)
            return .bytes(bytes, chunkSize: configuration.readChunkBytes)
        }
        let located: (size: Int, file: String?, checksum: Int64?, blob: [UInt8]?)?
        do {
            located = try await read(reader) { connection in
                guard let row = try connection.query("SELECT size, file, checksum FROM cache_entries WHERE id = ?", [.integer(id)], row: {
                    (Int($0.int(at: 0)), $0.string(at: 1), $0.isNull(at: 2) ? nil : $0.int(at: 2))
                }).first else { return nil }
                if row.1 != nil { return (row.0, row.1, row.2, nil) }
                let blob = try connection.query("SELECT body FROM cache_bodies WHERE id = ?", [.integer(id)]) { $0.blob(at: 0) }
                return (row.0, nil, nil, blob.first ?? [])
            }
        } catch {
            failed(error, while: "reading a body of \(entry.url)")
            return nil
        }
        guard let located else {
            // Gone since it was listed (evicted, cleared): the listing must not be used again.
            invalidateIndex(entry.url)
            return nil
        }
        touch(id)
        if let blob = located.blob {
            remember(id, blob)
            return .bytes(blob, chunkSize: configuration.readChunkBytes)
        }
        // Body files are not fsynced: one the machine lost part of before the kernel wrote it has
        // the wrong length or checksum, and is a miss that deletes the entry.
        let path = bodiesPath + "/" + (located.file ?? "")
        if located.size <= maximumMemoryEntryBytes {
            guard let bytes = FileManager.default.contents(atPath: path).map([UInt8].init) else {
                await dropDamaged(entry, "is missing")
                return nil
            }
            guard bytes.count == located.size else {
                await dropDamaged(entry, "has \(bytes.count) bytes, not \(located.size)")
                return nil
            }
            if let expected = located.checksum {
                var checksum = BodyChecksum()
                checksum.update(bytes)
                guard checksum.stored == expected else {
                    await dropDamaged(entry, "does not match its checksum")
                    return nil
                }
            }
            remember(id, bytes)
            return .bytes(bytes, chunkSize: configuration.readChunkBytes)
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            await dropDamaged(entry, "is missing")
            return nil
        }
        let length = try? handle.seekToEnd()
        guard length == UInt64(located.size), (try? handle.seek(toOffset: 0)) != nil else {
            try? handle.close()
            await dropDamaged(entry, "has \(length.map(String.init) ?? "unknown") bytes, not \(located.size)")
            return nil
        }
        // Too large to hold: streamed, and checked when its last byte has been read (a mismatch
        // then fails the response, which has gone out in part, and deletes the entry).
        let file = FileBody(handle: handle, chunkSize: configuration.readChunkBytes, checksum: located.checksum) { [weak self] in
            guard let self else { return }
            Task { await self.dropDamaged(entry, "does not match its checksum") }
        }
        return CacheBody(length: located.size, skip: { try file.skip($0) }) { try file.next() }
    }

    /// Deletes an entry whose body file is missing or does not match its row, and counts it.
    func dropDamaged(_ entry: CachedResponse, _ what: String) async {
        health.locked { $0.damaged += 1 }
        log("HTTP cache: the body file of \(entry.url) \(what); dropping the entry")
        await remove(entry)
    }

    func remember(_ id: Int64, _ bytes: [UInt8]) {
        guard bytes.count <= maximumMemoryEntryBytes else { return }
        memory.locked { _ = $0.put(id, bytes, cost: bytes.count) }
    }

    /// How long a hit's use waits for the others of its burst before the writer records them: a
    /// preloaded page's 30 hits, answered at once, were five or six small transactions (each a WAL
    /// write under file locks, on the second core while the page loads); now they are one, after it.
    static let touchDelay: DispatchTimeInterval = .milliseconds(100)

    /// Records that `id` was used; the update reaches the database in a batch, never awaited. Until
    /// then the order of use is in memory, and an insert writes it first (`writeTouches`).
    func touch(_ id: Int64) {
        let first = health.locked { health -> Bool in
            let wasEmpty = health.pendingTouches.isEmpty
            health.pendingTouches[id] = health.nextAccess
            health.nextAccess += 1
            return wasEmpty
        }
        guard first, let writer else { return }
        writer.enqueue(after: Self.touchDelay) { connection in
            try? connection.transaction { try self.writeTouches(on: connection) }
        }
    }

    /// Writes the uses not written yet, inside the caller's transaction on the writer's queue.
    func writeTouches(on connection: SerialConnection) throws {
        let touches = health.locked { health in
            defer { health.pendingTouches = [:] }
            return health.pendingTouches
        }
        for (id, access) in touches {
            try connection.run("UPDATE cache_entries SET accessed = ? WHERE id = ?", [.integer(access), .integer(id)])
        }
    }

    public func stats() async -> CacheStoreStats {
        statsWithoutWaiting() ?? CacheStoreStats()
    }

    /// The statistics, from the counters the store keeps in memory.
    public func statsWithoutWaiting() -> CacheStoreStats? {
        var stats = CacheStoreStats()
        (stats.memoryEntries, stats.memoryBytes) = memory.locked { ($0.count, $0.totalCost) }
        stats.memoryCapacity = configuration.memoryCapacity
        stats.diskCapacity = configuration.diskCapacity
        health.locked { health in
            (stats.diskEntries, stats.diskBytes, stats.evictions) = (health.entries, health.bytes, health.evictions)
            stats.damaged = health.damaged
            stats.disabledReason = health.disabled
            stats.writesDisabledReason = health.writesDisabled
        }
        return stats
    }

    /// Reacts to a storage error: a corrupt database disables the store, a full one stops writes.
    func failed(_ error: any Error, while doing: String) {
        let sqlite = error as? SQLiteError
        let full = sqlite?.isFull == true || (error as NSError).code == Int(ENOSPC)
        let message = "HTTP cache: \(doing) failed: \(error)"
        let first = health.locked { health -> Bool in
            if sqlite?.isCorrupt == true {
                defer { health.disabled = "the cache database is damaged: \(error)" }
                return health.disabled == nil
            }
            if full {
                defer { (health.writesDisabled, health.writesDisabledAt) = ("the disk is full: \(error)", Date()) }
                return health.writesDisabled == nil
            }
            return true
        }
        if first { log(message + (full ? "; serving without storing until space frees" : "")) }
    }

    /// Deletes body files that no entry references (left by a process killed mid-write).
    func sweepOrphanFiles() {
        writer?.enqueue { connection in
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: self.bodiesPath), !names.isEmpty,
                  let referenced = try? connection.query("SELECT file FROM cache_entries WHERE file IS NOT NULL", row: { $0.string(at: 0) })
            else { return }
            let keep = Set(referenced.compactMap { $0 })
            for name in names where !keep.contains(name) {
                let path = self.bodiesPath + "/" + name
                // Files newer than the store are bodies being written now, not orphans.
                let modified = (try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate]) as? Date
                if let modified, modified < self.openedAt { try? FileManager.default.removeItem(atPath: path) }
            }
        }
    }
}

/// A body file read in chunks, checked against its row's checksum once its last byte is read.
final class FileBody: @unchecked Sendable {
    private struct State {
        var done = false
        /// Nil when there is nothing to check: no checksum stored, or bytes were skipped.
        var checksum: BodyChecksum?
    }

    private let handle: FileHandle
    private let chunkSize: Int
    private let expected: Int64?
    private let damaged: @Sendable () -> Void
    private let lock: Mutex<State>

    init(handle: FileHandle, chunkSize: Int, checksum expected: Int64?, damaged: @escaping @Sendable () -> Void) {
        self.handle = handle
        self.chunkSize = chunkSize
        self.expected = expected
        self.damaged = damaged
        lock = Mutex(State(checksum: expected == nil ? nil : BodyChecksum()))
    }

    func next() throws -> [UInt8]? {
        try lock.locked { state in
            guard !state.done else { return nil }
            guard let data = try handle.read(upToCount: chunkSize), !data.isEmpty else {
                state.done = true
                try? handle.close()
                if let checksum = state.checksum, checksum.stored != expected {
                    damaged()
                    throw DamagedBodyError()
                }
                return nil
            }
            let bytes = [UInt8](data)
            state.checksum?.update(bytes)
            return bytes
        }
    }

    /// Seeks `count` bytes forward (a byte range served from the middle of a large body); the
    /// bytes skipped are not read, so such a read checks the file's length only.
    func skip(_ count: Int) throws {
        try lock.locked { state in
            guard !state.done else { return }
            state.checksum = nil
            try handle.seek(toOffset: try handle.offset() + UInt64(count))
        }
    }

    deinit { try? handle.close() }
}

/// A stored body file that did not match its row's checksum when read to its end.
struct DamagedBodyError: Error, CustomStringConvertible {
    var description: String { "the stored body does not match its checksum" }
}
