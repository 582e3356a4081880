import BridgeCore
import Foundation
import Synchronization

/// Writes one entry for `SQLiteCacheStore`: in memory up to the inline threshold, then to a
/// body file; the row that makes the entry visible is inserted only at `commit()`.
///
/// A body file is written on the store's `BodyFileQueue`, not by the caller: each chunk is
/// handed over as it is (the frame that is being sent, retained, or the array) and the caller
/// goes on delivering it while the queue copies it into the page cache and updates the checksum.
/// `commit()` waits for the queue to have written every chunk, then inserts the row with the
/// file's length and checksum; a write that failed (a full disk) makes the entry a discard.
final class SQLiteEntryWriter: CacheEntryWriter {
    private struct State {
        var buffer: [UInt8] = []
        /// Whether the body goes to a file (it is, or is announced, over the inline threshold).
        var toFile = false
        var fileName: String?
        var size = 0
        var abandoned = false
        /// `commit()` owns the file from here on; `discard()` leaves it alone.
        var committing = false
    }

    /// What only the file queue touches (a lock for the compiler; never contended).
    private struct FileState {
        var descriptor: Int32 = -1
        /// Of what went to the file: kept in the row, checked when the file is read.
        var checksum = BodyChecksum()
        var failure: (any Error)?
        /// Discarded: chunks still queued are not written.
        var dropped = false
    }

    let store: SQLiteCacheStore
    let entry: CachedResponse
    private let state: Mutex<State>
    private let file = Mutex(FileState())
    /// Set by the file queue when a write failed; the producer reads it without taking `file`,
    /// which the queue holds through each `write(2)` (waiting for it would put the write back on
    /// the delivery's path).
    private let writeFailed = Atomic(false)

    init(store: SQLiteCacheStore, entry: CachedResponse, expectedLength: Int? = nil) {
        self.store = store
        self.entry = entry
        // A body announced over the inline threshold goes to its file from the first chunk,
        // without being gathered in memory first.
        state = Mutex(State(toFile: (expectedLength ?? 0) > store.configuration.inlineThreshold))
    }

    func write(_ chunk: [UInt8]) async -> Bool {
        await append(.array(chunk))
    }

    /// Keeps the frame (no copy) until the file queue has written its bytes; the transport
    /// leaves a frame's bytes as they are (`ConnectionSink.largestIntactFrame`).
    func write(frame: FrameBuffer) async -> Bool {
        await append(frame.withUnsafeBytes { .frame(frame, $0.baseAddress, $0.count) })
    }

    /// Adds `bytes` to the buffer or queues them for the body file; false when the entry is
    /// over (abandoned, over the size limit, a failed file write).
    private func append(_ bytes: HeldBytes) async -> Bool {
        enum Step { case buffered, refused, file(name: String, first: [UInt8]) }
        let step = state.locked { state -> Step in
            guard !state.abandoned else { return .refused }
            state.size += bytes.count
            guard state.size <= store.maximumEntryBytes else { return .refused }
            if !state.toFile, state.buffer.count + bytes.count <= store.configuration.inlineThreshold {
                bytes.withBytes { state.buffer.append(contentsOf: $0) }
                return .buffered
            }
            state.toFile = true
            let name = state.fileName ?? BodyFileNames.shared.next()
            state.fileName = name
            defer { state.buffer = [] }
            return .file(name: name, first: state.buffer)
        }
        switch step {
        case .buffered:
            return true
        case .refused:
            await discard()
            return false
        case .file(let name, let first):
            guard !writeFailed.load(ordering: .acquiring) else {
                await discard()
                return false
            }
            await store.files.write(first.count + bytes.count) { self.writeToFile(name: name, first: first, bytes) }
            return true
        }
    }

