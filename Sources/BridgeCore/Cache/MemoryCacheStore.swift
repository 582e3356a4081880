import Synchronization

/// A `CacheStore` held in memory: for tests and for a broker run without a cache directory.
///
/// Bodies are kept whole, so it suits small bodies; `maximumEntryBytes` refuses larger ones.
/// `writeDelay` makes every commit slow, to show that a slow write never holds up a hit.
public final class MemoryCacheStore: CacheStore {
    struct Stored {
        var entry: CachedResponse
        var body: [UInt8]
    }

    private let state = Mutex((entries: [String: Stored](), nextID: 1, evictions: 0))
    /// The largest body stored, in bytes.
    public let maximumEntryBytes: Int
    /// A delay added to every commit (tests only).
    public let writeDelay: Duration

    /// Creates an empty store.
    public init(maximumEntryBytes: Int = 64 * 1024 * 1024, writeDelay: Duration = .zero) {
        self.maximumEntryBytes = maximumEntryBytes
        self.writeDelay = writeDelay
    }

    /// The number of stored entries.
    public var count: Int { state.locked { $0.entries.count } }

    public func entries(for key: String) async -> [CachedResponse] {
        state.locked { $0.entries.values.filter { $0.entry.url == key }.map(\.entry) }
            .sorted { $0.id < $1.id }
    }

    public func body(of entry: CachedResponse) async -> CacheBody? {
        state.locked { $0.entries[entry.id]?.body }.map { CacheBody.bytes($0) }
    }

    public func entriesWithoutWaiting(for key: String) -> [CachedResponse]? {
        state.locked { $0.entries.values.filter { $0.entry.url == key }.map(\.entry) }
            .sorted { $0.id < $1.id }
    }

    public func bodyWithoutWaiting(of entry: CachedResponse) -> [UInt8]? {
        state.locked { $0.entries[entry.id]?.body }
    }

    public func makeWriter(for entry: CachedResponse, expectedLength: Int?) async -> (any CacheEntryWriter)? {
        if let expectedLength, expectedLength > maximumEntryBytes { return nil }
        return Writer(store: self, entry: entry)
    }

    public func update(_ entry: CachedResponse) async {
        state.locked { state in
            guard state.entries[entry.id] != nil else { return }
            state.entries[entry.id]?.entry = entry
        }
    }

    public func remove(_ entry: CachedResponse) async {
        state.locked { _ = $0.entries.removeValue(forKey: entry.id) }
    }

    public func removeAll(for key: String) async {
        state.locked { $0.entries = $0.entries.filter { $0.value.entry.url != key } }
    }

    public func clear(_ scope: CacheClearScope) async -> Int {
        state.locked { state in
            let before = state.entries.count
            state.entries = state.entries.filter { !scope.contains($0.value.entry) }
            return before - state.entries.count
        }
    }

    public func stats() async -> CacheStoreStats {
        statsWithoutWaiting() ?? CacheStoreStats()
    }

    public func statsWithoutWaiting() -> CacheStoreStats? {
        state.locked { state in
            var stats = CacheStoreStats()
            stats.memoryEntries = state.entries.count
            stats.memoryBytes = state.entries.values.reduce(0) { $0 + $1.body.count }
            stats.evictions = state.evictions
            return stats
        }
    }

    func insert(_ entry: CachedResponse, body: [UInt8]) {
        state.locked { state in
            var stored = entry
            stored.id = String(state.nextID)
            state.nextID += 1
            state.entries = state.entries.filter { !stored.replaces($0.value.entry) }
            state.entries[stored.id] = Stored(entry: stored, body: body)
        }
    }

    final class Writer: CacheEntryWriter {
        let store: MemoryCacheStore
        let entry: CachedResponse
        private let body = Mutex<[UInt8]?>([])

        init(store: MemoryCacheStore, entry: CachedResponse) {
            self.store = store
            self.entry = entry
        }

        func write(_ chunk: [UInt8]) async -> Bool {
            body.locked { body in
                guard var bytes = body else { return false }
                body = nil  // Moved out so the append does not copy.
                bytes.append(contentsOf: chunk)
                guard bytes.count <= store.maximumEntryBytes else { return false }
                body = bytes
                return true
            }
        }

        func commit() async -> Bool {
            guard let bytes = body.locked({ $0 }) else { return false }
            if store.writeDelay > .zero { try? await Task.sleep(for: store.writeDelay) }
            store.insert(entry, body: bytes)
            return true
        }

        func discard() async { body.locked { $0 = nil } }
    }
}
