import BridgeCore
import CLibWebSockets
import Foundation
import Logging
import Synchronization

/// Where and how the WebSocket server listens.
public struct WebSocketServerConfiguration: Sendable {
    /// The address to bind; loopback by default.
    public var host = "127.0.0.1"
    /// The port; 0 lets the OS choose (see `WebSocketServer.port`).
    public var port = 8787
    /// Origins allowed besides the broker's own; `*` allows any.
    public var allowedOrigins: [String] = []
    /// The token clients must present, if any.
    public var token: String?
    /// The directory holding `bridge-js/bridge.js` and `examples/`, served over HTTP.
    public var webRoot: String?
    /// Seconds a browser may reuse `/bridge.js` without revalidating it; 0 (the default) sends
    /// `no-cache`, so every page load asks (a 304 when unchanged).
    public var shimMaxAge = 0
    /// Serve the diagnostic echo endpoint `/echo`.
    public var diagnosticEcho = false
    /// Payload bytes per `lws_write` when a message is sent as fragments; also the most payload a
    /// body frame takes, and the size of the service thread's reads. 256 KiB (as large as a body
    /// frame may be, `BrokerConfiguration.binaryChunkBytes`): a 1 MiB body goes out in four
    /// frames, not eight, with fewer thread wakes (docs/BENCHMARKS.md, eighth session).
    public var fragmentBytes = 256 * 1024
    /// The Prometheus text `GET /metrics` answers (token-protected like the WebSocket), given the
    /// server's traffic; nil serves no `/metrics`. Called on the service thread: it must not wait.
    public var metrics: (@Sendable (ServerTraffic) -> [UInt8])?
    /// Microseconds the service thread keeps polling (servicing without sleeping in `poll()`)
    /// after its last event before it blocks; 0 blocks at once. While it polls, the frames other
    /// threads queue reach it without a wake-up (`ServiceLoop`).
    public var idlePollMicroseconds = 0
    /// Poll only while the machine has a CPU to spare (`ServiceLoop.SpareCPU`); tests turn it off.
    package var idlePollNeedsSpareCPU = true
    /// How long an early request's lookups may take (`EarlyPosts.deadline`); tests on a loaded
    /// machine give them longer.
    package var earlyDeadline = EarlyPosts.deadline
    /// Plain-HTTP upstream exchanges made on the service thread (`ServiceThreadUpstream`), given
    /// the connections of its protocol to serve.
    public var upstream: ServiceThreadUpstream?
    /// The executor whose jobs the service thread runs (`ServiceThreadExecutor`).
    public var jobs: ServiceThreadExecutor?

    /// Creates the default configuration.
    public init() {}
}

/// Errors starting the server.
public struct WebSocketServerError: Error, CustomStringConvertible {
    /// What went wrong.
    public let description: String

    /// Creates an error.
    public init(description: String) { self.description = description }
}

/// The broker's libwebsockets server: `/bridge` WebSocket sessions and plain HTTP on one port.
public final class WebSocketServer: SessionOwner, @unchecked Sendable {
    /// The broker every bridge session talks to.
    public let broker: Broker
    /// The configuration it was started with.
    public let configuration: WebSocketServerConfiguration
    let logger: Logger
    let loop: ServiceLoop
    /// Connections and bytes since start, counted on the service thread.
    let trafficCounters = TrafficCounters()
    let files: StaticFiles?
    private(set) var policy: HandshakePolicy
    private let pending = Mutex<[WebSocketSession]>([])
    private let portValue = Atomic<Int>(0)
    private var retained: [CString] = []
    private var protocols: UnsafeMutablePointer<lws_protocols>?

    // Service-thread state.
    var sessions: [UInt64: WebSocketSession] = [:]
    var nextSessionID: UInt64 = 0
    /// Early requests (`POST /bridge/early`) by connection, and by serial once their posts run.
    var earlyRequests: [OpaquePointer: EarlyRequest] = [:]
    var earlySerials: [UInt64: OpaquePointer] = [:]
    var nextEarlySerial: UInt64 = 0
    /// Answers of early requests, from the broker's threads to the service thread.
    let earlyAnswers = Mutex(EarlyAnswers())
    let shutdownRequested = Atomic<Bool>(false)
    var shuttingDown: Bool { shutdownRequested.load(ordering: .relaxed) }

    /// Creates a server for `broker`; call `start()` to listen.
    public init(broker: Broker, configuration: WebSocketServerConfiguration = WebSocketServerConfiguration(), logger: Logger = Logger(label: "bridge.websocket")) {
        self.broker = broker
        self.configuration = configuration
        self.logger = logger
        self.loop = ServiceLoop(
            name: "bridge-websocket", idlePoll: .microseconds(max(0, configuration.idlePollMicroseconds)),
            pollsOnlyWithSpareCPU: configuration.idlePollNeedsSpareCPU)
        self.files = configuration.webRoot.map { StaticFiles(root: $0, shimMaxAge: configuration.shimMaxAge) }
        self.policy = HandshakePolicy(host: configuration.host, port: configuration.port, allowedOrigins: configuration.allowedOrigins, token: configuration.token, diagnosticEcho: configuration.diagnosticEcho)
    }

    deinit {
        protocols?.deallocate()
    }

