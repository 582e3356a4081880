import Foundation

/// The `fetch` handler: one HTTP exchange upstream, with redirects, progress and streaming.
public struct FetchHandler: BridgeHandler {
    /// The upstream transport.
    public let upstream: any UpstreamClient
    /// The URL rules every hop must pass.
    public let rules: URLRules
    /// The HTTP cache every hop goes through; nil sends every hop upstream (`bypass`).
    public let cache: HTTPCache?
    /// The cookie jar every hop reads and writes.
    public let cookies: CookieJar

    /// The most redirects `follow` takes.
    public static let maxRedirects = 20
    /// The interval below which progress events are coalesced.
    public static let progressInterval: Duration = .milliseconds(50)

    /// Creates the handler; with a `cache`, hops go through it (it wraps `upstream` itself).
    /// Without a `cookies` jar it keeps one of its own, in memory.
    public init(upstream: any UpstreamClient, rules: URLRules, cache: HTTPCache? = nil, cookies: CookieJar? = nil) {
        self.upstream = upstream
        self.rules = rules
        self.cache = cache
        self.cookies = cookies ?? CookieJar()
    }

    public func handle(_ call: HandlerCall) async throws -> JSONValue {
        let request = try (call.keptForHandle as? FetchRequest) ?? FetchRequest(json: call.body, page: call.connection.info.isPage)
        let groupToken = request.group.map { call.connection.groups.start(group: $0) }
        defer {
            if let group = request.group, let groupToken { call.connection.groups.finish(group: group, token: groupToken) }
        }
        let trace = call.connection.broker.progress.begin(
            source: .fetch, url: request.url, method: request.method, group: request.group, connection: call.connection.number)
        let exchange = FetchExchange(call: call, request: request, handler: self, groupToken: groupToken, trace: trace)
        return try await trace.during {
            try await call.withDeadline(request.timeout, message: "\(request.url) took longer than \(request.timeout)") {
                try await exchange.run()
            }
        }
    }
}

extension FetchHandler {
    /// The `Cache-Status` member of a hop sent without a cache.
    static let bypassCacheStatus = "bridge-broker; fwd=bypass"

    /// Performs one hop: through the cache when there is one, else straight upstream.
    func exchange(_ request: UpstreamRequest, mode: CacheMode) async throws -> CachedExchange {
        if let cache { return try await cache.send(request, mode: mode) }
        if mode == .onlyIfCached || mode == .freshOnly {
            throw BridgeError(.notCached, "\(mode.rawValue): \(request.url) is not in the cache (the broker runs without one)")
        }
        var response = try await upstream.send(request)
        response.headers.add("cache-status", Self.bypassCacheStatus)
        return CachedExchange(response: response, status: .bypass)
    }
}

/// Runs `work`, failing with `timeout` if it has not finished within `duration`.
///
/// The work is cancelled when the time runs out.
public func withDeadline<T: Sendable>(_ duration: Duration, message: String, _ work: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await work() }
        group.addTask {
            try await Task.sleep(for: duration)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw BridgeError(.timeout, message)
        }
        return value
    }
}

/// Limits progress events to one per interval, always letting the final one through.
struct ProgressThrottle {
    var last: ContinuousClock.Instant?

    mutating func isDue(final: Bool) -> Bool {
        let now = ContinuousClock.now
        if !final, let last, now - last < FetchHandler.progressInterval { return false }
        last = now
        return true
    }
}
