import Dispatch
import Logging
import Synchronization

/// One client connection's protocol state: posts in flight, their tasks and request bodies.
///
/// The transport calls `receive(text:)`, `receive(binary:)` and `closed()` in the order frames
/// arrive; handlers run in tasks of their own and answer through the connection's sink.
public final class BrokerConnection: Sendable {
    let broker: Broker
    let sink: any ConnectionSink
    /// The handshake facts of this connection.
    public let info: ConnectionInfo
    /// Page-load progress of this connection's fetch groups.
    public let groups: GroupProgress
    /// This connection's number in the progress stream.
    public let number: Int
    /// What the page on this connection reported with `page.identity`.
    public let page = PageIdentity()
    private let state = Mutex(State())
    /// Where this connection's posts run (nil: the global executor).
    private let executor: (any TaskExecutor)?

    struct State {
        var posts: [Int: PostEntry] = [:]
        var anonymous: [UInt64: PostEntry] = [:]
        var nextToken: UInt64 = 0
        var closed = false
        var pausedBodies = 0
        var closeActions: [@Sendable () -> Void] = []
        var idleActions: [@Sendable () -> Void] = []
        var inFlight: Int { posts.count + anonymous.count }

        /// The idle actions to run now that a post ended, if it was the last one.
        mutating func takeIdleActions() -> [@Sendable () -> Void] {
            guard inFlight == 0, !idleActions.isEmpty else { return [] }
            defer { idleActions = [] }
            return idleActions
        }
    }

    init(broker: Broker, sink: any ConnectionSink, info: ConnectionInfo) {
        self.broker = broker
        self.sink = sink
        self.info = info
        self.number = broker.progress.nextConnectionNumber()
        self.executor = broker.taskExecutors.isEmpty ? nil : broker.taskExecutors[number % broker.taskExecutors.count]
        self.groups = GroupProgress(sink: sink, hub: broker.progress, connection: number)
    }

    /// Runs `action` once the connection is gone (at once if it already is): for work that
    /// outlives a post, such as a progress subscription.
    public func whenClosed(_ action: @escaping @Sendable () -> Void) {
        let closed = state.locked { state in
            if !state.closed { state.closeActions.append(action) }
            return state.closed
        }
        if closed { action() }
    }

    /// Runs `action` once no post is in flight (at once if none is), outside the connection's
    /// lock: an early request answers when its posts have (`EarlyPosts`).
    public func whenIdle(_ action: @escaping @Sendable () -> Void) {
        let idle = state.locked { state in
            if state.inFlight > 0 { state.idleActions.append(action) }
            return state.inFlight == 0
        }
        if idle { action() }
    }

    /// The number of posts in flight, for tests and stats.
    public var inFlightCount: Int { state.locked { $0.inFlight } }

    /// Handles one text frame from the client.
    public func receive(text bytes: UnsafeRawBufferPointer) {
        let message: ClientMessage
        do {
            message = try ClientMessage.decode(bytes)
        } catch {
            let failure = BridgeError(.badMessage, error.message)
            if let id = error.id, !state.locked({ $0.posts[id] != nil }) {
                sink.send(ServerMessage.reply(id: id, error: failure), binary: false)
            } else {
                sink.send(ServerMessage.error(failure), binary: false)
            }
            return
        }
        receive(message)
    }

    /// Handles one frame from the client that was decoded already (`EarlyPosts` checks each line
    /// of an early request by decoding it).
    func receive(_ message: ClientMessage) {
        switch message {
        case .post(let name, let id, let body): post(name: name, id: id, body: body)
        case .cancel(let id): cancel(id: id)
        case .credit(let id, let bytes): credit(id: id, bytes: bytes)
        }
    }

    /// Handles one text frame from the client, from a byte array.
    public func receive(text bytes: [UInt8]) {
        bytes.withUnsafeBytes { receive(text: $0) }
    }

