import Synchronization

/// One connection's subscription to the progress stream: a bounded queue and the task that
/// drains it into the connection.
///
/// The task sends only while the connection is writable (`ConnectionSink.waitUntilWritable`),
/// so a slow client leaves events in the queue. There, a request's progress event replaces the
/// one still waiting for the same request, and once `limit` events wait, new ones are dropped
/// and counted. The next time the queue drains, a `progress.dropped` event tells the client how
/// many it missed (`count`, and `total` since it subscribed). Memory per subscriber is therefore
/// bounded by `limit` events, whatever the client does.
public final class ProgressSubscriber: Sendable {
    let sink: any ConnectionSink
    let limit: Int
    let interval: Duration
    let statsFrame: @Sendable () -> [UInt8]?
    private let state = Mutex(Queue())

    struct Queue {
        var frames: [[UInt8]] = []
        var coalescing: [Int: Int] = [:]
        var dropped = 0
        var totalDropped = 0
        var ended = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    /// The coalescing key of the periodic `progress.stats` event.
    static let statsKey = -1

    init(sink: any ConnectionSink, limit: Int, interval: Duration, statsFrame: @escaping @Sendable () -> [UInt8]?) {
        self.sink = sink
        self.limit = max(1, limit)
        self.interval = interval
        self.statsFrame = statsFrame
    }

    /// Events waiting to be sent.
    public var depth: Int { state.locked { $0.frames.count } }

    /// Events dropped since the subscription began.
    public var droppedTotal: Int { state.locked { $0.totalDropped + $0.dropped } }

    func start() {
        Task { await self.drain() }
        Task { await self.tick() }
        if let frame = statsFrame() { enqueue(frame, coalesce: Self.statsKey) }
    }

    /// Queues a frame without waiting; replaces the waiting frame with the same `coalesce` key,
    /// or drops the frame when the queue is full.
    func enqueue(_ frame: [UInt8], coalesce: Int?) {
        let waiter: CheckedContinuation<Void, Never>? = state.locked { queue in
            guard !queue.ended else { return nil }
            if let coalesce, let index = queue.coalescing[coalesce] {
                queue.frames[index] = frame
                return nil
            }
            guard queue.frames.count < limit else {
                queue.dropped += 1
                return nil
            }
            if let coalesce { queue.coalescing[coalesce] = queue.frames.count }
            queue.frames.append(frame)
            defer { queue.waiter = nil }
            return queue.waiter
        }
        waiter?.resume()
    }

    /// Stops the subscription; queued events are discarded.
    func end() {
        let waiter = state.locked { queue in
            queue.ended = true
            queue.frames = []
            queue.coalescing = [:]
            defer { queue.waiter = nil }
            return queue.waiter
        }
        waiter?.resume()
    }

    private func drain() async {
        while true {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.locked { queue -> Bool in
                    if queue.ended || !queue.frames.isEmpty || queue.dropped > 0 { return true }
                    queue.waiter = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
            // Waiting here is what makes a slow client slow down the queue instead of the broker.
            await sink.waitUntilWritable()
            let (frames, dropped, total, ended) = state.locked { queue in
                defer {
                    queue.frames = []
                    queue.coalescing = [:]
                    queue.totalDropped += queue.dropped
                    queue.dropped = 0
                }
                return (queue.frames, queue.dropped, queue.totalDropped + queue.dropped, queue.ended)
            }
            if ended { return }
            for frame in frames { sink.send(frame, binary: false) }
            if dropped > 0 {
                let body: JSONValue = ["count": .integer(dropped), "total": .integer(total)]
                sink.send(ServerMessage.event(id: nil, name: "progress.dropped", body: body), binary: false)
            }
        }
    }

    private func tick() async {
        while !state.locked({ $0.ended }) {
            try? await Task.sleep(for: interval)
            if let frame = statsFrame() { enqueue(frame, coalesce: Self.statsKey) }
        }
    }
}
