import CSQLite

/// A failed SQLite call: the result code, SQLite's message, and the SQL that failed.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// The primary or extended result code.
    public let code: Int32
    /// SQLite's message for it.
    public let message: String
    /// The statement that failed, when there was one.
    public let sql: String?

    public var description: String {
        "SQLite error \(code): \(message)" + (sql.map { " (in: \($0))" } ?? "")
    }

    /// Whether the error means the disk or database is full.
    public var isFull: Bool { code & 0xFF == SQLITE_FULL }
    /// Whether the error means the file is not a database or is damaged.
    public var isCorrupt: Bool { code & 0xFF == SQLITE_CORRUPT || code & 0xFF == SQLITE_NOTADB }
}
