import Foundation

/// The broker's database file under its cache directory, with its schema version.
///
/// The HTTP cache keeps its entries here; until it lands, the broker opens the file so that a
/// bad cache directory is reported at start-up rather than on first use.
public enum BrokerDatabase {
    /// The file name inside the cache directory.
    public static let fileName = "bridge-broker.sqlite"

    /// Creates `directory` if needed and opens the database in it.
    public static func open(in directory: String) throws -> SQLiteConnection {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let connection = try SQLiteConnection(path: directory + "/" + fileName)
        try connection.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        try connection.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', '1')").run()
        return connection
    }
}
