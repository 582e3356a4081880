import BridgeCore
import Synchronization

/// The cookie jar's persistent cookies in the broker's database (`cookies` table, beside the
/// cache's), on a connection of its own.
///
/// Every `save` is one transaction, so a process killed mid-write leaves the jar as it was
/// before or after that change, never half of it.
public final class SQLiteCookieStore: CookiePersistence, @unchecked Sendable {
    // The connection is used under this lock only.
    private let lock = Mutex(())
    private let connection: SQLiteConnection
    private var statements: [String: SQLiteStatement] = [:]

    /// Opens the database in `directory` (creating it and its schema if needed).
    public init(directory: String) throws {
        connection = try BrokerDatabase.open(in: directory)
    }

    public func loadCookies() throws -> [Cookie] {
        try lock.locked { _ in
            let statement = try cached(
                """
                SELECT name, value, domain, path, host_only, expires, creation, last_access, secure, http_only, same_site, partition_key
                FROM cookies
                """)
            defer { statement.reset() }
            try statement.bind([])
            var cookies: [Cookie] = []
            while try statement.step() {
                cookies.append(Cookie(
                    name: statement.string(at: 0) ?? "", value: statement.string(at: 1) ?? "", domain: statement.string(at: 2) ?? "",
                    path: statement.string(at: 3) ?? "/", expires: statement.isNull(at: 5) ? nil : statement.double(at: 5),
                    creation: statement.double(at: 6), lastAccess: statement.double(at: 7), secure: statement.int(at: 8) != 0,
                    httpOnly: statement.int(at: 9) != 0, sameSite: SameSite(rawValue: statement.string(at: 10) ?? "") ?? .unspecified,
                    hostOnly: statement.int(at: 4) != 0, partition: CookieSite(serialized: statement.string(at: 11) ?? "")))
            }
            return cookies
        }
    }

    public func save(upserting cookies: [Cookie], deleting keys: [Cookie.Key]) throws {
        try lock.locked { _ in
            try connection.transaction {
                for key in keys {
                    try run("DELETE FROM cookies WHERE name = ? AND domain = ? AND path = ? AND host_only = ? AND partition_key = ?", [
                        .text(key.name), .text(key.domain), .text(key.path), .integer(key.hostOnly ? 1 : 0),
                        .text(key.partition?.serialized ?? ""),
                    ])
                }
                for cookie in cookies {
                    try run("""
                        INSERT OR REPLACE INTO cookies (name, value, domain, path, host_only, expires, creation, last_access, secure,
                            http_only, same_site, partition_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """, [
                        .text(cookie.name), .text(cookie.value), .text(cookie.domain), .text(cookie.path),
                        .integer(cookie.hostOnly ? 1 : 0), cookie.expires.map { .double($0) } ?? .null, .double(cookie.creation),
                        .double(cookie.lastAccess), .integer(cookie.secure ? 1 : 0), .integer(cookie.httpOnly ? 1 : 0),
                        .text(cookie.sameSite.rawValue), .text(cookie.partition?.serialized ?? ""),
                    ])
                }
            }
        }
    }

    public func deleteAll() throws {
        try lock.locked { _ in try connection.execute("DELETE FROM cookies") }
    }

    private func run(_ sql: String, _ values: [SQLiteStatement.Value]) throws {
        let statement = try cached(sql)
        defer { statement.reset() }
        try statement.bind(values).run()
    }

    private func cached(_ sql: String) throws -> SQLiteStatement {
        if let statement = statements[sql] { return statement }
        let statement = try connection.prepare(sql)
        statements[sql] = statement
        return statement
    }
}
