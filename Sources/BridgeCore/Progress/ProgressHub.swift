import Synchronization

/// The broker-wide progress stream: every request's lifecycle and every page group's progress,
/// fanned out to the connections that sent `progress.subscribe`.
///
/// The fetch path reports into it through a `RequestTrace` per request and never waits for a
/// subscriber: publishing only appends to each subscriber's bounded queue (see
/// `ProgressSubscriber`). With no subscriber, reporting costs a lock and a counter.
public final class ProgressHub: Sendable {
    /// How many events a subscriber may have waiting before new ones are dropped.
    public let queueLimit: Int
    /// How often each subscriber gets a `progress.stats` event.
    public let statsInterval: Duration
    private let state = Mutex(State())

    struct State {
        var subscribers: [ObjectIdentifier: ProgressSubscriber] = [:]
        var nextRequest = 0
        var nextConnection = 0
        var totals = ProgressTotals()
    }

    /// Where ended requests are reported for operators' metrics, if anywhere.
    let metrics: (any BrokerMetrics)?

    /// Creates a hub; `queueLimit` bounds each subscriber's memory.
    public init(queueLimit: Int = 256, statsInterval: Duration = .seconds(1), metrics: (any BrokerMetrics)? = nil) {
        self.queueLimit = queueLimit
        self.statsInterval = statsInterval
        self.metrics = metrics
    }

    /// A number for a new connection, carried by its events (`connection`).
    func nextConnectionNumber() -> Int {
        state.locked { state in
            state.nextConnection += 1
            return state.nextConnection
        }
    }

    /// Starts tracing one request: publishes `queued` and returns the trace the fetch path
    /// reports into.
    public func begin(source: RequestTrace.Source, url: String, method: String, group: String?, connection: Int) -> RequestTrace {
        let id = state.locked { state in
            state.nextRequest += 1
            state.totals.started += 1
            return state.nextRequest
        }
        let trace = RequestTrace(hub: self, id: id, source: source, url: url, method: method, group: group, connection: connection)
        trace.publish(phase: "queued")
        return trace
    }

    /// Subscribes `sink`'s connection (once; a second call returns the same subscription) and
    /// returns the subscriber. The caller must call `unsubscribe` when the connection closes.
    public func subscribe(connection: BrokerConnection) -> ProgressSubscriber {
        let key = ObjectIdentifier(connection)
        let (subscriber, isNew) = state.locked { state -> (ProgressSubscriber, Bool) in
            if let existing = state.subscribers[key] { return (existing, false) }
            let subscriber = ProgressSubscriber(sink: connection.sink, limit: queueLimit, interval: statsInterval) { [weak self] in
                self?.statsFrame()
            }
            state.subscribers[key] = subscriber
            return (subscriber, true)
        }
        if isNew { subscriber.start() }
        return subscriber
    }

    /// Ends `connection`'s subscription, if any.
    public func unsubscribe(connection: BrokerConnection) {
        state.locked { $0.subscribers.removeValue(forKey: ObjectIdentifier(connection)) }?.end()
    }

    /// The number of connections subscribed.
    public var subscriberCount: Int { state.locked { $0.subscribers.count } }

    /// Broker-wide counts since start.
    public var totals: ProgressTotals { state.locked { $0.totals } }

    /// Events waiting in each subscriber's queue (for tests and diagnostics).
    public var queueDepths: [Int] { state.locked { $0.subscribers.values.map(\.depth) } }

    /// Sends an event to every subscriber. `coalesce` names an event that a later one with the
    /// same key replaces while it still waits in a queue (progress of one request, say).
    func publish(_ name: String, _ body: @autoclosure () -> JSONValue, coalesce: Int? = nil) {
        let subscribers = state.locked { Array($0.subscribers.values) }
        guard !subscribers.isEmpty else { return }
        let frame = ServerMessage.event(id: nil, name: name, body: body())
        for subscriber in subscribers { subscriber.enqueue(frame, coalesce: coalesce) }
    }

    func record(_ update: (inout ProgressTotals) -> Void) {
        state.locked { update(&$0.totals) }
    }

    func statsFrame() -> [UInt8] {
        ServerMessage.event(id: nil, name: "progress.stats", body: totals.json)
    }
}

/// Broker-wide request counts since the broker started, as `progress.stats` reports them.
public struct ProgressTotals: Sendable, Equatable {
    /// Requests begun (fetch and preload).
    public var started = 0
    /// Requests that ended with a response.
    public var finished = 0
    /// Requests that ended without a response.
    public var failed = 0
    /// Body bytes delivered.
    public var bytes = 0
    /// Finished requests by cache status (`hit`, `miss`, ...).
    public var cache: [String: Int] = [:]

    /// Requests in flight.
    public var active: Int { started - finished - failed }

    /// The counts as the `progress.stats` body.
    public var json: JSONValue {
        let statuses = ReplyCacheStatus.allCases.map { (key: $0.rawValue, value: JSONValue.integer(cache[$0.rawValue] ?? 0)) }
        return [
            "started": .integer(started), "active": .integer(active), "finished": .integer(finished),
            "failed": .integer(failed), "bytes": .integer(bytes), "cache": .object(JSONObject(statuses)),
        ]
    }
}
