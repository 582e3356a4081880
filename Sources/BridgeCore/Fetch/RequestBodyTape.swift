/// A request body that arrives as binary frames, kept as it is read (up to a bound) so that a 307
/// or 308 redirect can send it again, as a browser resends a body it holds whole.
///
/// Each hop reads the body from the start through its own cursor: from what is kept, then from
/// the client. A hop that a redirect superseded may still be reading when the next one starts;
/// both wait on the same read from the client, so no chunk is lost or read twice.
actor RequestBodyTape {
    /// The most bytes kept for a replay: a redirect of a longer body fails, as a browser's
    /// redirect of a streamed body does.
    static let replayLimit = 1 << 20

    private let channel: RequestBodyChannel
    private let limit: Int
    private var chunks: [[UInt8]] = []
    private var kept = 0
    private var ended = false
    private var pulling: Task<[UInt8]?, any Error>?
    /// True once the body passed `limit`: what was kept is dropped and a replay is refused.
    private(set) var overflowed = false

    init(channel: RequestBodyChannel, limit: Int = RequestBodyTape.replayLimit) {
        self.channel = channel
        self.limit = limit
    }

    /// The chunk at `index` of the body, read from the client when it is not kept yet; nil after
    /// the last one. It throws what the body's channel throws (a cancelled post, a lost connection).
    func chunk(at index: Int) async throws -> [UInt8]? {
        while index >= chunks.count {
            if ended { return nil }
            let task: Task<[UInt8]?, any Error>
            if let pulling {
                task = pulling
            } else {
                let channel = self.channel
                task = Task { try await channel.next() }
                pulling = task
            }
            let result = try await withTaskCancellationHandler {
                try await task.value
            } onCancel: {
                task.cancel()
            }
            // The first reader back from the read records it; the others find it recorded.
            guard pulling == task else { continue }
            pulling = nil
            guard let result else {
                ended = true
                return index < chunks.count ? chunks[index] : nil
            }
            kept += result.count
            if !overflowed, kept > limit {
                overflowed = true
                chunks = chunks.map { _ in [] }
            }
            chunks.append(overflowed ? [] : result)
            if index == chunks.count - 1 { return result }
        }
        return chunks[index]
    }
}