    /// Handles one binary frame from the client: a chunk of a post's request body.
    public func receive(binary frame: UnsafeRawBufferPointer) {
        let header: BinaryFrameHeader
        do {
            header = try BinaryFrameHeader.parse(frame)
        } catch {
            sink.send(ServerMessage.error(error), binary: false)
            return
        }
        let payload = Array(UnsafeRawBufferPointer(rebasing: frame[BinaryFrameHeader.size...]))
        let channel: RequestBodyChannel? = state.locked { state in
            guard let entry = state.posts[header.id] else { return nil }
            if entry.body == nil { entry.body = RequestBodyChannel(connection: self, highWater: broker.configuration.requestBodyHighWater) }
            return entry.body
        }
        guard let channel else {
            sink.send(ServerMessage.error(BridgeError(.badMessage, "binary frame for id \(header.id), which is not a post in flight")), binary: false)
            return
        }
        channel.append(payload, isEnd: header.isEnd)
    }

    /// Handles one binary frame from the client, from a byte array.
    public func receive(binary frame: [UInt8]) {
        frame.withUnsafeBytes { receive(binary: $0) }
    }

    /// The connection is gone: every post in flight is cancelled and nothing more is sent.
    public func closed() {
        // Task and body are read under the lock that guards their writes.
        let (work, actions): ([(Task<Void, Never>?, RequestBodyChannel?)], [@Sendable () -> Void]) = state.locked { state in
            state.closed = true
            let all = Array(state.posts.values) + Array(state.anonymous.values)
            state.posts = [:]
            state.anonymous = [:]
            defer { state.closeActions = []; state.idleActions = [] }
            return (all.map { ($0.task, $0.body) }, state.closeActions + state.idleActions)
        }
        for action in actions { action() }
        for (task, body) in work {
            task?.cancel()
            body?.fail(BridgeError(.cancelled, "the connection closed"))
        }
    }

    private func post(name: String, id: Int?, body: JSONValue) {
        let configuration = broker.configuration
        guard let registered = broker.handler(named: name) else {
            fail(id: id, BridgeError(.unknownHandler, "no handler named \"\(name)\""))
            return
        }
        let (handler, meter) = (registered.handler, registered.meter)
        if let inline = registered.inline {
            guard let id else { _ = try? inline.handleInline(body); meter?.ended(nil); return }
            let duplicate = state.locked { $0.posts[id] != nil }
            if duplicate { return rejectDuplicate(id) }
            // Counted before the reply goes out, so a client that saw the reply sees the count.
            do {
                let reply = ServerMessage.reply(id: id, body: try inline.handleInline(body))
                meter?.ended(nil)
                sink.send(reply, binary: false)
            } catch {
                meter?.ended(error.code)
                sink.send(ServerMessage.reply(id: id, error: error), binary: false)
            }
            return
        }
        enum Admission { case admitted(PostEntry), duplicate, full, closed }
        let admission: Admission = state.locked { state in
            if state.closed { return .closed }
            if let id, state.posts[id] != nil { return .duplicate }
            if state.inFlight >= configuration.maxInFlight { return .full }
            state.nextToken += 1
            let entry = PostEntry(token: state.nextToken, id: id, meter: meter)
            if let id { state.posts[id] = entry } else { state.anonymous[entry.token] = entry }
            return .admitted(entry)
        }
        switch admission {
        case .closed: return
        case .duplicate: return rejectDuplicate(id ?? 0)
        case .full:
            fail(id: id, BridgeError(.tooManyInFlight, "this connection already has \(configuration.maxInFlight) posts in flight"))
            meter?.ended(.tooManyInFlight)
            return
        case .admitted(let entry):
            let call = HandlerCall(name: name, id: id, body: body, connection: self, entry: entry)
            // A post that can be answered at once (a fresh cache hit) needs no task.
            if let immediate = registered.immediate, let reply = immediate.handleImmediately(call) {
                return finish(entry, with: reply)
            }
            let task = Task(executorPreference: registered.nonBlocking ? executor : nil) { await self.run(handler, call: call, entry: entry) }
            let cancelledEarly = state.locked { _ in
                entry.task = task
                return entry.isCancelled || entry.deadlinePassed
            }
            if cancelledEarly { task.cancel() }
        }
    }