    /// The port the server listens on, known once `start()` returned.
    public var port: Int { portValue.load(ordering: .relaxed) }

    /// Binds the listening socket and starts the service thread.
    public func start() throws {
        let name = CString("bridge.v1")
        let host = CString(configuration.host)
        retained = [name, host]
        var bridge = lws_protocols()
        bridge.name = UnsafePointer(name.pointer)
        bridge.callback = serverCallback
        bridge.per_session_data_size = MemoryLayout<UInt64>.size
        bridge.rx_buffer_size = 64 * 1024
        bridge.tx_packet_size = configuration.fragmentBytes + Int(bridge_lws_pre())
        var raw = lws_protocols()
        raw.name = UnsafePointer(ServiceThreadUpstream.protocolName.pointer)
        raw.callback = upstreamCallback
        protocols = .table(configuration.upstream == nil ? [bridge] : [bridge, raw])

        var info = lws_context_creation_info()
        info.port = Int32(configuration.port)
        info.iface = UnsafePointer(host.pointer)
        info.protocols = UnsafePointer(protocols)
        info.gid = -1
        info.uid = -1
        info.options = bridge_lws_option_disable_ipv6() | bridge_lws_option_validate_utf8()
        info.pt_serv_buf_size = UInt32(configuration.fragmentBytes + 4096)
        info.max_http_header_data = 8192
        info.timeout_secs = 30
        info.user = Unmanaged.passUnretained(self).toOpaque()
        guard let context = ServiceLoop.createContext(&info) else {
            throw WebSocketServerError(description: "cannot listen on \(configuration.host):\(configuration.port) (in use, or not a local address)")
        }
        let vhost = lws_get_vhost_by_name(context, "default")
        let bound = vhost.map { Int(lws_get_vhost_listen_port($0)) } ?? configuration.port
        portValue.store(bound, ordering: .relaxed)
        policy = HandshakePolicy(host: configuration.host, port: bound, allowedOrigins: configuration.allowedOrigins, token: configuration.token, diagnosticEcho: configuration.diagnosticEcho)
        let loop = loop
        configuration.jobs?.attach { loop.wake() }
        configuration.upstream?.attach(loop: loop, context: context, vhost: vhost)
        loop.start(context: context, drain: { [self] in drainPending() }) { [self] in
            for session in sessions.values { session.closed() }
            sessions = [:]
            configuration.upstream?.detach()
            configuration.jobs?.runJobs()
        }
        logger.info("listening on http://\(configuration.host):\(bound) (WebSocket /bridge)")
    }

    /// Closes every connection with 1001 (cancelling their posts) and stops the service thread.
    ///
    /// Waits up to `grace` for clients to receive the close frame.
    public func shutdown(grace: Duration = .seconds(2)) {
        guard beginShutdown(grace: grace) else { return }
        loop.waitUntilFinished()
    }

    /// `shutdown(grace:)` for async callers: it suspends where the other blocks its thread, so a
    /// shutdown holds none of the cooperative pool's few threads while clients take their close.
    public func shutdown(grace: Duration = .seconds(2)) async {
        guard beginShutdown(grace: grace) else { return }
        await loop.finish()
    }

    /// Asks the service thread to close every connection with 1001 and to stop once the last
    /// has closed (`stopIfDrained`), or when `grace` is over; false when the server is not
    /// running or already stopping.
    private func beginShutdown(grace: Duration) -> Bool {
        guard loop.context != nil, !loop.isStopping else { return false }
        shutdownRequested.store(true, ordering: .relaxed)
        loop.wake()
        loop.requestStop(after: grace)
        return true
    }

    /// Service thread: during a shutdown, stops the loop once no connection is open.
    private func stopIfDrained() {
        if shuttingDown, openSessionCount == 0 { loop.requestStop() }
    }

    /// Blocks the calling thread until the server has been shut down.
    public func waitUntilStopped() {
        loop.waitUntilFinished()
    }

    private let openSessions = Atomic<Int>(0)
    var openSessionCount: Int { openSessions.load(ordering: .relaxed) }

    /// The wakes of the service thread since start: pipe writes, and wakes that found it polling.
    public var serviceWakes: (pipe: Int, doorbell: Int) { loop.wakeCounts }

    func sessionOpened() { openSessions.add(1, ordering: .relaxed) }
    func sessionClosed() {
        openSessions.subtract(1, ordering: .relaxed)
        stopIfDrained()
    }

    func scheduleService(of session: WebSocketSession) {
        // One wake-up per batch: until the service thread drains the list, the wake-up already
        // sent for its first session covers the ones queued after it.
        let first = pending.locked { list -> Bool in
            list.append(session)
            return list.count == 1
        }
        if first { loop.wake() }
    }

    /// Service thread: drains the sessions other threads asked to be serviced.
    func drainPending() {
        let (due, stopping) = pending.locked { list -> ([WebSocketSession], Bool) in
            defer { list = [] }
            return (list, shuttingDown)
        }
        for session in due { session.service() }
        configuration.upstream?.drain()
        configuration.jobs?.runJobs()
        drainEarlyAnswers()
        if stopping {
            for session in sessions.values { session.close(code: 1001, reason: "the broker is shutting down") }
            stopIfDrained()
        }
    }
}
