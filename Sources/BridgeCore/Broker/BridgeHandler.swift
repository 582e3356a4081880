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

/// A handler that answers some posts at once, on the connection's own thread, and the rest in a
/// task through `handle`.
///
/// `handleImmediately` runs while the transport delivers frames, so it must never block or
/// wait. It returns nil to leave the post to `handle`, and then must not have sent anything
/// for it; otherwise it has sent the post's events through the call (`sendEventNow`,
/// `sendBodyNow`) and returns the answer. The post counts as in flight meanwhile, as any other.
public protocol ImmediateBridgeHandler: BridgeHandler {
    /// Answers `call` at once, or returns nil to have `handle` run in a task.
    func handleImmediately(_ call: HandlerCall) -> ImmediateReply?
}

/// How an immediate handler answers a post.
public enum ImmediateReply: Sendable {
    /// A reply body.
    case body(JSONValue)
    /// A reply body already encoded as compact JSON text; it goes into the reply as it is.
    case encodedBody([UInt8])
    /// A failed post.
    case failure(BridgeError)
    /// The reply as a whole-response binary frame (`BinaryFrameHeader.wholeResponseFrame`), which
    /// the client asked for: it goes out where the reply would, and is the post's last frame.
    case wholeResponse(FrameBuffer)
}

extension ImmediateReply {
    /// The error code of a failed post, nil for a reply with a body.
    var errorCode: ErrorCode? {
        if case .failure(let error) = self { return error.code }
        return nil
    }
}
