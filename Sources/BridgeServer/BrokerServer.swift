import BridgeCore
import BridgeSQLite
import BridgeUpstream
import BridgeWebSocket
import Dispatch
import Foundation
import Logging

/// A complete broker process: the protocol engine with `echo` and `fetch`, the WebSocket server
/// and HTTP files, the upstream client and the broker's files.
///
/// A host application creates one, registers its own handlers on `broker`, and calls `run()`
/// (or `start()` and later `shutdown()`).
///
/// ```swift
/// let server = BrokerServer(configuration: .init())
/// server.broker.register("greet") { call in
///     ["hello": call.body["name"] ?? "world"]
/// }
/// try await server.run()
/// ```
public final class BrokerServer: Sendable {
    /// The protocol engine; register handlers here before `start()`.
    public let broker: Broker
    /// The configuration it runs with.
    public let configuration: BrokerServerConfiguration
    let logger: Logger
    let upstream: HTTPUpstreamClient
    let webSocket: WebSocketServer
    /// The HTTP cache every fetch goes through.
    public let cache: HTTPCache
    /// The cookie jar every fetch reads and writes: persistent cookies in the broker's
    /// database, or in memory only when the database cannot be opened.
    public let cookies: CookieJar
    /// The metrics `/metrics` serves (nil when `configuration.metrics` is off); a host may add
    /// its own to `metrics.registry`.
    public let metrics: PrometheusBrokerMetrics?

    /// Creates the server with the `echo`, `fetch`, `preload`, `progress.subscribe`,
    /// `cache.stats`, `cache.clear`, `page.identity`, `page.cookie` and `cookies.get/set/clear`
    /// handlers registered, and opens the HTTP cache in the cache directory (a cache that cannot open is
    /// disabled and logged; the broker then serves uncached).
    public init(configuration: BrokerServerConfiguration, logger: Logger = Logger(label: "bridge-broker")) {
        self.configuration = configuration
        self.logger = logger
        let metrics = configuration.metrics ? PrometheusBrokerMetrics() : nil
        self.metrics = metrics
        let upstream = HTTPUpstreamClient(
            proxy: configuration.upstreamProxy, connectionsPerHost: max(1, configuration.upstreamConnectionsPerHost), logger: logger)
        self.upstream = upstream
        // Without a proxy, plain-HTTP exchanges and the tasks run on the WebSocket service thread.
        let onServiceThread = configuration.upstreamOnServiceThread && configuration.upstreamProxy == nil
        let jobs = onServiceThread ? ServiceThreadExecutor() : nil
        let serviceUpstream = onServiceThread
            ? ServiceThreadUpstream(
                fallback: upstream, connectionsPerHost: max(1, configuration.upstreamConnectionsPerHost),
                resolve: { host in try await upstream.resolve(host) }, decoder: ZlibBodyDecoder.make)
            : nil
        let executors: [any TaskExecutor] =
            if let jobs { [jobs] } else if configuration.tasksOnUpstreamLoops { EventLoopTaskExecutor.forUpstreamLoops() } else { [] }
        broker = Broker(configuration: configuration.broker, logger: logger, metrics: metrics, taskExecutors: executors)
        let counting = CountingUpstreamClient(base: serviceUpstream ?? upstream)
        upstreamCounter = counting
        let metered: any UpstreamClient = metrics.map { MeteredUpstreamClient(base: counting, metrics: $0) } ?? counting
        var storeConfiguration = SQLiteCacheStoreConfiguration(directory: configuration.cacheDirectory)
        storeConfiguration.memoryCapacity = configuration.memoryCapacity
        storeConfiguration.diskCapacity = configuration.diskCapacity
        let store = SQLiteCacheStore(configuration: storeConfiguration) { [logger] message in logger.error("\(message)") }
        cache = HTTPCache(store: store, upstream: metered, logger: logger)
        let rules = URLRules(allow: configuration.allowURLs, deny: configuration.denyURLs, alsoAllow: configuration.alsoAllowURLs)
        let persistence = Self.opened("the cookie jar's database", "cookies are kept in memory only", logger) {
            try SQLiteCookieStore(directory: configuration.cacheDirectory)
        }
        if PublicSuffixList.shared.source != PublicSuffixList.debianPath {
            logger.warning("no public suffix list at \(PublicSuffixList.debianPath) (Debian package publicsuffix): using a short built-in one")
        }
        let cookies = CookieJar(persistence: persistence, logger: logger, thirdPartyCookies: configuration.thirdPartyCookies)
        self.cookies = cookies
        let fetch = FetchHandler(upstream: metered, rules: rules, cache: cache, cookies: cookies)
        broker.register("fetch", fetch, nonBlocking: true)
        let pagesPersistence = Self.opened("the record of preloaded pages", "it is kept in memory only", logger) {
            try SQLitePreloadedPages(directory: configuration.cacheDirectory)
        }
        let pages = PreloadedPages(persistence: pagesPersistence) { [logger] message in logger.error("\(message)") }
        broker.register("preload", PreloadHandler(fetch: fetch, pages: pages), nonBlocking: true)
        broker.register("page.preloaded", PagePreloadedHandler(pages: pages), nonBlocking: true)
        broker.register("progress.subscribe", ProgressSubscribeHandler(hub: broker.progress), nonBlocking: true)
        broker.register("cache.stats", CacheStatsHandler(cache: cache), nonBlocking: true)
        broker.register("cache.clear", CacheClearHandler(cache: cache, pages: pages), nonBlocking: true)
        broker.register("page.identity", PageIdentityHandler(), nonBlocking: true)
        broker.register("page.cookie", PageCookieHandler(jar: cookies), nonBlocking: true)
        broker.register("cookies.get", CookiesGetHandler(jar: cookies), nonBlocking: true)
        broker.register("cookies.set", CookiesSetHandler(jar: cookies), nonBlocking: true)
        broker.register("cookies.clear", CookiesClearHandler(jar: cookies), nonBlocking: true)
        var socket = WebSocketServerConfiguration()
        socket.host = configuration.host
        socket.port = configuration.port
        socket.allowedOrigins = configuration.allowedOrigins
        socket.token = configuration.token
        socket.webRoot = configuration.webRoot ?? BrokerServerConfiguration.findWebRoot()
        socket.diagnosticEcho = configuration.diagnosticEcho
        socket.shimMaxAge = configuration.shimMaxAge
        socket.idlePollNeedsSpareCPU = configuration.idlePollNeedsSpareCPU
        socket.upstream = serviceUpstream
        socket.jobs = jobs
        socket.earlyDeadline = configuration.earlyDeadline
        socket.idlePollMicroseconds = min(max(0, configuration.idlePollMicroseconds), BrokerServerConfiguration.maxIdlePollMicroseconds)
        if let metrics {
            let cache = self.cache
            socket.metrics = { traffic in metrics.exposition(cache: cache, traffic: traffic) }
        }
        webSocket = WebSocketServer(broker: broker, configuration: socket, logger: logger)
    }

