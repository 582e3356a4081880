/// A named native handler: a JSON body in, a JSON reply out.
///
/// `handle` runs in its own task. Throw a `BridgeError` to fail the post with a specific code;
/// any other error is reported as `internal`. When the client cancels or disconnects, the task is
/// cancelled: long work should check `Task.isCancelled` or use cancellable awaits.
public protocol BridgeHandler: Sendable {
    /// Handles one post and returns the reply body.
    func handle(_ call: HandlerCall) async throws -> JSONValue
}

/// A handler so quick it runs on the connection's own thread, with no task and no hop.
///
/// Only for work that never blocks (the `echo` handler is one). The broker calls
/// `handleInline` instead of `handle`.
public protocol InlineBridgeHandler: BridgeHandler {
    /// Handles one post synchronously.
    func handleInline(_ body: JSONValue) throws(BridgeError) -> JSONValue
}

extension InlineBridgeHandler {
    public func handle(_ call: HandlerCall) async throws -> JSONValue {
        try handleInline(call.body)
    }
}

/// A handler made of a closure, for `Broker.register(_:_:)`.
struct ClosureHandler: BridgeHandler {
    let body: @Sendable (HandlerCall) async throws -> JSONValue

    func handle(_ call: HandlerCall) async throws -> JSONValue {
        try await body(call)
    }
}

/// Replies with the post's body: diagnostics and benchmarks.
public struct EchoHandler: InlineBridgeHandler {
    /// Creates the echo handler.
    public init() {}

    public func handleInline(_ body: JSONValue) throws(BridgeError) -> JSONValue { body }
}
