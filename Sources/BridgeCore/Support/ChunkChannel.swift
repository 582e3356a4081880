import Synchronization

/// What a `ChunkChannel` carries: bytes, or a frame already holding them (a response body read
/// on the WebSocket service thread lands straight in the frames the reader sends).
public enum BodyChunk: Sendable {
    case bytes([UInt8])
    case frame(FrameBuffer)

    /// Bytes in the chunk.
    public var count: Int {
        switch self {
        case .bytes(let bytes): return bytes.count
        case .frame(let frame): return frame.count
        }
    }

    /// The bytes, copied out of a frame.
    public var bytes: [UInt8] {
        switch self {
        case .bytes(let bytes): return bytes
        case .frame(let frame): return frame.bytes
        }
    }

    /// The first `count` bytes, and the rest (as bytes: a producer makes frames no larger than
    /// the reader takes, so only bytes are cut in practice).
    func split(at count: Int) -> (head: BodyChunk, rest: BodyChunk) {
        switch self {
        case .bytes(let bytes):
            return (.bytes(Array(bytes[..<count])), .bytes(Array(bytes[count...])))
        case .frame(let frame):
            return frame.withUnsafeBytes { (.bytes(Array($0[..<count])), .bytes(Array($0[count...]))) }
        }
    }
}

/// Chunks handed from a producer to one reader, buffered between them.
///
/// Past `highWater` bytes buffered, `onPressure(true)` asks the producer to stop; once the reader
/// has taken the buffer down to `lowWater`, `onPressure(false)` lets it go on. A post's request
/// body (`RequestBodyChannel`) and a response body read on the WebSocket service thread
/// (`ServiceThreadUpstream`) both flow through one.
public final class ChunkChannel: Sendable {
    private let highWater: Int
    private let lowWater: Int
    private let onPressure: @Sendable (_ over: Bool) -> Void
    private let state = Mutex(State())

    private enum Step { case chunk(BodyChunk, resume: Bool), end, failed(any Error), wait }

    struct State {
        var chunks: [BodyChunk?] = []
        var head = 0
        var buffered = 0
        var ended = false
        var failure: (any Error)?
        var waiter: CheckedContinuation<Void, Never>?
        var paused = false
    }

    public init(highWater: Int, lowWater: Int, onPressure: @escaping @Sendable (_ over: Bool) -> Void) {
        self.highWater = highWater
        self.lowWater = lowWater
        self.onPressure = onPressure
    }

    /// Adds `bytes`, and the end when `isEnd`; nothing once the channel ended or failed.
    public func append(_ bytes: BodyChunk, isEnd: Bool = false) {
        let (waiter, pause): (CheckedContinuation<Void, Never>?, Bool) = state.locked { state in
            guard !state.ended, state.failure == nil else { return (nil, false) }
            if bytes.count > 0 {
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
        if pause { onPressure(true) }
        waiter?.resume()
    }

    /// Ends the channel with `error` (the first one; none after the end): the reader gets what
    /// was buffered before it, then the error.
    public func fail(_ error: any Error) {
        let waiter: CheckedContinuation<Void, Never>? = state.locked { state in
            if state.failure == nil, !state.ended { state.failure = error }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Whether the end or a failure has come.
    public var isOver: Bool { state.locked { $0.ended || $0.failure != nil } }

    /// Bytes buffered now.
    public var bufferedBytes: Int { state.locked { $0.buffered } }

    /// Clears the paused mark; true when it was set (the producer was asked to stop).
    public func releaseIfPaused() -> Bool {
        state.locked { state in
            defer { state.paused = false }
            return state.paused
        }
    }

    /// The next chunk, at most `limit` bytes of it, or nil at the end; throws the failure.
    /// `onCancel` runs when the reading task is cancelled while it waits.
    public func next(limit: Int = .max, onCancel: @escaping @Sendable () -> Void) async throws -> BodyChunk? {
        while true {
            let step: Step = state.locked { state in
                if state.head < state.chunks.count, var chunk = state.chunks[state.head] {
                    if chunk.count > limit {
                        let (head, rest) = chunk.split(at: limit)
                        state.chunks[state.head] = rest
                        chunk = head
                    } else {
                        state.chunks[state.head] = nil
                        state.head += 1
                        if state.head > 64, state.head * 2 > state.chunks.count {
                            state.chunks.removeFirst(state.head)
                            state.head = 0
                        }
                    }
                    state.buffered -= chunk.count
                    var resume = false
                    if state.paused, state.buffered <= lowWater {
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
                if resume { onPressure(false) }
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
                    onCancel()
                }
            }
        }
    }
}
