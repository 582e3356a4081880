import BridgeCore
import BridgeWebSocket
import CoreMetrics
import Prometheus
import Synchronization

/// The broker's metrics for operators, in the Prometheus text format (`GET /metrics`).
///
/// swift-metrics counters, gauges and timers, made by swift-prometheus's factory on a registry
/// of this broker's own (so several brokers in one process never share counts, and the
/// process-wide `MetricsSystem` stays the host's). Event metrics (posts, request latencies,
/// preload results, upstream statuses) are made up front and updated with one atomic
/// operation each; the rest is read from the counters the broker keeps anyway when scraped.
/// Metric names and labels are listed in README.md ("Metrics").
public final class PrometheusBrokerMetrics: BrokerMetrics {
    /// The registry `/metrics` renders; a host may register metrics of its own on it.
    public let registry: PrometheusCollectorRegistry
    let factory: PrometheusMetricsFactory
    private let fetchTimers: [String: CoreMetrics.Timer]
    private let preloadTimers: [String: CoreMetrics.Timer]
    private let preloadResults: [String: CoreMetrics.Counter]
    private let upstreamStatuses: [CoreMetrics.Counter]
    private let upstreamErrors: CoreMetrics.Counter
    private let scraped: ScrapedMetrics
    private let scrapeLock = Mutex(())

    /// The request duration buckets: sub-millisecond for memory hits up to half a minute.
    static let durationBuckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5),
        .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
        .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30),
    ]
    /// The cache statuses a request ends with, and `failed` for one that ended without a response.
    static let requestOutcomes = ["hit", "stale", "revalidated", "miss", "bypass", "failed"]

    /// Creates the metrics on a new registry.
    public init() {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets["bridge_request_duration_seconds"] = Self.durationBuckets
        self.registry = registry
        self.factory = factory
        func timers(_ source: String) -> [String: CoreMetrics.Timer] {
            Dictionary(uniqueKeysWithValues: Self.requestOutcomes.map { outcome in
                (outcome, CoreMetrics.Timer(
                    label: "bridge_request_duration_seconds", dimensions: [("source", source), ("cache", outcome)], factory: factory))
            })
        }
        fetchTimers = timers("fetch")
        preloadTimers = timers("preload")
        preloadResults = Dictionary(uniqueKeysWithValues: ["stored", "cached", "uncacheable", "failed", "skipped"].map { result in
            (result, CoreMetrics.Counter(label: "bridge_preload_resources_total", dimensions: [("result", result)], factory: factory))
        })
        upstreamStatuses = ["1xx", "2xx", "3xx", "4xx", "5xx"].map { statusClass in
            CoreMetrics.Counter(label: "bridge_upstream_requests_total", dimensions: [("status_class", statusClass)], factory: factory)
        }
        upstreamErrors = CoreMetrics.Counter(label: "bridge_upstream_requests_total", dimensions: [("status_class", "error")], factory: factory)
        scraped = ScrapedMetrics(factory: factory)
    }

    public func postMeter(handler name: String) -> any PostMeter {
        HandlerPostMeter(handler: name, factory: factory)
    }

    public func requestEnded(source: RequestTrace.Source, cache: String?, failed: Bool, duration: Duration) {
        let timers = source == .fetch ? fetchTimers : preloadTimers
        timers[failed ? "failed" : (cache ?? "failed")]?.recordNanoseconds(duration.wholeNanoseconds)
    }

    public func preloadResourceEnded(result: String) {
        preloadResults[result]?.increment()
    }

    /// An upstream exchange ended with a response of `status`, or without one (nil).
    func upstreamEnded(status: Int?) {
        guard let status else { return upstreamErrors.increment() }
        let index = status / 100 - 1
        if upstreamStatuses.indices.contains(index) { upstreamStatuses[index].increment() }
    }

    /// The Prometheus text, after the scraped metrics were brought up to date from `cache` and
    /// `traffic`. Never waits: it runs on the WebSocket server's service thread.
    public func exposition(cache: HTTPCache, traffic: ServerTraffic) -> [UInt8] {
        scrapeLock.locked { _ in
            scraped.update(cache: cache.statistics, store: cache.store.statsWithoutWaiting(), traffic: traffic)
        }
        return registry.emitToBuffer()
    }
}

/// The posts to one handler by outcome: `ok` or the error code (codes outside the protocol's
/// are counted as `other`, so a handler cannot grow the label set).
final class HandlerPostMeter: PostMeter {
    private let ok: CoreMetrics.Counter
    private let errors: [String: CoreMetrics.Counter]
    private let other: CoreMetrics.Counter

    static let codes: [ErrorCode] = [
        .badMessage, .unknownHandler, .badRequest, .duplicateID, .tooManyInFlight, .forbidden, .network, .timeout,
        .cancelled, .notCached, .tooLarge, .internal,
    ]