    /// Upstream exchanges (origin requests) the broker has started since it was created.
    public var upstreamRequestCount: Int { upstreamCounter.count }
    private let upstreamCounter: CountingUpstreamClient

    /// The port the server listens on, once started.
    public var port: Int { webSocket.port }

    /// The wakes of the WebSocket service thread since start: pipe writes, and wakes that found
    /// it polling (`idlePollMicroseconds`), which cost no system call.
    public var serviceWakes: (pipe: Int, doorbell: Int) { webSocket.serviceWakes }

    /// `ws://host:port/bridge`.
    public var bridgeURL: String { "ws://\(configuration.host):\(port)/bridge" }

    /// Opens the broker's files and starts listening.
    public func start() throws {
        guard Self.isLoopback(configuration.host) || ProcessInfo.processInfo.environment["BRIDGE_BROKER_ALLOW_NON_LOOPBACK"] == "1" else {
            throw WebSocketServerError(description: "\(configuration.host) is not a loopback address; the broker listens on loopback only")
        }
        if webSocket.configuration.webRoot == nil {
            logger.warning("no bridge-js/bridge.js found: /bridge.js and /examples/ will answer 404 (use --web-root)")
        }
        try webSocket.start()
    }

    /// Closes every connection with 1001, cancels work in flight and releases upstream connections.
    public func shutdown() async {
        await webSocket.shutdown()
        await cache.waitForBackgroundWork()
        await upstream.shutdown()
    }

    /// Starts, then serves until SIGINT or SIGTERM, then shuts down cleanly.
    public func run() async throws {
        try start()
        await Self.waitForTerminationSignal()
        logger.info("shutting down")
        await shutdown()
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host.hasPrefix("127.") || host == "::1"
    }

    /// A store on the broker's database, or nil (logged: "`what` could not be opened, `otherwise`")
    /// when it cannot be opened: the broker then runs with that state in memory only.
    static func opened<Store>(_ what: String, _ otherwise: String, _ logger: Logger, _ open: () throws -> Store) -> Store? {
        do {
            return try open()
        } catch {
            logger.error("\(what) could not be opened, \(otherwise): \(error)")
            return nil
        }
    }

    /// Suspends until the process receives SIGINT or SIGTERM.
    public static func waitForTerminationSignal() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once = OnceFlag()
            var sources: [DispatchSourceSignal] = []
            for number in [SIGINT, SIGTERM] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler {
                    if once.claim() { continuation.resume() }
                }
                source.resume()
                sources.append(source)
            }
            SignalSources.keep(sources)
        }
    }
}
