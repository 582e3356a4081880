import Synchronization

/// The port through which the HTTP cache keeps responses: metadata plus a body read as a stream.
///
/// Entries are `CachedResponse` values (URL key, Vary key, status, headers, request and response
/// times) whose `id` the store chooses. A store never throws at its callers: a failing store
/// logs, reports itself in `stats()` and behaves as empty, so the broker serves uncached.
/// Writes are atomic: an entry becomes visible only once `commit()` returns true, whole.
public protocol CacheStore: Sendable {
    /// Every stored variant under a primary key (`CacheKey.primary(for:)`).
    func entries(for key: String) async -> [CachedResponse]
    /// Opens the body of `entry` for reading and marks the entry used (LRU); nil when it is gone.
    func body(of entry: CachedResponse) async -> CacheBody?
    /// The variants under `key` when the store can list them at once from memory, else nil
    /// (the caller then awaits `entries(for:)`). It must never block on I/O. Empty means nothing
    /// is stored under `key` as far as this process knows (a `fresh-only` miss answered at once).
    func entriesWithoutWaiting(for key: String) -> [CachedResponse]?
    /// The whole body of `entry` when the store holds it in memory, marking the entry used
    /// (LRU) as `body(of:)` does; nil when reading it would wait. It must never block on I/O.
    func bodyWithoutWaiting(of entry: CachedResponse) -> [UInt8]?
    /// Starts writing a new entry; nil when the store takes no writes (disabled, full, too large).
    ///
    /// `expectedLength` is the body size when known, so an entry over the size limit is
    /// refused before any byte is written.
    func makeWriter(for entry: CachedResponse, expectedLength: Int?) async -> (any CacheEntryWriter)?
    /// Replaces the metadata of the entry with `entry.id`, keeping its body (a 304 freshening).
    func update(_ entry: CachedResponse) async
    /// Deletes the entry with `entry.id`.
    func remove(_ entry: CachedResponse) async
    /// Deletes every variant stored under a primary key.
    func removeAll(for key: String) async
    /// Deletes the entries in `scope`; returns how many were deleted.
    func clear(_ scope: CacheClearScope) async -> Int
    /// Sizes, evictions and health of the store.
    func stats() async -> CacheStoreStats
    /// `stats()` when the store can tell without waiting (from memory, under its locks), else
    /// nil; a metrics scrape served on a transport's thread reads it.
    func statsWithoutWaiting() -> CacheStoreStats?
}

extension CacheStore {
    /// Stores that keep nothing in memory never answer without waiting.
    public func entriesWithoutWaiting(for key: String) -> [CachedResponse]? { nil }

    /// Stores that keep nothing in memory never answer without waiting.
    public func bodyWithoutWaiting(of entry: CachedResponse) -> [UInt8]? { nil }

    /// Stores that keep their statistics elsewhere never answer without waiting.
    public func statsWithoutWaiting() -> CacheStoreStats? { nil }
}

/// Writes one entry's body, chunk by chunk, then commits or discards it.
///
/// Call exactly one of `commit()` and `discard()`. On commit the store also deletes the
/// variants the new entry `replaces` (see `CachedResponse.replaces`).
public protocol CacheEntryWriter: Sendable {
    /// Appends a chunk; false when the entry was abandoned (over the size limit, write error).
    func write(_ chunk: [UInt8]) async -> Bool
    /// Appends the bytes of a frame that is about to be sent; the frame is not changed. A writer
    /// that can write from the frame's memory avoids a copy of every chunk (the default copies).
    func write(frame: FrameBuffer) async -> Bool
    /// Makes the entry visible, atomically; false when it could not be stored.
    func commit() async -> Bool
    /// Drops everything written so far; nothing becomes visible.
    func discard() async
}

extension CacheEntryWriter {
    public func write(frame: FrameBuffer) async -> Bool { await write(frame.bytes) }
}

/// A stored body, read chunk by chunk so that large bodies never sit whole in memory.
public struct CacheBody: Sendable {
    /// The body size in bytes.
    public let length: Int
    /// The next chunk, or nil at the end.
    public let next: @Sendable () async throws -> [UInt8]?
    /// Moves the read position forward by that many bytes without reading them (a seek in a
    /// file), when the store can; before the first `next`, so a byte range starts where it is.
    public let skip: (@Sendable (Int) async throws -> Void)?

    /// Creates a body from its length, a pull function, and optionally a way to skip bytes.
    public init(
        length: Int, skip: (@Sendable (Int) async throws -> Void)? = nil, next: @escaping @Sendable () async throws -> [UInt8]?
    ) {
        self.length = length
        self.skip = skip
        self.next = next
    }

    /// A body over bytes in memory, handed out in chunks of at most `chunkSize`.
    public static func bytes(_ bytes: [UInt8], chunkSize: Int = 256 * 1024) -> CacheBody {
        let offset = Mutex(0)
        return CacheBody(length: bytes.count, skip: { count in offset.locked { $0 = min(bytes.count, $0 + count) } }) {
            offset.locked { start in
                guard start < bytes.count else { return nil }
                let end = min(bytes.count, start + chunkSize)
                defer { start = end }
                return Array(bytes[start..<end])
            }
        }
    }
}

/// Which entries `cache.clear` deletes.
public enum CacheClearScope: Sendable, Equatable {
    /// Every entry.
    case all
    /// Entries whose URL starts with this prefix.
    case prefix(String)
    /// Entries stored or revalidated at or after this time (seconds since the Unix epoch).
    case modifiedSince(Double)

    /// Whether `entry` is in the scope.
    public func contains(_ entry: CachedResponse) -> Bool {
        switch self {
        case .all: return true
        // Bytes, as the SQLite store's `substr` compares them: not Characters, which would
        // not match a prefix that ends inside one (a base letter before a combining mark).
        case .prefix(let prefix): return entry.url.utf8.starts(with: prefix.utf8)
        case .modifiedSince(let time): return entry.responseTime >= time
        }
    }
}

/// What a store holds and how it is doing, for `cache.stats`.
public struct CacheStoreStats: Sendable, Equatable {
    /// Entries (and their body bytes) in the memory tier.
    public var memoryEntries = 0, memoryBytes = 0
    /// Entries (and their body bytes) on disk.
    public var diskEntries = 0, diskBytes = 0
    /// The configured capacities in bytes, when the store has them.
    public var memoryCapacity: Int?, diskCapacity: Int?
    /// Entries evicted to stay under a capacity since the store opened.
    public var evictions = 0
    /// Entries dropped since the store opened because their stored body was missing or did not
    /// match the length and checksum kept with it (written before a crash).
    public var damaged = 0
    /// Why the store is disabled (reads and writes), nil when it works.
    public var disabledReason: String?
    /// Why the store takes no writes while still serving what it has (e.g. a full disk).
    public var writesDisabledReason: String?

    /// Creates empty stats.
    public init() {}
}
