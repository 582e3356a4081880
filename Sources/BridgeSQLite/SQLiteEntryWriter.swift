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
        /// Of what went to the file: kept in the row, checked when the file is read.
        var checksum = BodyChecksum()
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
        let problem = chunk.withUnsafeBytes { append($0) }
        return await settle(problem)
    }

    /// Writes the frame's bytes straight from its memory: no `[UInt8]` copy of every chunk of a
    /// body that is being stored and sent.
    func write(frame: FrameBuffer) async -> Bool {
        let problem = frame.withUnsafeBytes { append($0) }
        return await settle(problem)
    }

    /// Appends `bytes` to the buffer or the body file; the error that ends the entry, if any.
    private func append(_ bytes: UnsafeRawBufferPointer) -> (any Error)? {
        state.withLock { state in
            guard !state.abandoned else { return CancellationError() }
            state.size += bytes.count
            guard state.size <= store.maximumEntryBytes else { return CancellationError() }
            do {
                if state.file == nil, state.buffer.count + bytes.count > store.configuration.inlineThreshold {
                    let name = UUID().uuidString.lowercased()
                    // open(2) itself: FileManager.createFile writes an empty file atomically (a
                    // temporary file and a rename), two file creations where one will do.
                    let descriptor = open(store.bodiesPath + "/" + name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
                    guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                    let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
                    (state.file, state.fileName) = (handle, name)
                    try state.buffer.withUnsafeBytes { try writeAll($0, to: descriptor) }
                    state.checksum.update(state.buffer)
                    state.buffer = []
                }
                if let file = state.file {
                    try writeAll(bytes, to: file.fileDescriptor)
                    state.checksum.update(bytes)
                } else {
                    state.buffer.append(contentsOf: bytes)
                }
                return nil
            } catch {
                return error
            }
        }
    }

    /// True when the append went through; otherwise logs a real failure and drops the entry.
    private func settle(_ problem: (any Error)?) async -> Bool {
        guard let problem else { return true }
        if !(problem is CancellationError) { store.failed(problem, while: "writing a body of \(entry.url)") }
        await discard()
        return false
    }

    func commit() async -> Bool {
        let taken: (inline: [UInt8]?, handle: FileHandle?, file: String?, size: Int, checksum: Int64?)? = state.withLock { state in
            guard !state.abandoned else { return nil }
            state.abandoned = true  // Nothing more may be written or discarded.
            state.committing = true
            if let file = state.file { return (nil, file, state.fileName, state.size, state.checksum.stored) }
            return (state.buffer, nil, nil, state.size, nil)
        }
        guard let taken else { return false }
        if let handle = taken.handle {
            // Not fsynced, as browsers' disk caches do not: the row keeps the file's length and
            // checksum, and a file that does not match them when read (the machine went down
            // before the kernel wrote it all) is a miss that deletes the entry. A process killed
            // mid-write loses nothing the kernel has.
            let closed = (try? handle.close()) != nil
            state.withLock { $0.file = nil }  // Closed either way.
            guard closed else {
                if let name = taken.file { try? FileManager.default.removeItem(atPath: store.bodiesPath + "/" + name) }
                return false
            }
        }
        return await store.insert(entry, inline: taken.inline, file: taken.file, size: taken.size, checksum: taken.checksum)
    }

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

/// write(2) until every byte is out (a regular file takes all of them unless the disk is full),
/// retried on EINTR; no Foundation wrapper in between.
private func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) throws {
    var offset = 0
    while offset < bytes.count {
        let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
        if written < 0 {
            if errno == EINTR { continue }
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        offset += written
    }
}