    private func run(_ handler: any BridgeHandler, call: HandlerCall, entry: PostEntry) async {
        let result: ImmediateReply
        do {
            result = .body(try await handler.handle(call))
        } catch let error as BridgeError {
            result = .failure(error)
        } catch is CancellationError {
            result = .failure(BridgeError(.cancelled, "the post was cancelled"))
        } catch {
            broker.logger.error("handler \(call.name) failed: \(String(describing: error))")
            result = .failure(BridgeError(.internal, "handler \"\(call.name)\" failed: \(String(describing: error))"))
        }
        finish(entry, with: result)
    }

    private func finish(_ entry: PostEntry, with result: ImmediateReply) {
        let (body, idle): (RequestBodyChannel?, [@Sendable () -> Void]) = state.locked { state in
            guard !entry.isCancelled else { return (nil, []) }
            if let id = entry.id {
                guard state.posts[id] === entry else { return (nil, []) }
                // Counted before the reply goes out, so a client that saw the reply sees the count.
                entry.meter?.ended(result.errorCode)
                state.posts[id] = nil
                switch result {
                case .body(let body): sink.send(ServerMessage.reply(id: id, body: body), binary: false)
                case .encodedBody(let body): sink.send(ServerMessage.reply(id: id, encodedBody: body), binary: false)
                case .failure(let error): sink.send(ServerMessage.reply(id: id, error: error), binary: false)
                case .wholeResponse(let frame): sink.send(framed: frame, binary: true)
                }
            } else {
                state.anonymous[entry.token] = nil
                entry.meter?.ended(result.errorCode)
                if case .failure(let error) = result {
                    sink.send(ServerMessage.error(error), binary: false)
                }
            }
            releasePause(of: entry, state: &state)
            return (entry.body, state.takeIdleActions())
        }
        // The post's request body ends with the post. Its frames are refused from now on, and a
        // reader still waiting for one would wait forever: AsyncHTTPClient pulls a streamed body
        // in a task of its own, which the handler's cancellation (a deadline) does not reach, so
        // every fetch of a streamed body that timed out kept that task, the request and its
        // buffers for the life of the broker (LeakSanitizer at the exit of the protocol fuzzer's
        // broker, issue #17). Cancelled posts and closed connections fail their bodies already.
        body?.fail(BridgeError(.cancelled, "the post ended"))
        for action in idle { action() }
    }

    /// Cancels `entry`'s task once `duration` has passed (see `HandlerCall.withDeadline`);
    /// `broker.deadlines.cancel` with the returned token first stops that.
    func cancel(_ entry: PostEntry, after duration: Duration) -> UInt64 {
        broker.deadlines.schedule(after: duration) { [weak self] in
            let task = self?.state.locked { _ -> Task<Void, Never>? in
                entry.deadlinePassed = true
                return entry.task
            }
            task?.cancel()
        }
    }

    /// Whether `entry`'s deadline passed.
    func deadlinePassed(_ entry: PostEntry) -> Bool {
        state.locked { _ in entry.deadlinePassed }
    }

    private func cancel(id: Int) {
        let work: (Task<Void, Never>?, RequestBodyChannel?, [@Sendable () -> Void])? = state.locked { state in
            guard let entry = state.posts.removeValue(forKey: id) else { return nil }
            entry.isCancelled = true
            entry.meter?.ended(.cancelled)
            // The reply goes out now, inside the lock, so no event of the post can follow it.
            sink.send(ServerMessage.reply(id: id, error: BridgeError(.cancelled, "the post was cancelled")), binary: false)
            releasePause(of: entry, state: &state)
            // Task and body are read under the lock that guards their writes.
            return (entry.task, entry.body, state.takeIdleActions())
        }
        work?.0?.cancel()
        work?.1?.fail(BridgeError(.cancelled, "the post was cancelled"))
        for action in work?.2 ?? [] { action() }
    }

