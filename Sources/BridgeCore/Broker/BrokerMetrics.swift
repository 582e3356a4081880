/// The port through which the broker reports what an operator's metrics need.
///
/// The core knows no metrics library: BridgeServer implements this with swift-metrics and
/// swift-prometheus (`PrometheusBrokerMetrics`). Only events nothing else counts come through
/// here, each once per post or request; totals the broker keeps anyway (cache counters, store
/// sizes, connection and byte counts) are read when metrics are scraped. Every method must
/// return at once and take no lock beyond an atomic update: it runs on the request path.
public protocol BrokerMetrics: Sendable {
    /// The meter for posts to the handler registered as `name`; asked once, at registration,
    /// so that a post costs no lookup.
    func postMeter(handler name: String) -> any PostMeter
    /// A fetch or preload request ended, `duration` after it was queued; `cache` is the reply's
    /// cache status (`hit`, `miss`, ...), nil when it failed before a response.
    func requestEnded(source: RequestTrace.Source, cache: String?, failed: Bool, duration: Duration)
    /// A preload resource ended as `result` (`stored`, `cached`, `uncacheable`, `failed`, `skipped`).
    func preloadResourceEnded(result: String)
}

/// Counts the posts to one handler by outcome.
public protocol PostMeter: Sendable {
    /// A post ended: with a reply body (`error` nil) or with this error code.
    func ended(_ error: ErrorCode?)
}
