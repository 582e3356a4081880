import Dispatch

/// One SQLite connection with its one serial owner: a dedicated dispatch queue.
///
/// Every use of the connection (and of the statements it caches) happens on `queue`, so the
/// connection is never touched by two threads at once; the pooled connections of
/// `ReadConnections` are used on their callers' threads instead, one at a time, never through
/// their queue. Statements are cached by SQL text and
/// reset after each use so that none keeps a read snapshot open in WAL mode.
final class SerialConnection: @unchecked Sendable {
    private let connection: SQLiteConnection
    private let queue: DispatchQueue
    private var statements: [String: SQLiteStatement] = [:]

    init(_ connection: SQLiteConnection, label: String) {
        self.connection = connection
        self.queue = DispatchQueue(label: label)
    }

    /// Runs `body` on the owner's queue and returns its result.
    func run<T: Sendable>(_ body: @escaping @Sendable (SerialConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body(self) }) }
        }
    }

    /// Runs `body` on the owner's queue without waiting for it.
    func enqueue(_ body: @escaping @Sendable (SerialConnection) -> Void) {
        queue.async { body(self) }
    }

    /// Runs `body` on the owner's queue once `delay` has passed, without waiting for it.
    func enqueue(after delay: DispatchTimeInterval, _ body: @escaping @Sendable (SerialConnection) -> Void) {
        queue.asyncAfter(deadline: .now() + delay) { body(self) }
    }

    /// Runs `body` on the owner's queue, blocking the caller (start-up only).
    func runBlocking<T>(_ body: (SerialConnection) throws -> T) throws -> T {
        try queue.sync { try body(self) }
    }

    /// Runs statements that return no rows (on the owner's queue).
    func execute(_ sql: String) throws {
        try connection.execute(sql)
    }

    /// Runs a cached statement with `values`, collecting one value per row (on the owner's queue).
    func query<T>(_ sql: String, _ values: [SQLiteStatement.Value] = [], row: (SQLiteStatement) throws -> T) throws -> [T] {
        let statement = try cached(sql)
        defer { statement.reset() }
        try statement.bind(values)
        var rows: [T] = []
        while try statement.step() { rows.append(try row(statement)) }
        return rows
    }

    /// Runs a cached statement that returns no rows (on the owner's queue).
    func run(_ sql: String, _ values: [SQLiteStatement.Value] = []) throws {
        let statement = try cached(sql)
        defer { statement.reset() }
        try statement.bind(values).run()
    }

    /// Runs `body` in a transaction (on the owner's queue).
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try connection.transaction(body)
    }

    private func cached(_ sql: String) throws -> SQLiteStatement {
        if let statement = statements[sql] { return statement }
        let statement = try connection.prepare(sql)
        statements[sql] = statement
        return statement
    }
}
