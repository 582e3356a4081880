import Logging
import Synchronization

/// One exchange as the cache produced it: the response to deliver and how it was obtained.
public struct CachedExchange: Sendable {
    /// The response; its headers carry `Cache-Status` (and `Age` when served from the cache).
    public var response: UpstreamResponse
    /// The reply's cache status.
    public var status: ReplyCacheStatus
    /// The `Age` sent, in seconds, when the response came from the cache.
    public var age: Int?
    /// The `Set-Cookie` lines stored with a response served from the cache, which its served
    /// headers never carry; empty for a network response (its own lines are in its headers).
    /// A client that asks for the stored cookies is given these.
    public var storedSetCookie: [String]

    /// Creates an exchange result.
    public init(response: UpstreamResponse, status: ReplyCacheStatus, age: Int? = nil, storedSetCookie: [String] = []) {
        self.response = response
        self.status = status
        self.age = age
        self.storedSetCookie = storedSetCookie
    }
}

/// The broker's HTTP cache: runs `CachePlanner` against a `CacheStore` around an `UpstreamClient`.
///
/// For each hop: look up the stored variants, plan, then serve the stored response, send a
/// conditional request, or fetch; decide on the answer; then store (the body is teed into the
/// store while it streams to the client), freshen, delete or invalidate. On top of the policy:
/// - stale-while-revalidate starts exactly one background revalidation per stored entry at a
///   time, however many requests are served stale meanwhile;
/// - identical GET requests (same URL and headers, mode `default` or `force-cache`) that
///   would go upstream while one of them is already in flight wait for it and then read what it
///   stored (request collapsing, RFC 9111 §4); when its response was not storable they go
///   upstream themselves, since only a reusable response may be shared;
/// - a failing store never fails a fetch: storage problems make the cache act empty.
public final class HTTPCache: Sendable {
    /// Where entries are kept.
    public let store: any CacheStore
    /// The broker's wall clock.
    public let clock: any BrokerClock
    /// The policy.
    public let planner: CachePlanner
    let upstream: any UpstreamClient
    let logger: Logger
    let counters = Mutex(Counters())
    let collapsing = RequestCollapsing()
    let background = BackgroundTasks()
    let writes = BackgroundTasks()
    let commits = PendingCommits()
    let templates = HitTemplates()

    /// How long a background revalidation may take.
    public static let backgroundTimeout: Duration = .seconds(60)

    /// Hit, miss and revalidation counts since start.
    public struct Counters: Sendable, Equatable {
        /// Replies served from the store without a foreground network request (fresh or stale).
        public var hits = 0
        /// Network responses served for GETs the cache could not answer.
        public var misses = 0
        /// Conditional requests sent to validate a stored response (foreground and background).
        public var revalidations = 0
        /// Requests that waited for an identical one in flight instead of going upstream.
        public var collapsed = 0
        /// Of `hits`, the replies served stale (stale-while-revalidate, stale-if-error,
        /// `max-stale`, `force-cache`, `only-if-cached`).
        public var stale = 0

        /// Counts a reply served from the store with `status`.
        mutating func served(_ status: ReplyCacheStatus) {
            hits += 1
            if status == .stale { stale += 1 }
        }
    }

    /// Creates a cache over `store` that forwards through `upstream`.
    public init(
        store: any CacheStore, upstream: any UpstreamClient, clock: any BrokerClock = SystemClock(),
        options: CachePolicyOptions = CachePolicyOptions(), logger: Logger = Logger(label: "bridge.cache")
    ) {
        self.store = store
        self.upstream = upstream
        self.clock = clock
        self.planner = CachePlanner(options: options)
        self.logger = logger
    }

    /// The counters so far.
    public var statistics: Counters { counters.locked { $0 } }

    /// Performs one hop through the cache in `mode`.
    ///
    /// Throws `not_cached` when the mode forbids the network and nothing usable is stored, and
    /// the upstream client's errors when no stored response may stand in (stale-if-error).
    public func send(_ request: UpstreamRequest, mode: CacheMode) async throws -> CachedExchange {
        try await send(request, mode: mode, attempt: 0)
    }

    /// Waits until every background revalidation and cache write started so far has ended
    /// (for tests and shutdown).
    public func waitForBackgroundWork() async {
        await background.waitForAll()
        await waitForPendingWrites()
    }

    /// Waits until every cache write started so far has ended.
    public func waitForPendingWrites() async {
        await writes.waitForAll()
        await commits.waitForAll()
    }

