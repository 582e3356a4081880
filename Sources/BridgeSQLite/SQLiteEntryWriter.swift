import BridgeCore
import Foundation
import Synchronization

/// Writes one entry for `SQLiteCacheStore`: in memory up to the inline threshold, then to a
/// body file; the row that makes the entry visible is inserted only at `commit()`.
///
/// A body file is written on the store's `BodyFileQueue`, not by the caller: each chunk is
/// kept as it is (the frame that is being sent, retained, or the array) and the caller goes on
/// delivering it; the chunks are handed to the queue in batches of `fileBatchBytes` (and the
/// rest at `commit()`), which copies them into the page cache and updates the checksum. One
/// hand-over per batch, not per chunk: each hand-over to an idle queue wakes a thread, and on
/// two cores those wakes, not the copy, were what storing a 1 MiB body cost the delivery
/// (docs/BENCHMARKS.md, "1 MiB, settled").
/// `commit()` waits for the queue to have written every chunk, then inserts the row with the
/// file's length and checksum; a write that failed (a full disk) makes the entry a discard.
final class SQLiteEntryWriter: CacheEntryWriter {
    private struct State {
        var buffer: [UInt8] = []
        /// Whether the body goes to a file (it is, or is announced, over the inline threshold).
        var toFile = false
        var fileName: String?
        /// Chunks for the file not yet handed to the queue (the first may be the inline buffer).
        var held: [HeldBytes] = []
        var heldBytes = 0
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
        enum Step { case buffered, refused, held, file(name: String, batch: [HeldBytes], bytes: Int) }
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
            if !state.buffer.isEmpty {
                state.held.append(.array(state.buffer))
                state.heldBytes += state.buffer.count
                state.buffer = []
            }
            state.held.append(bytes)
            state.heldBytes += bytes.count
            guard state.heldBytes >= store.configuration.fileBatchBytes else { return .held }
            defer { (state.held, state.heldBytes) = ([], 0) }
            return .file(name: name, batch: state.held, bytes: state.heldBytes)
        }
        switch step {
        case .buffered, .held:
            return true
        case .refused:
            await discard()
            return false
        case .file(let name, let batch, let bytes):
            guard !writeFailed.load(ordering: .acquiring) else {
                await discard()
                return false
            }
            await store.files.write(bytes) { self.writeToFile(name: name, batch) }
            return true
        }
    }

    /// On the file queue: creates the file at the first batch, writes, updates the checksum.
    private func writeToFile(name: String, _ batch: [HeldBytes]) {
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
                for bytes in batch {
                    try bytes.withBytes { raw in
                        try writeAll(raw, to: file.descriptor)
                        file.checksum.update(raw)
                    }
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
        let taken: (inline: [UInt8]?, file: String?, size: Int, batch: [HeldBytes], batchBytes: Int)? = state.locked { state in
            guard !state.abandoned else { return nil }
            state.abandoned = true  // Nothing more may be written or discarded.
            state.committing = true
            defer { (state.held, state.heldBytes) = ([], 0) }
            if state.toFile, let name = state.fileName { return (nil, name, state.size, state.held, state.heldBytes) }
            return (state.buffer, nil, state.size, [], 0)
        }
        guard let taken else { return false }
        if let name = taken.file {
            // The last batch, then the close right behind it (the queue is busy by then: no
            // second wake).
            if !taken.batch.isEmpty {
                await store.files.write(taken.batchBytes) { self.writeToFile(name: name, taken.batch) }
            }
            // Not fsynced, as browsers' disk caches do not: the row keeps the file's length and
            // checksum, and a file that does not match them when read (the machine went down
            // before the kernel wrote it all) is a miss that deletes the entry. A process killed
            // mid-write loses nothing the kernel has. Queued after the last chunk, so every
            // chunk is written (or failed) by then.
            //
            // One hop: the file queue closes the file and hands the insert straight to the
            // writer's queue, which resumes the commit (not back to the caller's thread between).
            guard let writer = store.writer else { return false }  // Never: makeWriter needs one.
            let (store, entry, size) = (self.store, self.entry, taken.size)
            return await withCheckedContinuation { continuation in
                store.files.enqueue {
                    let written: Int64? = self.file.locked { file in
                        defer { file.descriptor = -1 }
                        let closed = file.descriptor >= 0 && close(file.descriptor) == 0
                        return file.failure == nil && closed ? file.checksum.stored : nil
                    }
                    guard let written else {
                        try? FileManager.default.removeItem(atPath: store.bodiesPath + "/" + name)
                        continuation.resume(returning: false)
                        return
                    }
                    writer.enqueue { connection in
                        continuation.resume(returning: store.insert(entry, inline: nil, file: name, size: size, checksum: written, on: connection))
                    }
                }
            }
        }
        return await store.insert(entry, inline: taken.inline, file: nil, size: taken.size)
    }

    func discard() async {
        let name: String? = state.locked { state in
            guard !state.committing else { return nil }
            state.abandoned = true
            state.buffer = []
            (state.held, state.heldBytes) = ([], 0)
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