    init(handler: String, factory: PrometheusMetricsFactory) {
        func counter(_ outcome: String) -> CoreMetrics.Counter {
            CoreMetrics.Counter(label: "bridge_posts_total", dimensions: [("handler", handler), ("outcome", outcome)], factory: factory)
        }
        ok = counter("ok")
        errors = Dictionary(uniqueKeysWithValues: Self.codes.map { ($0.rawValue, counter($0.rawValue)) })
        other = counter("other")
    }

    func ended(_ error: ErrorCode?) {
        guard let error else { return ok.increment() }
        (errors[error.rawValue] ?? other).increment()
    }
}

/// The metrics read from the broker's own counters at scrape time: counters advance by what
/// changed since the last scrape, gauges take the current value.
final class ScrapedMetrics: @unchecked Sendable {
    // Touched only under PrometheusBrokerMetrics.scrapeLock.
    private var last: [String: Int] = [:]
    private let counters: [String: CoreMetrics.Counter]
    private let gauges: [String: CoreMetrics.Gauge]

    init(factory: PrometheusMetricsFactory) {
        let counterLabels: [(String, String, [(String, String)])] = [
            ("hits", "bridge_cache_hits_total", []), ("misses", "bridge_cache_misses_total", []),
            ("revalidations", "bridge_cache_revalidations_total", []), ("stale", "bridge_cache_stale_served_total", []),
            ("collapsed", "bridge_cache_collapsed_total", []), ("evictions", "bridge_cache_evictions_total", []),
            ("damaged", "bridge_cache_damaged_total", []),
            ("opened", "bridge_connections_opened_total", []),
            ("received", "bridge_websocket_bytes_total", [("direction", "in")]),
            ("sent", "bridge_websocket_bytes_total", [("direction", "out")]),
        ]
        counters = Dictionary(uniqueKeysWithValues: counterLabels.map { key, label, dimensions in
            (key, CoreMetrics.Counter(label: label, dimensions: dimensions, factory: factory))
        })
        let gaugeLabels: [(String, String, [(String, String)])] = [
            ("connections", "bridge_connections", []),
            ("memoryEntries", "bridge_cache_entries", [("tier", "memory")]), ("diskEntries", "bridge_cache_entries", [("tier", "disk")]),
            ("memoryBytes", "bridge_cache_bytes", [("tier", "memory")]), ("diskBytes", "bridge_cache_bytes", [("tier", "disk")]),
            ("memoryCapacity", "bridge_cache_capacity_bytes", [("tier", "memory")]),
            ("diskCapacity", "bridge_cache_capacity_bytes", [("tier", "disk")]),
            ("disabled", "bridge_cache_disabled", []), ("readOnly", "bridge_cache_read_only", []),
        ]
        gauges = Dictionary(uniqueKeysWithValues: gaugeLabels.map { key, label, dimensions in
            (key, CoreMetrics.Gauge(label: label, dimensions: dimensions, factory: factory))
        })
    }

    func update(cache: HTTPCache.Counters, store: CacheStoreStats?, traffic: ServerTraffic) {
        var totals = [
            "hits": cache.hits, "misses": cache.misses, "revalidations": cache.revalidations, "stale": cache.stale,
            "collapsed": cache.collapsed, "opened": traffic.connectionsOpened, "received": traffic.bytesReceived,
            "sent": traffic.bytesSent,
        ]
        if let store { (totals["evictions"], totals["damaged"]) = (store.evictions, store.damaged) }
        for (key, value) in totals {
            // A total that went down (a store reopened) starts again from there.
            let delta = value - (last[key] ?? 0)
            if delta > 0 { counters[key]?.increment(by: delta) }
            last[key] = value
        }
        gauges["connections"]?.record(traffic.openConnections)
        guard let store else { return }
        let values: [String: Int] = [
            "memoryEntries": store.memoryEntries, "diskEntries": store.diskEntries, "memoryBytes": store.memoryBytes,
            "diskBytes": store.diskBytes, "memoryCapacity": store.memoryCapacity ?? 0, "diskCapacity": store.diskCapacity ?? 0,
            "disabled": store.disabledReason == nil ? 0 : 1, "readOnly": store.writesDisabledReason == nil ? 0 : 1,
        ]
        for (key, value) in values { gauges[key]?.record(value) }
    }
}

/// The upstream client with each exchange's outcome counted by status class.
struct MeteredUpstreamClient: UpstreamClient {
    let base: any UpstreamClient
    let metrics: PrometheusBrokerMetrics

    func send(_ request: UpstreamRequest) async throws -> UpstreamResponse {
        do {
            let response = try await base.send(request)
            metrics.upstreamEnded(status: response.status)
            return response
        } catch let error as BridgeError where error.code == .network || error.code == .timeout {
            metrics.upstreamEnded(status: nil)
            throw error
        }
    }
}
