import BridgeCore

/// Every URL with a stored entry, as hashes, so that "nothing stored" needs no SQLite query.
///
/// Complete once `load` has run on the writer's queue: every insert runs on that queue too and
/// adds its URL before its transaction, so no row is ever visible while its URL is missing here.
/// Deletions leave their hashes (a hash here only means "ask SQLite"); `load` runs again when
/// they outnumber the stored entries, and after everything is cleared. Rows another process
/// writes to the same database are not seen: only `fresh-only` lookups, whose clients ask again
/// in the usual way, take "nothing stored" from here.
struct StoredKeys {
    /// Above this many hashes per stored entry (plus `slack`) the set is built again.
    static let staleFactor = 2
    static let slack = 4096

    private(set) var complete = false
    private var hashes: Set<Int> = []

    mutating func insert(_ url: String) { hashes.insert(url.hashValue) }

    /// Whether `url` surely has no stored entry.
    func surelyAbsent(_ url: String) -> Bool { complete && !hashes.contains(url.hashValue) }

    func isStale(entries: Int) -> Bool { hashes.count > entries * Self.staleFactor + Self.slack }

    /// Replaces the set with `urls`, all the stored URLs, read on the writer's queue.
    mutating func load(_ urls: [String]) {
        hashes = Set(minimumCapacity: urls.count)
        for url in urls { hashes.insert(url.hashValue) }
        complete = true
    }
}

extension SQLiteCacheStore {
    /// Reads every stored URL into `keys`; on the writer's queue, so no insert runs meanwhile.
    func loadKeys(on connection: SerialConnection) {
        do {
            let urls = try connection.query("SELECT DISTINCT url FROM cache_entries") { $0.string(at: 0) ?? "" }
            keys.locked { $0.load(urls) }
        } catch {
            failed(error, while: "listing the stored URLs")
        }
    }

    /// Builds `keys` again on the writer's queue when deletions have left it mostly stale
    /// (`entries` stored now).
    func reloadKeys(on connection: SerialConnection, entries: Int) {
        guard keys.locked({ $0.complete && $0.isStale(entries: entries) }) else { return }
        loadKeys(on: connection)
    }
}
