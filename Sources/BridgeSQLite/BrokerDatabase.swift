import Foundation

/// The broker's database file under its cache directory, with its schema.
///
/// The HTTP cache keeps its entries here (see `SQLiteCacheStore`); bodies over the inline
/// threshold live as files in the `bodies/` directory beside it.
public enum BrokerDatabase {
    /// The file name inside the cache directory.
    public static let fileName = "bridge-broker.sqlite"
    /// The directory, inside the cache directory, of bodies stored as files.
    public static let bodiesDirectory = "bodies"

    /// Creates `directory` if needed and opens the database in it, with the cache schema.
    public static func open(in directory: String) throws -> SQLiteConnection {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let connection = try SQLiteConnection(path: directory + "/" + fileName)
        try connection.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        try connection.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', '1')").run()
        try connection.execute(cacheSchema)
        return connection
    }

    // Bodies sit in their own table so that lookups and LRU scans read small rows only; the
    // totals row is kept by triggers, so start-up reads two numbers instead of scanning.
    static let cacheSchema = """
        CREATE TABLE IF NOT EXISTS cache_entries (
            id INTEGER PRIMARY KEY, url TEXT NOT NULL, vary TEXT NOT NULL, status INTEGER NOT NULL,
            headers TEXT NOT NULL, request_time REAL NOT NULL, response_time REAL NOT NULL,
            size INTEGER NOT NULL, file TEXT, accessed INTEGER NOT NULL);
        CREATE INDEX IF NOT EXISTS cache_entries_url ON cache_entries (url);
        CREATE INDEX IF NOT EXISTS cache_entries_lru ON cache_entries (accessed);
        CREATE TABLE IF NOT EXISTS cache_bodies (id INTEGER PRIMARY KEY, body BLOB NOT NULL);
        CREATE TABLE IF NOT EXISTS cache_totals (one INTEGER PRIMARY KEY CHECK (one = 1),
            entries INTEGER NOT NULL, bytes INTEGER NOT NULL);
        INSERT OR IGNORE INTO cache_totals VALUES (1, 0, 0);
        CREATE TRIGGER IF NOT EXISTS cache_entries_added AFTER INSERT ON cache_entries BEGIN
            UPDATE cache_totals SET entries = entries + 1, bytes = bytes + NEW.size; END;
        CREATE TRIGGER IF NOT EXISTS cache_entries_removed AFTER DELETE ON cache_entries BEGIN
            UPDATE cache_totals SET entries = entries - 1, bytes = bytes - OLD.size;
            DELETE FROM cache_bodies WHERE id = OLD.id; END;
        """
}