    /// On the file queue: creates the file at the first chunk, writes, updates the checksum.
    private func writeToFile(name: String, first: [UInt8], _ bytes: HeldBytes) {
        let failure: (any Error)? = file.locked { file in
            guard !file.dropped, file.failure == nil else { return nil }
            do {
                if file.descriptor < 0 {
                    // open(2) itself: FileManager.createFile writes an empty file atomically (a
                    // temporary file and a rename), two file creations where one will do.
                    let descriptor = open(store.bodiesPath + "/" + name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
                    guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                    file.descriptor = descriptor
                }
                if !first.isEmpty {
                    try first.withUnsafeBytes { try writeAll($0, to: file.descriptor) }
                    file.checksum.update(first)
                }
                try bytes.withBytes { raw in
                    try writeAll(raw, to: file.descriptor)
                    file.checksum.update(raw)
                }
                return nil
            } catch {
                file.failure = error
                writeFailed.store(true, ordering: .releasing)
                return error
            }
        }
        if let failure { store.failed(failure, while: "writing a body of \(entry.url)") }
    }

    func commit() async -> Bool {
        let taken: (inline: [UInt8]?, file: String?, size: Int)? = state.locked { state in
            guard !state.abandoned else { return nil }
            state.abandoned = true  // Nothing more may be written or discarded.
            state.committing = true
            if state.toFile, let name = state.fileName { return (nil, name, state.size) }
            return (state.buffer, nil, state.size)
        }
        guard let taken else { return false }
        let (store, entry, size) = (self.store, self.entry, taken.size)
        return await withCheckedContinuation { continuation in
            let done: @Sendable (Bool) -> Void = { continuation.resume(returning: $0) }
            guard let name = taken.file else {
                return store.queueInsert(PendingInsert(entry: entry, inline: taken.inline, file: nil, size: size, checksum: nil, done: done))
            }
            // Not fsynced, as browsers' disk caches do not: the row keeps the file's length and
            // checksum, and a file that does not match them when read (the machine went down
            // before the kernel wrote it all) is a miss that deletes the entry. A process killed
            // mid-write loses nothing the kernel has. Queued after the last chunk, so every chunk
            // is written (or failed) by then; the file queue closes the file and queues the insert
            // for the writer's queue, which resumes the commit (not back to the caller's thread
            // between).
            store.files.enqueue {
                let written: Int64? = self.file.locked { file in
                    defer { file.descriptor = -1 }
                    let closed = file.descriptor >= 0 && close(file.descriptor) == 0
                    return file.failure == nil && closed ? file.checksum.stored : nil
                }
                guard let written else {
                    try? FileManager.default.removeItem(atPath: store.bodiesPath + "/" + name)
                    return done(false)
                }
                store.queueInsert(PendingInsert(entry: entry, inline: nil, file: name, size: size, checksum: written, done: done))
            }
        }
    }

    func discard() async {
        let name: String? = state.locked { state in
            guard !state.committing else { return nil }
            state.abandoned = true
            state.buffer = []
            defer { state.fileName = nil }
            return state.fileName
        }
        guard let name else { return }
        // After the chunks already queued: none is written from here on, and the file goes.
        await store.files.run {
            self.file.locked { file in
                file.dropped = true
                if file.descriptor >= 0 { close(file.descriptor) }
                file.descriptor = -1
            }
            try? FileManager.default.removeItem(atPath: self.store.bodiesPath + "/" + name)
        }
    }
}

/// A chunk handed to the file queue without a copy: a frame kept alive with the place and size
/// its payload had when it was handed over (the frame's header is put in front of it later, on
/// another thread), or an array.
private enum HeldBytes: @unchecked Sendable {
    case frame(FrameBuffer, UnsafeRawPointer?, Int)
    case array([UInt8])

    var count: Int {
        switch self {
        case .frame(_, _, let count): return count
        case .array(let bytes): return bytes.count
        }
    }

    func withBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        switch self {
        case .frame(let frame, let start, let count):
            return try withExtendedLifetime(frame) { try body(UnsafeRawBufferPointer(start: start, count: count)) }
        case .array(let bytes):
            return try bytes.withUnsafeBytes(body)
        }
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
