import Synchronization

/// Read-only uses of the database on the calling thread, through a few pooled connections.
///
/// A lookup of a URL the in-memory index does not know (every first request for it) used to hop
/// to the reader connection's dispatch queue and back: two thread wakes on the request's path
/// before it could go upstream, where the query itself takes a few microseconds. In WAL mode a
/// read needs no lock that a writer holds, so the caller runs it itself on a connection it takes
/// from this pool (one thread at a time per connection) and gives back. Each read starts its own
/// snapshot, so it sees every commit made before it, by this process or another one sharing the
/// database; nothing here can go stale. When every pooled connection is in use (more threads
/// reading at once than `limit`) or none can be opened, the caller falls back to the reader's
/// queue.
final class ReadConnections: Sendable {
    private struct State {
        var idle: [SerialConnection] = []
        var opened = 0
        /// Set when a connection could not be opened: the pool stops trying.
        var broken = false
    }

    private let path: String
    private let limit: Int
    private let state = Mutex(State())

    /// A pool over the database at `path` of at most `limit` connections, opened when needed.
    init(path: String, limit: Int) {
        self.path = path
        self.limit = limit
    }

    /// Runs `body` on the calling thread with a connection of the pool; nil when none is free
    /// (the caller then uses the reader's queue). Errors of `body` are thrown.
    func withConnection<T>(_ body: (SerialConnection) throws -> T) throws -> T? {
        let take = state.locked { state -> PooledTake in
            if let connection = state.idle.popLast() { return .idle(connection) }
            guard !state.broken, state.opened < limit else { return .none }
            state.opened += 1
            return .open
        }
        let connection: SerialConnection
        switch take {
        case .none:
            return nil
        case .idle(let idle):
            connection = idle
        case .open:
            guard let opened = try? SQLiteConnection(path: path) else {
                state.locked { state in
                    state.opened -= 1
                    state.broken = true
                }
                return nil
            }
            connection = SerialConnection(opened, label: "bridge.cache.read")
        }
        defer { state.locked { $0.idle.append(connection) } }
        return try body(connection)
    }

    /// Connections opened so far (for tests).
    var openedCount: Int { state.locked { $0.opened } }
}

private enum PooledTake { case idle(SerialConnection), open, none }
