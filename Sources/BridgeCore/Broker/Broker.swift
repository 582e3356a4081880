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
    private let handlers = Mutex<[String: any BridgeHandler]>([:])

    /// Creates a broker with the `echo` handler registered.
    public init(configuration: BrokerConfiguration = BrokerConfiguration(), logger: Logger = Logger(label: "bridge.broker")) {
        self.configuration = configuration
        self.logger = logger
        self.progress = ProgressHub()
        register("echo", EchoHandler())
    }

    /// Registers `handler` under `name`, replacing any handler of that name.
    public func register(_ name: String, _ handler: any BridgeHandler) {
        handlers.withLock { $0[name] = handler }
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
        handlers.withLock { $0.keys.sorted() }
    }

    func handler(named name: String) -> (any BridgeHandler)? {
        handlers.withLock { $0[name] }
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
