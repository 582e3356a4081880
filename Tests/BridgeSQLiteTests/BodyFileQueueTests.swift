import BridgeCore
import Foundation
import Synchronization
import Testing
@testable import BridgeSQLite

/// Body files are written on the store's queue while the body is delivered; these hold the queue
/// up to see what the writer and the store do meanwhile.
struct BodyFileQueueTests {
    /// Blocks the store's file queue until `release()`: work queued after it waits.
    final class Gate: Sendable {
        let semaphore = DispatchSemaphore(value: 0)
        init(_ queue: BodyFileQueue) async {
            await queue.write(0) { [semaphore] in semaphore.wait() }
        }
        func release() { semaphore.signal() }
    }

    @Test func producersWaitWhileTheQueueHoldsItsLimit() async throws {
        let queue = BodyFileQueue(limit: 100)
        let gate = await Gate(queue)
        await queue.write(60) {}
        #expect(queue.queuedBytes == 60)
        let admitted = Atomic(false)
        let second = Task {
            await queue.write(60) {}
            admitted.store(true, ordering: .relaxed)
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(!admitted.load(ordering: .relaxed) && queue.queuedBytes == 60)
        gate.release()
        await second.value
        _ = await queue.run { 0 }
        #expect(queue.queuedBytes == 0)
        // A chunk larger than the limit still goes when nothing else is queued.
        await queue.write(1000) {}
        _ = await queue.run { 0 }
        #expect(queue.queuedBytes == 0)
    }

    @Test func anEntryIsCommittedOnlyOnceItsFileIsWritten() async throws {
        let directory = TemporaryDirectory()
        let cache = SQLiteCacheStore(configuration: configuration(directory))
        let body = pattern(1 << 20)
        let writer = try #require(await cache.makeWriter(for: entry("https://a.test/big"), expectedLength: body.count))
        let gate = await Gate(cache.files)
        for start in stride(from: 0, to: body.count, by: 64 * 1024) {
            // A frame as the delivery hands it over: the header goes in front of it afterwards.
            let frame = FrameBuffer(headroom: 32, copying: body[start..<start + 64 * 1024])
            #expect(await writer.write(frame: frame))
            frame.prepend(16) { $0.initializeMemory(as: UInt8.self, repeating: 0xEE) }
        }
        let commit = Task { await writer.commit() }
        try await Task.sleep(for: .milliseconds(100))
        #expect(await cache.entries(for: "https://a.test/big").isEmpty)
        gate.release()
        #expect(await commit.value)
        #expect(try await read(cache, "https://a.test/big") == body)
        #expect(cache.files.queuedBytes == 0)
    }

    @Test func aDiscardWhileChunksAreQueuedLeavesNoFile() async throws {
        let directory = TemporaryDirectory()
        let cache = SQLiteCacheStore(configuration: configuration(directory))
        let writer = try #require(await cache.makeWriter(for: entry("https://a.test/gone"), expectedLength: 1 << 20))
        let gate = await Gate(cache.files)
        #expect(await writer.write(pattern(300_000)))
        let discard = Task { await writer.discard() }
        gate.release()
        await discard.value
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/bodies").isEmpty)
        #expect(await cache.entries(for: "https://a.test/gone").isEmpty)
        #expect(!(await writer.commit()))
    }

    @Test func aFailedFileWriteDropsTheEntryAndKeepsTheStore() async throws {
        let directory = TemporaryDirectory()
        let logged = Mutex<[String]>([])
        let cache = SQLiteCacheStore(configuration: configuration(directory)) { message in logged.withLock { $0.append(message) } }
        let writer = try #require(await cache.makeWriter(for: entry("https://a.test/fails"), expectedLength: 1 << 20))
        // The body file cannot be created: its directory is gone.
        try FileManager.default.removeItem(atPath: directory.path + "/bodies")
        #expect(await writer.write(pattern(300_000)))
        _ = await cache.files.run { 0 }
        // The failure is known once the queue has met it: the next chunk is refused.
        #expect(!(await writer.write(pattern(1000))))
        #expect(!(await writer.commit()))
        #expect(await cache.entries(for: "https://a.test/fails").isEmpty)
        #expect(logged.withLock { $0.contains { $0.contains("writing a body of https://a.test/fails") } })
        try FileManager.default.createDirectory(atPath: directory.path + "/bodies", withIntermediateDirectories: true)
        #expect(await store(cache, entry("https://a.test/next"), pattern(300_000)))
        #expect(try await read(cache, "https://a.test/next") == pattern(300_000))
    }
}