    func send(_ request: UpstreamRequest, mode: CacheMode, attempt: Int) async throws -> CachedExchange {
        let cacheRequest = CacheRequest(method: request.method, url: request.url, headers: request.headers)
        // no-store and reload never read; skipping the lookup keeps them off the store entirely.
        let reads = cacheRequest.method == "GET" && mode != .noStore && mode != .reload
        let key = CacheKey.primary(for: request.url)
        if reads { await commits.wait(for: key) }
        let candidates = reads ? await store.entries(for: key) : []
        let plan = planner.plan(request: cacheRequest, mode: mode, storedCandidates: candidates, now: clock.now())
        switch plan {
        case .fail:
            throw Self.notCached(request.url)
        case .serveStored(let reply):
            guard let body = await store.body(of: reply.entry) else {
                // Evicted between lookup and read: look again (it is no longer listed).
                guard attempt < 3 else { throw BridgeError(.notCached, "\(request.url) left the cache while being read") }
                return try await send(request, mode: mode, attempt: attempt + 1)
            }
            if let range = reply.range {
                guard let exchange = Self.rangedExchange(reply.entry, headers: reply.headers, status: reply.status, age: reply.age, body: body, range: range) else {
                    // A partial body that does not hold its span: drop it and look again.
                    await store.remove(reply.entry)
                    guard attempt < 3 else { throw BridgeError(.notCached, "\(request.url) left the cache while being read") }
                    return try await send(request, mode: mode, attempt: attempt + 1)
                }
                counters.locked { $0.served(reply.status) }
                if reply.backgroundRevalidation { revalidateInBackground(reply.entry, request: request) }
                return exchange
            }
            counters.locked { $0.served(reply.status) }
            if reply.backgroundRevalidation { revalidateInBackground(reply.entry, request: request) }
            return Self.storedExchange(reply.entry, headers: reply.headers, status: reply.status, age: reply.age, body: body)
        case .revalidate, .fetch:
            guard attempt < 2, let key = Self.collapsingKey(cacheRequest, mode: mode, plan: plan) else {
                return try await network(plan, request: request, cacheRequest: cacheRequest, mode: mode, leader: nil, attempt: attempt)
            }
            guard let leader = await collapsing.lead(key) else {
                counters.locked { $0.collapsed += 1 }
                return try await send(request, mode: mode, attempt: attempt + 1)
            }
            return try await network(plan, request: request, cacheRequest: cacheRequest, mode: mode, leader: leader, attempt: attempt)
        }
    }

    /// The key under which identical requests collapse, nil when this one must go alone.
    static func collapsingKey(_ request: CacheRequest, mode: CacheMode, plan: CachePlan) -> String? {
        guard request.method == "GET", mode == .default || mode == .forceCache, plan.mayWriteCache else { return nil }
        var key = CacheKey.primary(for: request.url)
        for field in request.headers { key += "\n\(field.name.lowercased()):\(field.value)" }
        return key
    }

    /// A response whose body comes from the store.
    static func storedExchange(
        _ entry: CachedResponse, headers: HeaderList, status: ReplyCacheStatus, age: Int?, body: CacheBody
    ) -> CachedExchange {
        let response = UpstreamResponse(
            status: entry.status, statusText: entry.servedStatusText, headers: headers,
            // Stored bodies are already decoded, so Content-Length does not count them.
            body: UpstreamResponseBody(decoded: true, length: body.length, next: body.next))
        return CachedExchange(response: response, status: status, age: age, storedSetCookie: entry.headers.values("set-cookie"))
    }

    func revalidateInBackground(_ entry: CachedResponse, request: UpstreamRequest) {
        background.start(key: entry.url + "\n" + entry.id) {
            await self.revalidate(entry, request: request)
        }
    }

    /// The stale-while-revalidate follow-up: validate `entry` and store the result.
    func revalidate(_ entry: CachedResponse, request: UpstreamRequest) async {
        let cacheRequest = CacheRequest(method: request.method, url: request.url, headers: request.headers)
        let plan = planner.plan(
            request: cacheRequest, mode: .noCache, storedCandidates: [entry], now: clock.now(),
            isBackgroundRevalidation: true)
        guard plan.usesNetwork else { return }
        var forwarded = request
        forwarded.deadline = .now + Self.backgroundTimeout
        do {
            let exchange = try await network(plan, request: forwarded, cacheRequest: cacheRequest, mode: .noCache, leader: nil, attempt: 2)
            // Read to the end so that a teed body reaches the store.
            while try await exchange.response.body.next() != nil {}
        } catch {
            logger.debug("background revalidation of \(request.url) failed: \(error)")
        }
    }
}
