import BridgeCore
import CLibWebSockets
import Synchronization

/// One accepted WebSocket connection: the outbox other threads fill and the service thread
/// drains, one `lws_write` per writable callback.
final class WebSocketSession: ConnectionSink, @unchecked Sendable {
    /// Queued bytes above which `waitUntilWritable` suspends.
    static let highWater = 4 * 1024 * 1024
    /// Queued bytes below which suspended writers resume.
    static let lowWater = 1024 * 1024
    /// The most queued bytes whose wake of the service thread may wait for the end of the job
    /// that queued them (`WakeBatch`): a large body's frames start going out at once.
    static let deferredWakeBytes = 64 * 1024

    let id: UInt64
    let fragmentBytes: Int
    /// The client side: libwebsockets masks the payload in place.
    let masksFrames: Bool
    private weak var owner: SessionOwner?
    /// Where the bytes it sends are counted (a server's sessions), if anywhere.
    let traffic: TrafficCounters?
    private let shared = Mutex(Shared())

    // Service-thread state: only the service thread touches these.
    var wsi: OpaquePointer?
    var connection: BrokerConnection?
    var isEcho = false
    var receiving: [UInt8] = []
    var receivingBinary = false
    // True between the first and the last fragment of a message, even an empty first one.
    var receivingBinaryPending = false
    private var current: OutboundFrame?
    private var appliedPause = false

    struct Shared {
        var queue: [OutboundFrame] = []
        var head = 0
        var queuedBytes = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
        var close: (code: UInt16, reason: String)?
        var pause = false
        var serviceRequested = false
        // The wake for `serviceRequested` may be held for the end of the job that queued the
        // frame (`WakeBatch`).
        var wakeDeferred = false
        // The service thread has asked for a writable callback and will look at the queue
        // again: a frame queued meanwhile needs no wake-up.
        var writeScheduled = false
        var closed = false
    }

    struct OutboundFrame {
        // LWS_PRE bytes (at least) of headroom before the payload; nothing else refers to it.
        var buffer: FrameBuffer
        var binary: Bool
        var sent = 0
        /// The bytes it counts for in `queuedBytes` (a batch: those of the frames it joined).
        var queued: Int
        /// Whole WebSocket frames, headers included, written as they are (`joinedFrames`).
        var raw = false
        /// The payload bytes it carries, for the traffic counter (raw: without the headers).
        var payload: Int

        init(buffer: FrameBuffer, binary: Bool) {
            self.buffer = buffer
            self.binary = binary
            queued = buffer.count
            payload = buffer.count
        }
    }

    init(id: UInt64, owner: SessionOwner, fragmentBytes: Int, masksFrames: Bool = false, traffic: TrafficCounters? = nil) {
        self.traffic = traffic
        self.id = id
        self.owner = owner
        self.fragmentBytes = fragmentBytes
        self.masksFrames = masksFrames
    }

    // MARK: ConnectionSink, any thread

    var frameHeadroom: Int { bridge_lws_pre() }

    /// A frame sent as several fragments gets each later fragment's header written into the
    /// bytes before it, which are the frame's own; one sent whole, only into its headroom. A
    /// client's frames are masked in place: none stays intact.
    var largestIntactFrame: Int { masksFrames ? 0 : fragmentBytes }

    func send(_ bytes: [UInt8], binary: Bool) {
        enqueue(FrameBuffer(headroom: bridge_lws_pre(), copying: bytes), binary: binary)
    }

    func send(framed: FrameBuffer, binary: Bool) {
        let buffer = framed.headroom >= bridge_lws_pre() ? framed : framed.withUnsafeBytes { FrameBuffer(headroom: bridge_lws_pre(), copying: $0) }
        enqueue(buffer, binary: binary)
    }

    private func enqueue(_ buffer: FrameBuffer, binary: Bool) {
        guard let owner else { return }
        let onServiceThread = owner.loop.isServiceThread
        enum Wake { case none, now, deferrable }
        let wake: Wake? = shared.locked { state in
            guard !state.closed, state.close == nil else { return nil }
            state.queue.append(OutboundFrame(buffer: buffer, binary: binary))
            state.queuedBytes += buffer.count
            if onServiceThread || state.writeScheduled { return Wake.none }
            if state.serviceRequested {
                // A wake held for the end of a job is sent now once the bytes are many.
                guard state.wakeDeferred, state.queuedBytes > Self.deferredWakeBytes else { return Wake.none }
                state.wakeDeferred = false
                return .now
            }
            state.serviceRequested = true
            guard state.queuedBytes <= Self.deferredWakeBytes else { return .now }
            state.wakeDeferred = true
            return .deferrable
        }
        guard let wake else { return }
        if onServiceThread {
            service()
            return
        }
        switch wake {
        case .none: break
        case .now: owner.scheduleService(of: self)
        case .deferrable:
            // Within a task's job (`WakeBatch`) the wake waits for the job's end, so the frames
            // queued after this one (the body and the reply after a `response` event) go with
            // it; beyond `deferredWakeBytes` queued, the service thread is woken at once.
            if !WakeBatch.deferIfBatching({ owner.scheduleService(of: self) }) { owner.scheduleService(of: self) }
        }
    }

