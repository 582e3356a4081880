import Synchronization

/// One request's lifecycle as the progress stream reports it: `queued`, `connecting`,
/// `response`, `progress` (coalesced), then `finished` or `failed`.
///
/// The fetch and preload paths call it at each step; every call returns at once. Each event is
/// a `progress.request` event whose body carries the request's number, source, URL, method,
/// connection, group, and what is known so far (status, cache result, bytes, elapsed time).
public final class RequestTrace: Sendable {
    /// What started the request.
    public enum Source: String, Sendable {
        /// A `fetch` post.
        case fetch
        /// A resource of a `preload` post (or the page or manifest it read).
        case preload
    }

    let hub: ProgressHub
    /// The request's number in the stream, unique for the broker's lifetime.
    public let id: Int
    let source: Source
    let method: String
    let group: String?
    let connection: Int
    let started = ContinuousClock.now
    private let state: Mutex<Snapshot>

    struct Snapshot {
        var url: String
        var status: Int?
        var cache: String?
        var loaded = 0
        var total: Int?
        var ended = false
        var throttle = ProgressThrottle()
    }

    init(hub: ProgressHub, id: Int, source: Source, url: String, method: String, group: String?, connection: Int) {
        self.hub = hub
        self.id = id
        self.source = source
        self.method = method
        self.group = group
        self.connection = connection
        self.state = Mutex(Snapshot(url: url))
    }

    /// A hop is about to go out (through the cache) to `url`; redirects call it again.
    public func connecting(url: String) {
        state.locked { $0.url = url }
        publish(phase: "connecting")
    }

    /// The final response's head is known.
    public func response(status: Int, cache: ReplyCacheStatus, total: Int?) {
        state.locked { snapshot in
            snapshot.status = status
            snapshot.cache = cache.rawValue
            snapshot.total = total
        }
        publish(phase: "response")
    }

    /// `loaded` body bytes have arrived; published at most once per 50 ms.
    public func progress(loaded: Int) {
        let due = state.locked { snapshot in
            snapshot.loaded = loaded
            return snapshot.throttle.isDue(final: false)
        }
        if due { publish(phase: "progress") }
    }

    /// The request ended with its response delivered.
    public func finish() {
        guard let snapshot = end() else { return }
        hub.record { totals in
            totals.finished += 1
            totals.bytes += snapshot.loaded
            if let cache = snapshot.cache { totals.cache[cache, default: 0] += 1 }
        }
        hub.metrics?.requestEnded(source: source, cache: snapshot.cache, failed: false, duration: ContinuousClock.now - started)
        publish(phase: "finished")
    }

    /// The request ended without a response, or its delivery failed.
    public func fail(_ error: BridgeError) {
        guard let snapshot = end() else { return }
        hub.record { totals in
            totals.failed += 1
            totals.bytes += snapshot.loaded
        }
        hub.metrics?.requestEnded(source: source, cache: snapshot.cache, failed: true, duration: ContinuousClock.now - started)
        publish(phase: "failed", error: error)
    }

    private func end() -> Snapshot? {
        state.locked { snapshot in
            guard !snapshot.ended else { return nil }
            snapshot.ended = true
            return snapshot
        }
    }

    func publish(phase: String, error: BridgeError? = nil) {
        // Only progress may be replaced by a later event: lifecycle steps are never coalesced.
        hub.publish("progress.request", self.body(phase: phase, error: error), coalesce: phase == "progress" ? id : nil)
    }

    private func body(phase: String, error: BridgeError?) -> JSONValue {
        let snapshot = state.locked { $0 }
        let elapsed = ContinuousClock.now - started
        var body = JSONObject([
            ("request", .integer(id)), ("phase", .string(phase)), ("source", .string(source.rawValue)),
            ("url", .string(snapshot.url)), ("method", .string(method)), ("connection", .integer(connection)),
            ("group", group.map { .string($0) } ?? .null), ("status", snapshot.status.map { .integer($0) } ?? .null),
            ("cache", snapshot.cache.map { .string($0) } ?? .null), ("loaded", .integer(snapshot.loaded)),
            ("total", snapshot.total.map { .integer($0) } ?? .null),
            ("elapsedMs", .integer(Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000))),
        ])
        if let error { body["error"] = error.json }
        return .object(body)
    }
}

extension RequestTrace {
    /// Runs `work` and ends the trace with its outcome: `finished` when it returns, `failed`
    /// with the error (or `cancelled`) when it throws.
    public func during<T: Sendable>(_ work: () async throws -> T) async throws -> T {
        do {
            let value = try await work()
            finish()
            return value
        } catch let error as BridgeError {
            fail(error)
            throw error
        } catch is CancellationError {
            fail(BridgeError(.cancelled, "the request was cancelled"))
            throw CancellationError()
        } catch {
            fail(BridgeError(.internal, String(describing: error)))
            throw error
        }
    }
}
