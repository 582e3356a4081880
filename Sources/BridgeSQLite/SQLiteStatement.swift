import CSQLite

/// A prepared statement; finalized when released.
public final class SQLiteStatement {
    let connection: SQLiteConnection
    let handle: OpaquePointer
    let sql: String

    init(connection: SQLiteConnection, sql: String) throws {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v2(connection.handle, sql, -1, &statement, nil)
        guard status == SQLITE_OK, let statement else { throw connection.error(status, sql: sql) }
        self.connection = connection
        self.handle = statement
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    /// A value to bind to a parameter.
    public enum Value: Sendable {
        case null
        case integer(Int64)
        case double(Double)
        case text(String)
        case blob([UInt8])
    }

    /// Resets the statement and binds `values` to its parameters, in order.
    @discardableResult
    public func bind(_ values: [Value]) throws -> SQLiteStatement {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let status: Int32
            switch value {
            case .null: status = sqlite3_bind_null(handle, index)
            case .integer(let integer): status = sqlite3_bind_int64(handle, index, integer)
            case .double(let double): status = sqlite3_bind_double(handle, index, double)
            case .text(let text): status = sqlite3_bind_text(handle, index, text, -1, bridge_sqlite_transient())
            case .blob(let bytes):
                status = bytes.withUnsafeBytes { sqlite3_bind_blob(handle, index, $0.baseAddress, Int32($0.count), bridge_sqlite_transient()) }
            }
            guard status == SQLITE_OK else { throw connection.error(status, sql: sql) }
        }
        return self
    }

    /// Steps once: true when a row is available, false when done.
    public func step() throws -> Bool {
        let status = sqlite3_step(handle)
        switch status {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw connection.error(status, sql: sql)
        }
    }

    /// Runs the statement to completion.
    public func run() throws {
        while try step() {}
    }

    /// Resets the statement so it holds no read snapshot; call after the last `step()`.
    public func reset() {
        sqlite3_reset(handle)
    }

    /// The double in column `index` of the current row.
    public func double(at index: Int32) -> Double { sqlite3_column_double(handle, index) }

    /// Whether column `index` of the current row is NULL.
    public func isNull(at index: Int32) -> Bool { sqlite3_column_type(handle, index) == SQLITE_NULL }

    /// The integer in column `index` of the current row.
    public func int(at index: Int32) -> Int64 { sqlite3_column_int64(handle, index) }

    /// The text in column `index`, nil for NULL.
    public func string(at index: Int32) -> String? {
        guard let text = sqlite3_column_text(handle, index) else { return nil }
        return String(cString: text)
    }

    /// The blob in column `index`.
    public func blob(at index: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(handle, index))
        guard count > 0, let pointer = sqlite3_column_blob(handle, index) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}
