import BridgeCore
import Foundation

extension SQLiteCacheStore {
    /// Whether writes are possible now; a full disk is retried after `fullDiskRetry`.
    var acceptsWrites: Bool {
        health.locked { health in
            guard health.disabled == nil else { return false }
            if health.writesDisabled != nil, Date().timeIntervalSince(health.writesDisabledAt) > Self.fullDiskRetry {
                health.writesDisabled = nil
            }
            return health.writesDisabled == nil
        }
    }

    public func makeWriter(for entry: CachedResponse, expectedLength: Int?) async -> (any CacheEntryWriter)? {
        guard writer != nil, acceptsWrites else { return nil }
        if let expectedLength, expectedLength > maximumEntryBytes { return nil }
        return SQLiteEntryWriter(store: self, entry: entry, expectedLength: expectedLength)
    }

    /// Queues a complete entry's insert for the writer's queue; `insert.done` hears whether it was
    /// stored, on that queue. The inserts queued while the writer is busy go in one transaction
    /// (`insert(_:on:)`): a burst of stored responses (a page's resources, a preload) is one WAL
    /// commit, not one each.
    func queueInsert(_ insert: PendingInsert) {
        guard let writer else { return insert.done(false) }
        let first = inserts.locked { queued -> Bool in
            queued.append(insert)
            return queued.count == 1
        }
        guard first else { return }
        writer.enqueue { connection in
            let batch = self.inserts.locked { queued in
                defer { queued = [] }
                return queued
            }
            self.insert(batch, on: connection)
        }
    }

    /// Inserts `batch` on the writer's queue: each entry deletes the variants it replaces and
    /// evicts beyond the capacity; all in one transaction, or, alone or when that transaction
    /// failed, each in its own (so one entry's error fails only that entry). What follows the
    /// transaction (the memory tier, the index, the totals, and unlinking the replaced and evicted
    /// entries' files) runs here too, in the entries' order, so none of it runs on a thread that
    /// delivers responses.
    func insert(_ batch: [PendingInsert], on connection: SerialConnection) {
        guard !batch.isEmpty else { return }
        let first = health.locked { health in
            defer { health.nextAccess += Int64(batch.count) }
            return health.nextAccess
        }
        // Before the rows exist: "nothing stored" must never be said of a URL that has a row.
        keys.locked { keys in for insert in batch { keys.insert(insert.entry.url) } }
        if batch.count > 1, let outcomes = try? connection.transaction({
            try batch.enumerated().map { try insertRows($1, access: first + Int64($0), on: connection) }
        }) {
            health.locked { $0.insertTransactions += 1 }
            for (insert, outcome) in zip(batch, outcomes) {
                apply(outcome, of: insert, on: connection)
                insert.done(true)
            }
            return
        }
        for (index, insert) in batch.enumerated() {
            do {
                let outcome = try connection.transaction { try insertRows(insert, access: first + Int64(index), on: connection) }
                health.locked { $0.insertTransactions += 1 }
                apply(outcome, of: insert, on: connection)
                insert.done(true)
            } catch {
                if let file = insert.file { try? FileManager.default.removeItem(atPath: bodiesPath + "/" + file) }
                failed(error, while: "storing \(insert.entry.url)")
                insert.done(false)
            }
        }
    }

