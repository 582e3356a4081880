import BridgeCore

/// The metadata of stored entries by URL, kept in memory so that a cache hit needs no SQLite
/// query. Every write that can change a URL's entries invalidates it; a lookup that raced a
/// write is not remembered (the generation changed meanwhile), so the index never goes stale.
struct EntryIndex {
    /// The most URLs remembered.
    static let capacity = 4096

    var urls = LRUCache<String, [CachedResponse]>(capacity: EntryIndex.capacity)
    var generation: UInt64 = 0
}

extension SQLiteCacheStore {
    /// The index's entries for `key`: a hit served at once, with no SQLite query and no hop.
    /// Empty when the URL surely has nothing stored: remembered so, or not among the stored URLs.
    public func entriesWithoutWaiting(for key: String) -> [CachedResponse]? {
        guard reader != nil, disabledReason == nil else { return nil }
        if let entries = indexedEntries(for: key).entries { return entries }
        return keys.locked { $0.surelyAbsent(key) } ? [] : nil
    }

    /// The body of `entry` from the memory tier; nil when only SQLite or a file has it.
    public func bodyWithoutWaiting(of entry: CachedResponse) -> [UInt8]? {
        guard reader != nil, let id = Int64(entry.id), disabledReason == nil,
              let bytes = memory.locked({ $0.get(id) }) else { return nil }
        touch(id)
        return bytes
    }

    /// The remembered entries of `key`, or nil with the generation to remember a query under.
    func indexedEntries(for key: String) -> (entries: [CachedResponse]?, generation: UInt64) {
        index.locked { ($0.urls.get(key), $0.generation) }
    }

    /// Remembers `entries` for `key` unless a write invalidated anything since `generation`.
    func rememberEntries(_ entries: [CachedResponse], for key: String, generation: UInt64) {
        index.locked { index in
            guard index.generation == generation else { return }
            _ = index.urls.put(key, entries, cost: 1)
        }
    }

    /// Sets `key`'s entries to what a write just committed (forgetting every other URL's too when
    /// `forgettingOthers`); lookups that raced the write are not remembered over it.
    func replaceIndex(_ key: String, with entries: [CachedResponse], forgettingOthers: Bool) {
        index.locked { index in
            index.generation += 1
            if forgettingOthers { index.urls.removeAll() }
            _ = index.urls.put(key, entries, cost: 1)
        }
    }

    /// Forgets `key`'s entries, or every URL's when `key` is nil (evictions, clears).
    func invalidateIndex(_ key: String?) {
        index.locked { index in
            index.generation += 1
            if let key { index.urls.remove(key) } else { index.urls.removeAll() }
        }
    }
}
