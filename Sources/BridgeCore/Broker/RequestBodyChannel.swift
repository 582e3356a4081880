import Synchronization

/// The request body of one post, arriving as binary frames and read by its handler.
///
/// It buffers what the handler has not read yet (`ChunkChannel`); past the high-water mark it
/// asks the connection to stop reading from the client until the handler has taken the buffer
/// down to a quarter of it.
final class RequestBodyChannel: Sendable {
    private let channel: ChunkChannel

    init(connection: BrokerConnection, highWater: Int) {
        channel = ChunkChannel(highWater: highWater, lowWater: highWater / 4) { [weak connection] over in
            connection?.bodyPressureChanged(over: over)
        }
    }

    func append(_ bytes: [UInt8], isEnd: Bool) {
        channel.append(.bytes(bytes), isEnd: isEnd)
    }

    func fail(_ error: BridgeError) {
        channel.fail(error)
    }

    /// Clears the paused mark when the post ends; true when it was set.
    func releaseIfPaused() -> Bool {
        channel.releaseIfPaused()
    }

    /// The next chunk, or nil at the end of the body.
    func next() async throws -> [UInt8]? {
        try await channel.next { [self] in fail(BridgeError(.cancelled, "the post was cancelled")) }?.bytes
    }
}

/// A post's request body as an async sequence of byte chunks.
public struct RequestBodyStream: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    let channel: RequestBodyChannel

    /// Iterates the chunks; it throws `BridgeError` `cancelled` when the post or connection ends.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let channel: RequestBodyChannel
        public mutating func next() async throws -> [UInt8]? { try await channel.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(channel: channel) }
}