    /// Credit for a post that ended, or that asked for no window, is ignored.
    private func credit(id: Int, bytes: Int) {
        let window = state.locked { $0.posts[id]?.credit }
        window?.grant(bytes)
    }

    /// The post's flow-control window, made with `initial` bytes of credit on first use.
    func creditWindow(for entry: PostEntry, initial: Int) -> CreditWindow {
        state.locked { _ in
            if entry.credit == nil { entry.credit = CreditWindow(initial: initial) }
            return entry.credit!
        }
    }

    private func rejectDuplicate(_ id: Int) {
        sink.send(
            ServerMessage.error(BridgeError(.duplicateID, "id \(id) is already in flight on this connection"), duplicateID: id),
            binary: false
        )
    }

    private func fail(id: Int?, _ error: BridgeError) {
        if let id {
            sink.send(ServerMessage.reply(id: id, error: error), binary: false)
        } else {
            sink.send(ServerMessage.error(error), binary: false)
        }
    }

    /// Sends a frame of `entry`'s post if the post is still live: atomically with cancellation,
    /// so nothing of a post follows its reply.
    func sendIfActive(_ entry: PostEntry, _ bytes: [UInt8], binary: Bool) -> Bool {
        state.locked { state in
            guard !entry.isCancelled, !state.closed else { return false }
            sink.send(bytes, binary: binary)
            return true
        }
    }

    /// `sendIfActive` for a frame built with the sink's headroom.
    func sendIfActive(_ entry: PostEntry, _ framed: FrameBuffer) -> Bool {
        state.locked { state in
            guard !entry.isCancelled, !state.closed else { return false }
            sink.send(framed: framed, binary: true)
            return true
        }
    }

    /// The post's request body, made on first use; already failed when the post or its
    /// connection is over, since no frame will come for it and `closed()` or `cancel` has already
    /// failed the bodies that existed (a body asked for after that waited forever: LeakSanitizer
    /// at the exit of the protocol fuzzer's broker, issue #17).
    func bodyChannel(for entry: PostEntry) -> RequestBodyChannel {
        state.locked { state in
            if entry.body == nil {
                let channel = RequestBodyChannel(connection: self, highWater: broker.configuration.requestBodyHighWater)
                if state.closed || entry.isCancelled { channel.fail(BridgeError(.cancelled, "the post is over")) }
                entry.body = channel
            }
            return entry.body!
        }
    }

    /// A request-body channel crossed (or dropped back under) its high-water mark.
    func bodyPressureChanged(over: Bool) {
        let change: Bool? = state.locked { state in
            state.pausedBodies += over ? 1 : -1
            if over, state.pausedBodies == 1 { return true }
            if !over, state.pausedBodies == 0 { return false }
            return nil
        }
        if let change { sink.pauseReading(change) }
    }

    private func releasePause(of entry: PostEntry, state: inout State) {
        guard let body = entry.body, body.releaseIfPaused() else { return }
        state.pausedBodies -= 1
        if state.pausedBodies == 0 { sink.pauseReading(false) }
    }
}

/// A post in flight. Mutable fields are guarded by the owning connection's lock.
final class PostEntry: @unchecked Sendable {
    let token: UInt64
    let id: Int?
    /// Where the post's outcome is counted, if metrics are on.
    let meter: (any PostMeter)?
    var task: Task<Void, Never>?
    var body: RequestBodyChannel?
    /// The response body's flow-control window, when the post asked for one.
    var credit: CreditWindow?
    var isCancelled = false
    /// Set when a deadline the handler set (`HandlerCall.withDeadline`) passed; its task is
    /// cancelled then.
    var deadlinePassed = false
    /// What an immediate handler kept for `handle` (`HandlerCall.keepForHandle`): written before
    /// the post's task is created, read only by that task.
    var prepared: (any Sendable)?

    init(token: UInt64, id: Int?, meter: (any PostMeter)? = nil) {
        self.token = token
        self.id = id
        self.meter = meter
    }
}
