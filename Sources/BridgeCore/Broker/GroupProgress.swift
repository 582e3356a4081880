import Synchronization

/// Combined progress of the requests of one page load (a fetch `group`) on one connection.
///
/// Each request weighs the same; a request counts by its downloaded fraction when its size is
/// known, half once its headers arrived when it is not, and whole once finished. Updates go to
/// the connection as `group.progress` events, at most one per `interval` per group, and always
/// one when the last request of the group finishes; the same bodies, with the connection's
/// number, go to the progress stream as `progress.group`.
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
    }

    init(sink: any ConnectionSink, hub: ProgressHub? = nil, connection: Int = 0, interval: Duration = .milliseconds(50)) {
        self.sink = sink
        self.hub = hub
        self.connection = connection
        self.interval = interval
    }

    /// Adds a request to `group`; returns the token that names it in later updates.
    public func start(group: String) -> UInt64 {
        let (token, frame): (UInt64, JSONValue?) = state.withLock { groups in
            var entry = groups[group] ?? Group()
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
        let frame: JSONValue? = state.withLock { groups in
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
        let frame: JSONValue? = state.withLock { groups in
            guard var entry = groups[group], entry.requests[token] != nil else { return nil }
            entry.requests[token]!.finished = true
            let done = entry.requests.values.allSatisfy(\.finished)
            let frame = Self.frameIfDue(name: group, &entry, force: done, interval: interval)
            groups[group] = done ? nil : entry
            return frame
        }
        send(frame)
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
