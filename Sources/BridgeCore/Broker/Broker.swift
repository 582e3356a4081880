import Logging
import Synchronization

/// The bridge broker: a registry of named handlers and the protocol engine for connections.
///
/// A host application creates one, registers its handlers, and hands it to a transport (the
/// WebSocket server), which calls `connect` for every accepted connection. Registration is meant
/// for start-up; a handler registered later is seen by connections opened after it.
public final class Broker: Sendable {
    /// The limits announced and enforced.
    public let configuration: BrokerConfiguration
    let logger: Logger
    /// The broker-wide progress stream every request reports into (`progress.subscribe`).
    public let progress: ProgressHub
    /// Where posts, requests and preloads are reported for operators' metrics, if anywhere.
    public let metrics: (any BrokerMetrics)?
    /// The posts' deadlines, on one timer (`HandlerCall.withDeadline`).
    let deadlines = DeadlineTimer()
    private let handlers = Mutex<[String: Registered]>([:])

    /// A handler and the meter its posts report to.
    struct Registered {
        let handler: any BridgeHandler
        let meter: (any PostMeter)?
        /// The handler as the protocols a post checks for, cast once here instead of per post
        /// (an existential cast looks the conformance up: 0.4% of a 1 KiB fetch's samples).
        let inline: (any InlineBridgeHandler)?
        let immediate: (any ImmediateBridgeHandler)?
        /// Whether its posts may run on the connections' executors (`register(_:_:nonBlocking:)`).
        let nonBlocking: Bool

        init(handler: any BridgeHandler, meter: (any PostMeter)?, nonBlocking: Bool) {
            self.handler = handler
            self.meter = meter
            self.nonBlocking = nonBlocking
            inline = handler as? any InlineBridgeHandler
            immediate = handler as? any ImmediateBridgeHandler
        }
    }

    /// Where the posts' tasks run: each connection takes the next of these in turn and runs
    /// there the posts of its handlers registered `nonBlocking`; empty, or for other handlers,
    /// they run on the global executor.
    let taskExecutors: [any TaskExecutor]

    /// Creates a broker with the `echo` handler registered, reporting to `metrics` if given.
    ///
    /// With `taskExecutors`, each connection's posts run on one of them (connections take them
    /// in turn): the broker server passes one per upstream event loop, so a fetch's task runs
    /// where its upstream connection is (`EventLoopTaskExecutor`).
    public init(
        configuration: BrokerConfiguration = BrokerConfiguration(), logger: Logger = Logger(label: "bridge.broker"),
        metrics: (any BrokerMetrics)? = nil, taskExecutors: [any TaskExecutor] = []
    ) {
        self.taskExecutors = taskExecutors
        self.configuration = configuration
        self.logger = logger
        self.metrics = metrics
        self.progress = ProgressHub(metrics: metrics)
        register("echo", EchoHandler(), nonBlocking: true)
    }

    /// Registers `handler` under `name`, replacing any handler of that name.
    ///
    /// `nonBlocking`: the handler never holds its thread (it waits only by awaiting), so its posts
    /// may run on the connections' executors (`taskExecutors`: in the broker server, the WebSocket
    /// service thread, where one post that blocked would hold every connection's traffic). The
    /// broker's own handlers are; a host's handlers run on the global executor unless they say so.
    public func register(_ name: String, _ handler: any BridgeHandler, nonBlocking: Bool = false) {
        let registered = Registered(handler: handler, meter: metrics?.postMeter(handler: name), nonBlocking: nonBlocking)
        handlers.locked { $0[name] = registered }
    }

    /// Registers a closure as the handler `name`.
    ///
    /// The closure gets the post's body, can send events through the call and returns the reply
    /// body; throw `BridgeError` to fail with a protocol code.
    public func register(_ name: String, _ body: @escaping @Sendable (HandlerCall) async throws -> JSONValue) {
        register(name, ClosureHandler(body: body))
    }

    /// The registered handler names, sorted.
    public var handlerNames: [String] {
        handlers.locked { $0.keys.sorted() }
    }

    func handler(named name: String) -> Registered? {
        handlers.locked { $0[name] }
    }

    /// Starts the protocol on a new connection: sends `hello` and returns the object the
    /// transport feeds with the connection's frames.
    public func connect(sink: any ConnectionSink, info: ConnectionInfo) -> BrokerConnection {
        let connection = BrokerConnection(broker: self, sink: sink, info: info)
        sink.send(
            ServerMessage.hello(broker: configuration.brokerName, handlers: handlerNames, limits: configuration.limitsJSON),
            binary: false
        )
        return connection
    }
}
