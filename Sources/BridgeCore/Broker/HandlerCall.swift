/// One post, as its handler sees it: the body, and the ways to answer before the reply.
public struct HandlerCall: Sendable {
    /// The handler name the post named.
    public let name: String
    /// The post's id; nil for a fire-and-forget post, whose events go nowhere.
    public let id: Int?
    /// The post's body (`null` when it had none).
    public let body: JSONValue
    /// The connection the post came on.
    public let connection: BrokerConnection
    let entry: PostEntry

    init(name: String, id: Int?, body: JSONValue, connection: BrokerConnection, entry: PostEntry) {
        self.name = name
        self.id = id
        self.body = body
        self.connection = connection
        self.entry = entry
    }

    /// Keeps what `ImmediateBridgeHandler.handleImmediately` worked out (a parsed request) for
    /// `handle`, when it returns nil: set on the connection's thread before the post's task
    /// starts, read in that task.
    func keepForHandle(_ value: any Sendable) { entry.prepared = value }

    /// What `handleImmediately` kept with `keepForHandle`, if anything.
    var keptForHandle: (any Sendable)? { entry.prepared }

    /// Whether the post was cancelled or its connection closed.
    public var isCancelled: Bool { Task.isCancelled || entry.isCancelled }

    /// Runs `work`, failing with `timeout` if it has not finished within `duration`.
    ///
    /// The free function `withDeadline` runs the work and a timer as two child tasks; this runs
    /// the work in the post's own task and cancels that task from the broker's one dispatch
    /// timer (`DeadlineTimer`) when the time is up: no task is created, scheduled or woken, and
    /// no thread woken, per post when the work finishes in time.
    /// Only for a handler's `handle` as the broker runs it (its post's task).
    public func withDeadline<T>(_ duration: Duration, message: String, _ work: () async throws -> T) async throws -> T {
        let timer = connection.cancel(entry, after: duration)
        defer { connection.broker.deadlines.cancel(timer) }
        do {
            return try await work()
        } catch {
            if connection.deadlinePassed(entry) { throw BridgeError(.timeout, message) }
            throw error
        }
    }

    /// The broker's limits.
    public var configuration: BrokerConfiguration { connection.broker.configuration }

    /// Sends an event of this post; it waits while the connection's send queue is full.
    ///
    /// Returns false when the event could not be sent because the post is over (cancelled,
    /// fire-and-forget, or the connection closed).
    @discardableResult
    public func sendEvent(_ name: String, _ body: JSONValue) async -> Bool {
        guard let id else { return false }
        await connection.sink.waitUntilWritable()
        return connection.sendIfActive(entry, ServerMessage.event(id: id, name: name, body: body), binary: false)
    }

    /// Sends a chunk of a response body as binary frames of at most `binaryChunkBytes` each.
    ///
    /// Throws `cancelled` when the post is over, so a producer stops reading upstream.
    public func sendBodyChunk(_ bytes: some Collection<UInt8>, isEnd: Bool) async throws {
        guard let id else { throw BridgeError(.badRequest, "a binary response body needs a post id") }
        let limit = configuration.binaryChunkBytes
        var start = bytes.startIndex
        repeat {
            let end = bytes.index(start, offsetBy: limit, limitedBy: bytes.endIndex) ?? bytes.endIndex
            let last = end == bytes.endIndex
            // Built once, with the transport's headroom in front, and handed over without a copy.
            try await sendBodyFrameWhenWritable {
                BinaryFrameHeader(id: id, isEnd: isEnd && last).frame(payload: bytes[start..<end], headroom: connection.sink.frameHeadroom)
            }
            start = end
        } while start != bytes.endIndex
    }

    /// The free bytes a `FrameBuffer` needs in front of a body chunk for `sendBodyFrame`: the
    /// binary frame header and the transport's own headroom.
    public var bodyFrameHeadroom: Int { connection.sink.frameHeadroom + BinaryFrameHeader.size }

    /// The most payload bytes of a body frame for `sendBodyFrame`: `binaryChunkBytes`, or less
    /// when the transport would otherwise write into the payload once it has the frame
    /// (`ConnectionSink.largestIntactFrame`), so the payload can still be read after the send.
    public var bodyFramePayloadLimit: Int {
        max(1, min(configuration.binaryChunkBytes, connection.sink.largestIntactFrame - BinaryFrameHeader.size))
    }

    /// Sends a chunk of a response body that is already in `payload`, a frame with
    /// `bodyFrameHeadroom` free bytes in front and at most `binaryChunkBytes` of payload; with
    /// `isEnd`, the last. The header is written into the headroom, so the bytes are not copied
    /// again.
    ///
    /// Throws `cancelled` when the post is over, so a producer stops reading upstream.
    public func sendBodyFrame(_ payload: FrameBuffer, isEnd: Bool = false) async throws {
        guard let id else { throw BridgeError(.badRequest, "a binary response body needs a post id") }
        precondition(payload.headroom >= bodyFrameHeadroom && payload.count <= configuration.binaryChunkBytes, "body frame without room for its header")
        try await sendBodyFrameWhenWritable {
            let header = BinaryFrameHeader(id: id, isEnd: isEnd)
            payload.prepend(BinaryFrameHeader.size) { header.write(to: $0) }
            return payload
        }
    }

    /// Waits for room in the send queue, then sends the body frame `frame` makes (only then, so
    /// a waiting producer holds no finished frame); throws `cancelled` when the post is over.
    private func sendBodyFrameWhenWritable(_ frame: () -> FrameBuffer) async throws {
        await connection.sink.waitUntilWritable()
        guard connection.sendIfActive(entry, frame()) else {
            throw BridgeError(.cancelled, "the post was cancelled")
        }
    }

    /// Sends an event whose body is already compact JSON text, at once, without waiting for
    /// room in the send queue: for `ImmediateBridgeHandler`s, which send little.
    ///
    /// Returns false when the post is over or fire-and-forget.
    @discardableResult
    public func sendEventNow(_ name: StaticString, encodedBody: [UInt8]) -> Bool {
        guard let id else { return false }
        return connection.sendIfActive(entry, ServerMessage.event(id: id, name: name, encodedBody: encodedBody), binary: false)
    }

    /// Sends a whole response body as binary frames of at most `binaryChunkBytes`, the last one
    /// with END set, at once, without waiting for room in the send queue.
    ///
    /// Returns false when the post is over or fire-and-forget.
    @discardableResult
    public func sendBodyNow(_ bytes: [UInt8]) -> Bool {
        guard let id else { return false }
        let limit = configuration.binaryChunkBytes
        var start = 0
        repeat {
            let end = min(bytes.count, start + limit)
            let frame = BinaryFrameHeader(id: id, isEnd: end == bytes.count).frame(payload: bytes[start..<end], headroom: connection.sink.frameHeadroom)
            guard connection.sendIfActive(entry, frame) else { return false }
            start = end
        } while start < bytes.count
        return true
    }

    /// The flow-control window of this post's response body, with `initial` bytes of credit;
    /// the client's `credit` frames for the post add to it.
    public func creditWindow(initial: Int) -> CreditWindow {
        connection.creditWindow(for: entry, initial: initial)
    }

    /// The request body the client streams as binary frames for this post.
    public func requestBody() -> RequestBodyStream {
        RequestBodyStream(channel: connection.bodyChannel(for: entry))
    }
}
