import Foundation

/// The broker's database file under its cache directory, with its schema.
///
/// The HTTP cache keeps its entries here (see `SQLiteCacheStore`); bodies over the inline
/// threshold live as files in the `bodies/` directory beside it. The cookie jar keeps its
/// persistent cookies in the `cookies` table (see `SQLiteCookieStore`), and the record of
/// preloaded pages the `preloaded_pages` table (see `SQLitePreloadedPages`).
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
        try connection.execute(cookieSchema)
        try addChecksumColumn(connection)
        try connection.execute("UPDATE meta SET value = '3' WHERE key = 'schema' AND value = '2'")
        try addCookiePartitions(connection)
        try connection.execute("UPDATE meta SET value = '4' WHERE key = 'schema' AND value = '3'")
        try addColumn(connection, "cache_entries", "status_text", "TEXT")
        try connection.execute("UPDATE meta SET value = '5' WHERE key = 'schema' AND value = '4'")
        try connection.execute(preloadedPagesTable)
        try connection.execute("UPDATE meta SET value = '6' WHERE key = 'schema' AND value = '5'")
        return connection
    }

    /// The schema version `open` leaves: 1 had the cache only, 2 adds the cookie jar, 3 the
    /// checksum of cache body files, 4 the partition key of `Partitioned` cookies, 5 the reason
    /// phrase of cache entries (`status_text`, NULL in older rows: they serve the standard phrase),
    /// 6 the record of preloaded pages (`preloaded_pages`).
    public static let schemaVersion = 6

    // Schema 6: what the last `preload` of each page stored (`SQLitePreloadedPages`); `recorded`
    // orders the pages, least recently recorded first.
    static let preloadedPagesTable = """
        CREATE TABLE IF NOT EXISTS preloaded_pages (
            page TEXT PRIMARY KEY, resources TEXT NOT NULL, recorded INTEGER NOT NULL)
        """

    /// A jar written before partitions has no `partition_key` column, and its primary key lacks
    /// it: the table is rebuilt in one transaction with the column ('' for every old cookie, which
    /// were all unpartitioned), so the old cookies stay readable.
    static func addCookiePartitions(_ connection: SQLiteConnection) throws {
        guard try !hasColumn(connection, "cookies", "partition_key") else { return }
        try connection.execute("BEGIN IMMEDIATE")
        do {
            // Another process opening the same database may have rebuilt it first.
            if try !hasColumn(connection, "cookies", "partition_key") {
                try connection.execute("""
                    ALTER TABLE cookies RENAME TO cookies_unpartitioned;
                    \(cookieTable);
                    INSERT INTO cookies (name, value, domain, path, host_only, expires, creation, last_access, secure, http_only,
                        same_site, partition_key)
                    SELECT name, value, domain, path, host_only, expires, creation, last_access, secure, http_only, same_site, ''
                    FROM cookies_unpartitioned;
                    DROP TABLE cookies_unpartitioned;
                    """)
            }
            try connection.execute("COMMIT")
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    // `partition_key` is the top-level site (`scheme://domain`) of a `Partitioned` cookie, '' for
    // an unpartitioned one; a cookie's key includes it.
    static let cookieTable = """
        CREATE TABLE IF NOT EXISTS cookies (
            name TEXT NOT NULL, value TEXT NOT NULL, domain TEXT NOT NULL, path TEXT NOT NULL, host_only INTEGER NOT NULL,
            expires REAL, creation REAL NOT NULL, last_access REAL NOT NULL, secure INTEGER NOT NULL,
            http_only INTEGER NOT NULL, same_site TEXT NOT NULL, partition_key TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (name, domain, path, host_only, partition_key))
        """

    // Schema 2: the cookie jar's persistent cookies, keyed as the jar keys them. Session cookies
    // are never written, so a restart drops them.
    static let cookieSchema = """
        \(cookieTable);
        UPDATE meta SET value = '2' WHERE key = 'schema' AND value = '1';
        """

    /// A database made before body files went unsynced has no `checksum` column: it gets one, and
    /// its rows keep NULL there (their files were fsynced before the row went in; only their length
    /// is checked).
    static func addChecksumColumn(_ connection: SQLiteConnection) throws {
        try addColumn(connection, "cache_entries", "checksum", "INTEGER")
    }

    /// Adds a nullable `column` to `table` unless it is there; older rows keep NULL in it.
    static func addColumn(_ connection: SQLiteConnection, _ table: String, _ column: String, _ type: String) throws {
        guard try !hasColumn(connection, table, column) else { return }
        do {
            try connection.execute("ALTER TABLE \(table) ADD COLUMN \(column) \(type)")
        } catch {
            // Another process opening the same database may have added it first.
            guard try hasColumn(connection, table, column) else { throw error }
        }
    }

    /// Whether `table` has a column named `column`.
    static func hasColumn(_ connection: SQLiteConnection, _ table: String, _ column: String) throws -> Bool {
        let statement = try connection.prepare("PRAGMA table_info(\(table))")
        while try statement.step() {
            if statement.string(at: 1) == column { return true }
        }
        return false
    }

    // `checksum` is the XXH64 of a body file (`BodyChecksum`), NULL for inline bodies. `status_text`
    // is the origin's reason phrase, NULL for rows written before schema 5.
    // Bodies sit in their own table so that lookups and LRU scans read small rows only; the
    // totals row is kept by triggers, so start-up reads two numbers instead of scanning.
    static let cacheSchema = """
        CREATE TABLE IF NOT EXISTS cache_entries (
            id INTEGER PRIMARY KEY, url TEXT NOT NULL, vary TEXT NOT NULL, status INTEGER NOT NULL,
            headers TEXT NOT NULL, request_time REAL NOT NULL, response_time REAL NOT NULL,
            size INTEGER NOT NULL, file TEXT, accessed INTEGER NOT NULL, checksum INTEGER, status_text TEXT);
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
