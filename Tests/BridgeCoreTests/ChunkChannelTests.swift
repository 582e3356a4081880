import BridgeCore
import Synchronization
import Testing

/// `ChunkChannel`: chunks in order, cut to the reader's limit, frames passed on as they are, and
/// the producer paused past the high-water mark and let go at the low one.
@Suite struct ChunkChannelTests {
    func frame(_ bytes: [UInt8], headroom: Int = 16) -> FrameBuffer {
        FrameBuffer(headroom: headroom, copying: bytes)
    }

    @Test func framesUnderTheLimitPassOnAsTheyAreAndBytesAreCut() async throws {
        let channel = ChunkChannel(highWater: 1 << 20, lowWater: 1 << 18) { _ in }
        let sent = frame([1, 2, 3])
        channel.append(.frame(sent))
        channel.append(.bytes([4, 5, 6, 7, 8]))
        channel.append(.bytes([]), isEnd: true)

        guard case .frame(let first) = try await channel.next(limit: 4, onCancel: {}) else {
            Issue.record("a frame under the limit came out as bytes")
            return
        }
        #expect(first === sent)
        var rest: [[UInt8]] = []
        while let chunk = try await channel.next(limit: 2, onCancel: {}) { rest.append(chunk.bytes) }
        #expect(rest == [[4, 5], [6, 7], [8]])
    }

    @Test func aFrameOverTheLimitIsCutIntoBytesInOrder() async throws {
        let channel = ChunkChannel(highWater: 1 << 20, lowWater: 1 << 18) { _ in }
        channel.append(.frame(frame(Array(0..<10))), isEnd: true)
        var pieces: [[UInt8]] = []
        while let chunk = try await channel.next(limit: 4, onCancel: {}) {
            #expect(chunk.count <= 4)
            pieces.append(chunk.bytes)
        }
        #expect(pieces == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]])
    }

    @Test func theProducerIsPausedPastHighWaterAndResumedAtLowWater() async throws {
        let calls = Mutex<[Bool]>([])
        let channel = ChunkChannel(highWater: 8, lowWater: 4) { over in calls.withLock { $0.append(over) } }
        channel.append(.frame(frame(Array(repeating: 1, count: 6))))
        #expect(calls.withLock { $0 } == [])
        channel.append(.bytes(Array(repeating: 2, count: 6)))
        #expect(calls.withLock { $0 } == [true])
        #expect(channel.bufferedBytes == 12)
        _ = try await channel.next(onCancel: {})
        #expect(calls.withLock { $0 } == [true])  // 6 left: over the low mark still
        _ = try await channel.next(limit: 3, onCancel: {})
        #expect(calls.withLock { $0 } == [true, false])
        #expect(channel.bufferedBytes == 3)
    }

    @Test func aFailureComesAfterWhatWasBufferedBeforeIt() async throws {
        struct Broken: Error {}
        let channel = ChunkChannel(highWater: 1 << 20, lowWater: 1 << 18) { _ in }
        channel.append(.frame(frame([9])))
        channel.fail(Broken())
        #expect(try await channel.next(onCancel: {})?.bytes == [9])
        await #expect(throws: Broken.self) { try await channel.next(onCancel: {}) }
        #expect(channel.isOver)
    }
}
