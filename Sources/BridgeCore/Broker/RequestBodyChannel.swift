import Synchronization

/// The request body of one post, arriving as binary frames and read by its handler.
///
/// It buffers what the handler has not read yet; past the high-water mark it asks the
/// connection to stop reading from the client until the handler catches up.
final class RequestBodyChannel: Sendable {
    private weak let connection: BrokerConnection?
    private let highWater: Int
    private let state = Mutex(State())

    struct State {
        var chunks: [[UInt8]] = []
        var head = 0
        var buffered = 0
        var ended = false
        var failure: BridgeError?
        var waiter: CheckedContinuation<Void, Never>?
        var paused = false
    }

    init(connection: BrokerConnection, highWater: Int) {
        self.connection = connection
        self.highWater = highWater
    }

    func append(_ bytes: [UInt8], isEnd: Bool) {
        let (waiter, pause): (CheckedContinuation<Void, Never>?, Bool) = state.locked { state in
            guard !state.ended, state.failure == nil else { return (nil, false) }
            if !bytes.isEmpty {
                state.chunks.append(bytes)
                state.buffered += bytes.count
            }
            state.ended = isEnd
            var pause = false
            if state.buffered > highWater, !state.paused {
                state.paused = true
                pause = true
            }
            defer { state.waiter = nil }
            return (state.waiter, pause)
        }
        if pause { connection?.bodyPressureChanged(over: true) }
        waiter?.resume()
    }

    func fail(_ error: BridgeError) {
        let waiter: CheckedContinuation<Void, Never>? = state.locked { state in
            if state.failure == nil, !state.ended { state.failure = error }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Clears the paused mark when the post ends; true when it was set.
    func releaseIfPaused() -> Bool {
        state.locked { state in
            defer { state.paused = false }
            return state.paused
        }
    }

    /// The next chunk, or nil at the end of the body.
    func next() async throws -> [UInt8]? {
        while true {
            enum Step { case chunk([UInt8], resume: Bool), end, failed(BridgeError), wait }
            let step: Step = state.locked { state in
                if state.head < state.chunks.count {
                    let chunk = state.chunks[state.head]
                    state.chunks[state.head] = []
                    state.head += 1
                    if state.head > 64, state.head * 2 > state.chunks.count {
                        state.chunks.removeFirst(state.head)
                        state.head = 0
                    }
                    state.buffered -= chunk.count
                    var resume = false
                    if state.paused, state.buffered <= highWater / 4 {
                        state.paused = false
                        resume = true
                    }
                    return .chunk(chunk, resume: resume)
                }
                if let failure = state.failure { return .failed(failure) }
                if state.ended { return .end }
                return .wait
            }
            switch step {
            case .chunk(let chunk, let resume):
                if resume { connection?.bodyPressureChanged(over: false) }
                return chunk
            case .end: return nil
            case .failed(let error): throw error
            case .wait:
                try Task.checkCancellation()
                await withTaskCancellationHandler {
                    await withCheckedContinuation { continuation in
                        let resumeNow = state.locked { state in
                            if state.head < state.chunks.count || state.ended || state.failure != nil {
                                return true
                            }
                            state.waiter = continuation
                            return false
                        }
                        if resumeNow { continuation.resume() }
                    }
                } onCancel: {
                    self.fail(BridgeError(.cancelled, "the post was cancelled"))
                }
            }
        }
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