    /// One entry's rows, inside the caller's transaction: the variants it replaces deleted, its
    /// row and inline body inserted, the least recently used evicted beyond the capacity.
    private func insertRows(_ insert: PendingInsert, access: Int64, on connection: SerialConnection) throws -> InsertOutcome {
        let entry = insert.entry
        let existing = try connection.query(
            "SELECT id, vary, file FROM cache_entries WHERE url = ?", [.text(entry.url)]
        ) { ($0.int(at: 0), $0.string(at: 1).flatMap(CacheEntryCoding.decodeVaryKey), $0.string(at: 2)) }
        var removed: [(Int64, String?)] = []
        for (id, vary, file) in existing {
            let old = CachedResponse(
                url: entry.url, status: 0, headers: HeaderList(), varyKey: vary ?? entry.varyKey,
                requestTime: 0, responseTime: 0)
            guard entry.replaces(old) else { continue }
            try connection.run("DELETE FROM cache_entries WHERE id = ?", [.integer(id)])
            removed.append((id, file))
        }
        let id = try takeEntryID(connection)
        try connection.run(
            """
            INSERT INTO cache_entries (id, url, vary, status, headers, request_time, response_time, size, file, accessed, checksum,
                status_text)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [.integer(id), .text(entry.url), .text(CacheEntryCoding.encode(entry.varyKey)), .integer(Int64(entry.status)),
             .text(CacheEntryCoding.encode(entry.headers)), .double(entry.requestTime),
             .double(entry.responseTime), .integer(Int64(insert.size)), insert.file.map { .text($0) } ?? .null,
             .integer(access), insert.checksum.map { .integer($0) } ?? .null,
             entry.statusText.map { .text($0) } ?? .null])
        if let inline = insert.inline { try connection.run("INSERT INTO cache_bodies (id, body) VALUES (?, ?)", [.integer(id), .blob(inline)]) }
        var evicted = 0
        // The least recently used go first: the uses still waiting for their batch count, written
        // here in this transaction (their batch then finds nothing left).
        try writeTouches(on: connection)
        let capacity = configuration.diskCapacity
        while let bytes = try Self.totals(connection).bytes as Int?, bytes > capacity {
            let oldest = try connection.query(
                "SELECT id, file FROM cache_entries WHERE id != ? ORDER BY accessed LIMIT 32", [.integer(id)]
            ) { ($0.int(at: 0), $0.string(at: 1)) }
            guard !oldest.isEmpty else { break }
            for (victim, file) in oldest {
                try connection.run("DELETE FROM cache_entries WHERE id = ?", [.integer(victim)])
                removed.append((victim, file))
                evicted += 1
                if try Self.totals(connection).bytes <= capacity { break }
            }
        }
        let totals = try Self.totals(connection)
        let listed = try Self.entries(of: entry.url, in: connection)
        return InsertOutcome(removed: removed, evicted: evicted, entries: totals.entries, bytes: totals.bytes, id: id, listed: listed)
    }

    /// What follows an entry's committed insert.
    private func apply(_ outcome: InsertOutcome, of insert: PendingInsert, on connection: SerialConnection) {
        forget(outcome.removed)
        // The first request after a store (a preloaded page's resources) is served from memory at
        // once, like every later one: the body goes to the memory tier and the URL's new listing
        // to the index, in place of what the write made stale. Evictions remove other URLs'
        // entries too, so they forget every listing.
        if let inline = insert.inline { remember(outcome.id, inline) }
        replaceIndex(insert.entry.url, with: outcome.listed, forgettingOthers: outcome.evicted > 0)
        health.locked { health in
            (health.entries, health.bytes) = (outcome.entries, outcome.bytes)
            health.evictions += outcome.evicted
        }
        if outcome.evicted > 0 { reloadKeys(on: connection, entries: outcome.entries) }
    }

    /// The id for an entry about to be inserted, inside the write transaction.
    ///
    /// SQLite would hand a deleted row's id out again: replacing the newest entry deletes it just
    /// before the insert. An id is never reused while this store is open, so a listing, a
    /// memory-tier body or a freshening that names an old entry never reaches a new one. It is
    /// also above every stored id, since another process may write to the same database; the
    /// transaction holds the write lock, so none can insert in between.
    func takeEntryID(_ connection: SerialConnection) throws -> Int64 {
        let stored = try connection.query("SELECT coalesce(max(id), 0) FROM cache_entries") { $0.int(at: 0) }.first ?? 0
        return health.locked { health in
            let id = max(health.nextID, stored + 1)
            health.nextID = id + 1
            return id
        }
    }

    static func totals(_ connection: SerialConnection) throws -> (entries: Int, bytes: Int) {
        try connection.query("SELECT entries, bytes FROM cache_totals") { (Int($0.int(at: 0)), Int($0.int(at: 1))) }.first ?? (0, 0)
    }

    /// Drops deleted entries from the memory tier and deletes their body files.
    func forget(_ removed: [(Int64, String?)]) {
        memory.locked { tier in for (id, _) in removed { tier.remove(id) } }
        for case (_, let file?) in removed { try? FileManager.default.removeItem(atPath: bodiesPath + "/" + file) }
    }

    public func update(_ entry: CachedResponse) async {
        guard let writer, let id = Int64(entry.id), acceptsWrites else { return }
        // Not awaited by design: a freshening may land a little later; a slow write never delays the reply.
        writer.enqueue { connection in
            do {
                try connection.run(
                    "UPDATE cache_entries SET headers = ?, vary = ?, request_time = ?, response_time = ?, status_text = ? WHERE id = ?",
                    [.text(CacheEntryCoding.encode(entry.headers)), .text(CacheEntryCoding.encode(entry.varyKey)),
                     .double(entry.requestTime), .double(entry.responseTime), entry.statusText.map { .text($0) } ?? .null,
                     .integer(id)])
                self.invalidateIndex(entry.url)
            } catch {
                self.failed(error, while: "updating \(entry.url)")
            }
        }
    }

    public func remove(_ entry: CachedResponse) async {
        guard let id = Int64(entry.id) else { return }
        await delete(where: "id = ?", [.integer(id)], what: entry.url)
    }

    public func removeAll(for key: String) async {
        await delete(where: "url = ?", [.text(key)], what: key)
    }

    public func clear(_ scope: CacheClearScope) async -> Int {
        let removed: Int
        switch scope {
        case .all: removed = await delete(where: "1", [], what: "everything")
        case .prefix(let prefix):
            removed = await delete(where: "substr(url, 1, length(?1)) = ?1", [.text(prefix)], what: "URLs under \(prefix)")
        case .modifiedSince(let time):
            removed = await delete(where: "response_time >= ?", [.double(time)], what: "entries since \(time)")
        }
        // Clearing frees space: let writes try again at once.
        health.locked { $0.writesDisabled = nil }
        return removed
    }

    /// Deletes the entries matching a condition; returns how many.
    @discardableResult
    func delete(where condition: String, _ values: [SQLiteStatement.Value], what: String) async -> Int {
        guard let writer, disabledReason == nil else { return 0 }
        do {
            let outcome = try await writer.run { connection in
                let outcome = try connection.transaction {
                    let doomed = try connection.query("SELECT id, file FROM cache_entries WHERE \(condition)", values) {
                        ($0.int(at: 0), $0.string(at: 1))
                    }
                    try connection.run("DELETE FROM cache_entries WHERE \(condition)", values)
                    return (doomed, try Self.totals(connection))
                }
                self.reloadKeys(on: connection, entries: outcome.1.entries)
                return outcome
            }
            forget(outcome.0)
            invalidateIndex(nil)
            health.locked { health in (health.entries, health.bytes) = (outcome.1.entries, outcome.1.bytes) }
            return outcome.0.count
        } catch {
            failed(error, while: "deleting \(what)")
            return 0
        }
    }
}

/// A complete entry waiting for the writer's queue (`SQLiteCacheStore.queueInsert`).
struct PendingInsert: Sendable {
    let entry: CachedResponse
    /// A small body, stored in the row's blob.
    let inline: [UInt8]?
    /// The name of a complete body file, with `checksum` its `BodyChecksum`.
    let file: String?
    let size: Int
    let checksum: Int64?
    /// Hears whether the entry was stored, on the writer's queue.
    let done: @Sendable (Bool) -> Void
}

/// What one insert's transaction did, for what follows it (`SQLiteCacheStore.apply`).
struct InsertOutcome {
    var removed: [(Int64, String?)]
    var evicted: Int
    var entries: Int
    var bytes: Int
    var id: Int64
    var listed: [CachedResponse]
}
