import BridgeCore
import Foundation
import Synchronization

/// Writes one entry for `SQLiteCacheStore`: in memory up to the inline threshold, then to a
/// body file; the row that makes the entry visible is inserted only at `commit()`.
final class SQLiteEntryWriter: CacheEntryWriter {
    private struct State {
        var buffer: [UInt8] = []
        var file: FileHandle?
        var fileName: String?
        var size = 0
        var abandoned = false
        /// `commit()` owns the file from here on; `discard()` leaves it alone.
        var committing = false
    }

    let store: SQLiteCacheStore
    let entry: CachedResponse
    private let state = Mutex(State())

    init(store: SQLiteCacheStore, entry: CachedResponse) {
        self.store = store
        self.entry = entry
    }

    func write(_ chunk: [UInt8]) async -> Bool {
        let problem: (any Error)? = state.withLock { state in
            guard !state.abandoned else { return CancellationError() }
            state.size += chunk.count
            guard state.size <= store.maximumEntryBytes else { return CancellationError() }
            do {
                if state.file == nil, state.buffer.count + chunk.count > store.configuration.inlineThreshold {
                    let name = UUID().uuidString.lowercased()
                    let path = store.bodiesPath + "/" + name
                    guard FileManager.default.createFile(atPath: path, contents: nil),
                          let handle = FileHandle(forWritingAtPath: path)
                    else { throw CocoaError(.fileWriteUnknown) }
                    (state.file, state.fileName) = (handle, name)
                    try handle.write(contentsOf: state.buffer)
                    state.buffer = []
                }
                if let file = state.file { try file.write(contentsOf: chunk) } else { state.buffer.append(contentsOf: chunk) }
                return nil
            } catch {
                return error
            }
        }
        guard let problem else { return true }
        if !(problem is CancellationError) { store.failed(problem, while: "writing a body of \(entry.url)") }
        await discard()
        return false
    }

    func commit() async -> Bool {
        let taken: (inline: [UInt8]?, handle: FileHandle?, file: String?, size: Int)? = state.withLock { state in
            guard !state.abandoned else { return nil }
            state.abandoned = true  // Nothing more may be written or discarded.
            state.committing = true
            if let file = state.file { return (nil, file, state.fileName, state.size) }
            return (state.buffer, nil, nil, state.size)
        }
        guard let taken else { return false }
        if let handle = taken.handle {
            // On disk before the row points at it, so no row ever names a torn file. fsync blocks
            // for milliseconds: not on the cooperative pool, whose two threads here also deliver
            // every response.
            let synced = await withCheckedContinuation { continuation in
                Self.syncQueue.async {
                    continuation.resume(returning: (try? handle.synchronize()) != nil && (try? handle.close()) != nil)
                }
            }
            state.withLock { $0.file = nil }  // Closed either way.
            guard synced else {
                if let name = taken.file { try? FileManager.default.removeItem(atPath: store.bodiesPath + "/" + name) }
                return false
            }
        }
        return await store.insert(entry, inline: taken.inline, file: taken.file, size: taken.size)
    }

    /// Where body files are flushed to disk before their rows are inserted.
    private static let syncQueue = DispatchQueue(label: "bridge.cache.sync")

    func discard() async {
        let name: String? = state.withLock { state in
            guard !state.committing else { return nil }
            state.abandoned = true
            state.buffer = []
            try? state.file?.close()
            state.file = nil
            defer { state.fileName = nil }
            return state.fileName
        }
        if let name { try? FileManager.default.removeItem(atPath: store.bodiesPath + "/" + name) }
    }
}
