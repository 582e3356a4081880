import Synchronization

/// Combined progress of the requests of one page load (a fetch `group`) on one connection.
///
/// Each request weighs the same; a request counts by its downloaded fraction when its size is
/// known, half once its headers arrived when it is not, and whole once finished. Updates go to
/// the connection as `group.progress` events, at most one per `interval` per group, and always
/// one when the last request of the group finishes; the same bodies, with the connection's
/// number, go to the progress stream as `progress.group`.
///
/// Requests answered one by one (a page's cache hits, each done before the next is read) finish
/// the group again and again. The first time it is sent at once; when a final event was already
/// sent less than `interval` before, the next one waits until `interval` after it and then
/// carries every request that finished meanwhile. Without that, a page of 30 hits got 30 of them,
/// each one more WebSocket message for the page's main thread to take in during its load.
///
/// A group outlives the moment all its requests are finished: a page load whose requests are
/// answered one by one from the cache (each done before the next starts) stays one group that
/// counts them all, instead of a new group of one per request. Finished groups are forgotten
/// `retention` after they finished, and beyond `maxFinishedGroups` the oldest go first.
public final class GroupProgress: Sendable {
    private let sink: any ConnectionSink
    private let hub: ProgressHub?
    private let connection: Int
    private let interval: Duration
    private let state = Mutex<[String: Group]>([:])

    struct Request {
        var loaded = 0
        var total: Int?
        var headers = false
        var finished = false

        var fraction: Double {
            if finished { return 1 }
            if let total, total > 0 { return min(1, Double(loaded) / Double(total)) }
            return headers ? 0.5 : 0
        }
    }

    struct Group {
        var requests: [UInt64: Request] = [:]
        var nextToken: UInt64 = 0
        var lastSent: ContinuousClock.Instant?
        /// Whether the last event sent was a final one (`progress` 1).
        var lastWasFinal = false
        /// A final event is scheduled (see the type's documentation).
        var finalScheduled = false
        /// When its last request finished, while no other has started since.
        var finishedAt: ContinuousClock.Instant?
    }

    /// How long a finished group is remembered for requests that join it later.
    static let retention: Duration = .seconds(10)
    /// The most finished groups remembered per connection.
    static let maxFinishedGroups = 64

    private let schedule: @Sendable (Duration, @escaping @Sendable () -> Void) -> Void

    /// Creates the group progress of one connection, sending through `sink` and publishing to
    /// `hub`; `schedule(delay, work)` runs `work` after `delay` (tests pass their own).
    public init(
        sink: any ConnectionSink, hub: ProgressHub? = nil, connection: Int = 0, interval: Duration = .milliseconds(50),
        schedule: @escaping @Sendable (Duration, @escaping @Sendable () -> Void) -> Void = GroupProgress.afterDelay
    ) {
        self.sink = sink
        self.hub = hub
        self.connection = connection
        self.interval = interval
        self.schedule = schedule
    }

    /// Runs `work` after `delay` in a task of its own.
    public static func afterDelay(_ delay: Duration, _ work: @escaping @Sendable () -> Void) {
        Task {
            try? await Task.sleep(for: delay)
            work()
        }
    }

    /// Adds a request to `group`; returns the token that names it in later updates.
    public func start(group: String) -> UInt64 {
        let (token, frame): (UInt64, JSONValue?) = state.locked { groups in
            if groups[group] == nil { Self.forgetFinished(&groups, now: .now) }
            var entry = groups[group] ?? Group()
            entry.finishedAt = nil
            entry.nextToken += 1
            let token = entry.nextToken
            entry.requests[token] = Request()
            let frame = Self.frameIfDue(name: group, &entry, force: false, interval: interval)
            groups[group] = entry
            return (token, frame)
        }
        send(frame)
        return token
    }