    var isWritable: Bool {
        shared.locked { $0.closed || $0.queuedBytes <= Self.highWater }
    }

    func waitUntilWritable() async {
        // Checked first without a continuation: `withCheckedContinuation` suspends the task even
        // when it is resumed at once, and the task then waits for a thread of the pool again,
        // for every event and body frame of every request.
        guard !isWritable else { return }
        await withCheckedContinuation { continuation in
            let ready = shared.locked { state -> Bool in
                if state.closed || state.queuedBytes <= Self.highWater { return true }
                state.waiters.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    func close(code: UInt16, reason: String) {
        let changed = shared.locked { state -> Bool in
            guard !state.closed, state.close == nil else { return false }
            state.close = (code, reason)
            return true
        }
        if changed { requestService() }
    }

    func pauseReading(_ paused: Bool) {
        shared.locked { $0.pause = paused }
        requestService()
    }

    private func requestService() {
        guard let owner else { return }
        if owner.loop.isServiceThread {
            service()
            return
        }
        let first = shared.locked { state -> Bool in
            defer { state.serviceRequested = true }
            return !state.serviceRequested
        }
        if first { owner.scheduleService(of: self) }
    }

    // MARK: service thread

    /// Applies pause requests and asks for a writable callback when there is something to send.
    func service() {
        guard let wsi else { return }
        let current = current
        let (pause, pending) = shared.locked { state -> (Bool, Bool) in
            state.serviceRequested = false
            state.wakeDeferred = false
            let pending = current != nil || state.head < state.queue.count || state.close != nil
            if pending { state.writeScheduled = true }
            return (state.pause, pending)
        }
        if pause != appliedPause {
            appliedPause = pause
            lws_rx_flow_control(wsi, pause ? 0 : 1)
        }
        if pending { lws_callback_on_writable(wsi) }
    }

    /// Bytes one writable callback may write before it yields to the other connections.
    static let writeBudget = 256 * 1024

    /// Writes what is queued, one fragment per `lws_write`, while the socket takes it (up to
    /// `writeBudget`); returns -1 when the connection must close now.
    ///
    /// A response is several frames (the `response` event, body frames, the reply) that are
    /// usually all queued by the time the service thread gets here. Writing them in one callback
    /// instead of one per callback saves a turn of the service loop (a poll and a callback) per
    /// frame; `lws_send_pipe_choked` is libwebsockets' check that another write will not block.
    func writable() -> Int32 {
        guard let wsi else { return -1 }
        var budget = Self.writeBudget
        while true {
            if current == nil {
                switch takeNext() {
                case .frames(let frames) where frames.count == 1: current = frames[0]
                case .frames(let frames) where !frames[0].buffer.joinable:
                    // Small frames one after the other (a response's event, body and reply):
                    // one write, one send, one wake of the client.
                    current = Self.joinedFrames(frames)
                case .frames(let frames):
                    // Copied outside the lock; the batch counts for the bytes its frames were queued with.
                    var batch = OutboundFrame(
                        buffer: BinaryFrameHeader.batchFrame(of: frames.map(\.buffer), headroom: bridge_lws_pre()), binary: true)
                    batch.queued = frames.reduce(0) { $0 + $1.queued }
                    current = batch
                case .close(let code, let reason):
                    bridge_lws_close_reason(wsi, Int32(code), reason)
                    return -1
                case .nothing: return 0
                }
            }
            guard var frame = current else { return 0 }
            let remaining = frame.buffer.count - frame.sent
            // Joined frames go in one write (they are at most `joinBytes`).
            let count = frame.raw ? remaining : min(remaining, fragmentBytes)
            let first = frame.sent == 0
            let final = count == remaining
            // The frame's memory is ours alone (no copy-on-write): lws writes its header into the
            // LWS_PRE bytes before the fragment, which are headroom or payload already sent.
            let start = frame.buffer.frameStart.assumingMemoryBound(to: UInt8.self) + frame.sent
            let written = frame.raw
                ? bridge_lws_write_raw(wsi, start, count) : bridge_lws_write(wsi, start, count, frame.binary ? 1 : 0, first ? 1 : 0, final ? 1 : 0)
            if written < 0 { return -1 }
            traffic?.sent.add(frame.raw ? frame.payload : count, ordering: .relaxed)
            frame.sent += count
            current = final ? nil : frame
            let sentFrame = final ? frame.queued : 0
            let (more, resume) = shared.locked { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                let more = !final || state.head < state.queue.count || state.close != nil
                state.writeScheduled = more
                guard final else { return (more, []) }
                state.queuedBytes -= sentFrame
                guard state.queuedBytes <= Self.lowWater, !state.waiters.isEmpty else { return (more, []) }
                defer { state.waiters = [] }
                return (more, state.waiters)
            }
            resume.forEach { $0.resume() }
            guard more else { return 0 }
            budget -= count
            if budget <= 0 || lws_send_pipe_choked(wsi) != 0 {
                lws_callback_on_writable(wsi)
                return 0
            }
        }
    }

    /// The most bytes of small frames written together in one `lws_write` (`joinedFrames`).
    static let joinBytes = 16 * 1024

    /// `frames` (a server's, unmasked, each whole) with their WebSocket headers (RFC 6455 5.2),
    /// in one buffer for one raw write: the client gets them in one segment, the broker makes
    /// one send instead of a send and a poll per frame. Copied outside the lock; they are small.
    static func joinedFrames(_ frames: [OutboundFrame]) -> OutboundFrame {
        let total = frames.reduce(0) { $0 + $1.buffer.count + (($1.buffer.count < 126) ? 2 : 4) }
        let joined = FrameBuffer(headroom: bridge_lws_pre(), capacity: total)
        for frame in frames {
            let count = frame.buffer.count
            joined.append(0x80 | (frame.binary ? 0x2 : 0x1))  // FIN, binary or text
            if count < 126 {
                joined.append(UInt8(count))
            } else {
                // joinBytes keeps every frame under 65536 bytes.
                joined.append(126)
                joined.append(UInt8(count >> 8))
                joined.append(UInt8(count & 0xFF))
            }
            frame.buffer.withUnsafeBytes { joined.append(contentsOf: $0) }
        }
        var outbound = OutboundFrame(buffer: joined, binary: true)
        outbound.raw = true
        outbound.queued = frames.reduce(0) { $0 + $1.queued }
        outbound.payload = frames.reduce(0) { $0 + $1.payload }
        return outbound
    }

    // Stands in for a frame already taken from the queue.
    private static let spent = FrameBuffer(headroom: 0, capacity: 0)

    /// The most bytes of whole responses joined into one batch message: the page takes a few
    /// messages instead of one per response, and the first response of a batch does not wait
    /// for more than this much behind it.
    static let batchBytes = 256 * 1024

    private enum Next { case frames([OutboundFrame]), close(UInt16, String), nothing }

    /// What the writable callback sends next: the frame at the queue's head (with the joinable
    /// whole responses queued right after it, up to `batchBytes`), else the close, else nothing
    /// (and no write is scheduled any more).
    private func takeNext() -> Next {
        shared.locked { state in
            if state.head < state.queue.count {
                let first = Self.take(&state)
                // Small frames queued one after the other (not whole responses, which join
                // below) go in one write on a server's connection, up to `joinBytes`.
                if !masksFrames, !first.buffer.joinable, first.buffer.count <= Self.joinBytes {
                    return .frames(Self.take(after: first, &state, upTo: Self.joinBytes) { !$0.buffer.joinable })
                }
                // Whole responses queued one after the other go as one batch message.
                if first.binary, first.buffer.joinable {
                    return .frames(Self.take(after: first, &state, upTo: Self.batchBytes) { $0.binary && $0.buffer.joinable })
                }
                return .frames([first])
            }
            if let close = state.close { return .close(close.code, close.reason) }
            state.writeScheduled = false
            return .nothing
        }
    }

    /// `first` and the frames at the queue's head after it, as long as each `joins` and their bytes
    /// together stay within `limit`.
    private static func take(
        after first: OutboundFrame, _ state: inout Shared, upTo limit: Int, where joins: (OutboundFrame) -> Bool
    ) -> [OutboundFrame] {
        var frames = [first]
        var bytes = first.buffer.count
        while state.head < state.queue.count, joins(state.queue[state.head]), bytes + state.queue[state.head].buffer.count <= limit {
            bytes += state.queue[state.head].buffer.count
            frames.append(take(&state))
        }
        return frames
    }

    /// Takes the frame at the queue's head.
    private static func take(_ state: inout Shared) -> OutboundFrame {
        let frame = state.queue[state.head]
        // Drop the queue's reference now: a producer that keeps the queue non-empty must not
        // keep every frame it ever sent alive.
        state.queue[state.head].buffer = spent
        state.head += 1
        if state.head == state.queue.count {
            state.queue.removeAll(keepingCapacity: true)
            state.head = 0
        } else if state.head >= 64, state.head * 2 >= state.queue.count {
            state.queue.removeFirst(state.head)
            state.head = 0
        }
        return frame
    }

    /// The connection is gone: drop the outbox and wake every waiting writer.
    func closed() {
        wsi = nil
        let waiters = shared.locked { state -> [CheckedContinuation<Void, Never>] in
            state.closed = true
            state.queue = []
            state.head = 0
            state.queuedBytes = 0
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
        connection?.closed()
        connection = nil
    }
}

/// What a session needs from the server or client that owns it.
protocol SessionOwner: AnyObject, Sendable {
    var loop: ServiceLoop { get }
    /// Queues the session for `service()` on the service thread and wakes it.
    func scheduleService(of session: WebSocketSession)
}
