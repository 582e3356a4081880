import BridgeCore
import Synchronization

/// The record of preloaded pages (`PreloadedPages`) in the broker's database (`preloaded_pages`
/// table, beside the cache's), on a connection of its own.
///
/// A page's resources are its normalized URLs, one per line (a normalized URL has no line break).
/// Every save is one transaction.
public final class SQLitePreloadedPages: PreloadedPagesPersistence, @unchecked Sendable {
    // The connection is used under this lock only.
    private let lock = Mutex(())
    private let connection: SQLiteConnection

    /// Opens the database in `directory` (creating it and its schema if needed).
    public init(directory: String) throws {
        connection = try BrokerDatabase.open(in: directory)
    }

    public func loadPreloadedPages() throws -> [(page: String, resources: [String])] {
        try lock.locked { _ in
            let statement = try connection.prepare("SELECT page, resources FROM preloaded_pages ORDER BY recorded")
            var pages: [(page: String, resources: [String])] = []
            while try statement.step() {
                let resources = statement.string(at: 1) ?? ""
                pages.append((statement.string(at: 0) ?? "", resources.isEmpty ? [] : resources.split(separator: "\n").map(String.init)))
            }
            return pages
        }
    }

    public func deleteAllPreloadedPages() throws {
        try lock.locked { _ in try connection.execute("DELETE FROM preloaded_pages") }
    }

    public func savePreloadedPage(_ page: String, resources: [String], evicting evicted: [String]) throws {
        try lock.locked { _ in
            try connection.transaction {
                if !evicted.isEmpty {
                    let delete = try connection.prepare("DELETE FROM preloaded_pages WHERE page = ?")
                    for old in evicted { try delete.bind([.text(old)]).run() }
                }
                try connection.prepare("""
                    INSERT OR REPLACE INTO preloaded_pages (page, resources, recorded)
                    VALUES (?, ?, (SELECT COALESCE(MAX(recorded), 0) + 1 FROM preloaded_pages))
                    """).bind([.text(page), .text(resources.joined(separator: "\n"))]).run()
            }
        }
    }
}