    /// Records a request's progress: headers seen, bytes loaded, size when known.
    public func update(group: String, token: UInt64, loaded: Int, total: Int?, headers: Bool = true) {
        let frame: JSONValue? = state.locked { groups in
            guard var entry = groups[group], entry.requests[token] != nil else { return nil }
            entry.requests[token]!.loaded = loaded
            entry.requests[token]!.total = total
            entry.requests[token]!.headers = headers
            let frame = Self.frameIfDue(name: group, &entry, force: false, interval: interval)
            groups[group] = entry
            return frame
        }
        send(frame)
    }

    /// Marks a request finished (succeeded or failed); the group ends when all have.
    public func finish(group: String, token: UInt64) {
        let (frame, wait): (JSONValue?, Duration?) = state.locked { groups in
            guard var entry = groups[group], entry.requests[token] != nil else { return (nil, nil) }
            entry.requests[token]!.finished = true
            let done = entry.requests.values.allSatisfy(\.finished)
            var frame: JSONValue?
            var wait: Duration?
            if done, entry.lastWasFinal, let last = entry.lastSent, ContinuousClock.now - last < interval {
                // Finished again right after a final event: one more, later, for all of them.
                if !entry.finalScheduled {
                    entry.finalScheduled = true
                    wait = interval - (ContinuousClock.now - last)
                }
            } else {
                frame = Self.frameIfDue(name: group, &entry, force: done, interval: interval)
            }
            if done { entry.finishedAt = .now }
            groups[group] = entry
            return (frame, wait)
        }
        send(frame)
        if let wait { schedule(wait) { [self] in sendScheduledFinal(group: group) } }
    }

    /// The final event `finish` put off, if the group is still finished (if a request started
    /// since, the finish that ends it sends one).
    private func sendScheduledFinal(group: String) {
        let frame: JSONValue? = state.locked { groups in
            guard var entry = groups[group], entry.finalScheduled else { return nil }
            entry.finalScheduled = false
            let done = entry.requests.values.allSatisfy(\.finished)
            let frame = done ? Self.frameIfDue(name: group, &entry, force: true, interval: interval) : nil
            groups[group] = entry
            return frame
        }
        send(frame)
    }

    /// The groups remembered now, finished or not (for tests and diagnostics).
    public var groupCount: Int { state.locked { $0.count } }

    private static func forgetFinished(_ groups: inout [String: Group], now: ContinuousClock.Instant) {
        let finished = groups.compactMap { name, group in group.finishedAt.map { (name, $0) } }
        guard !finished.isEmpty else { return }
        for (name, at) in finished where now - at >= retention { groups[name] = nil }
        let remaining = finished.filter { groups[$0.0] != nil }
        guard remaining.count > maxFinishedGroups else { return }
        for (name, _) in remaining.sorted(by: { $0.1 < $1.1 }).prefix(remaining.count - maxFinishedGroups) { groups[name] = nil }
    }

    private func send(_ body: JSONValue?) {
        guard let body else { return }
        sink.send(ServerMessage.event(id: nil, name: "group.progress", body: body), binary: false)
        guard let hub, case .object(var members) = body else { return }
        members["connection"] = .integer(connection)
        hub.publish("progress.group", .object(members))
    }

    private static func frameIfDue(name: String, _ group: inout Group, force: Bool, interval: Duration) -> JSONValue? {
        let now = ContinuousClock.now
        if !force, let last = group.lastSent, now - last < interval { return nil }
        group.lastSent = now
        group.lastWasFinal = force
        let requests = Array(group.requests.values)
        let finished = requests.filter(\.finished).count
        let known = requests.filter { $0.total != nil }
        let progress = requests.isEmpty ? 0 : requests.map(\.fraction).reduce(0, +) / Double(requests.count)
        let body: JSONValue = [
            "group": .string(name),
            "requests": .integer(requests.count),
            "finished": .integer(finished),
            "loaded": .integer(known.map(\.loaded).reduce(0, +)),
            "total": .integer(known.compactMap(\.total).reduce(0, +)),
            "progress": .double(force ? 1 : progress),
        ]
        return body
    }
}
