/// A stable, snake_case protocol error code.
///
/// The codes PROTOCOL.md fixes are static members; a host handler may use codes of its own.
public struct ErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// Not a valid envelope.
    public static let badMessage = ErrorCode("bad_message")
    /// No handler is registered under the post's name.
    public static let unknownHandler = ErrorCode("unknown_handler")
    /// The handler rejected the body.
    public static let badRequest = ErrorCode("bad_request")
    /// A post reused the id of a post still in flight.
    public static let duplicateID = ErrorCode("duplicate_id")
    /// The connection already has `maxInFlight` posts in flight.
    public static let tooManyInFlight = ErrorCode("too_many_in_flight")
    /// The origin, token or URL is not allowed.
    public static let forbidden = ErrorCode("forbidden")
    /// Upstream was unreachable, refused or reset the connection.
    public static let network = ErrorCode("network")
    /// The post's time ran out.
    public static let timeout = ErrorCode("timeout")
    /// The client cancelled the post.
    public static let cancelled = ErrorCode("cancelled")
    /// `only-if-cached` and nothing usable is stored.
    public static let notCached = ErrorCode("not_cached")
    /// A message or body over a limit.
    public static let tooLarge = ErrorCode("too_large")
    /// A fault inside the broker.
    public static let `internal` = ErrorCode("internal")
}

/// An error that travels to the client as `{code, message}`.
///
/// Handlers throw it to fail a post with a specific code; any other error becomes `internal`
/// (or `cancelled` when the post was cancelled).
public struct BridgeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The protocol code.
    public var code: ErrorCode
    /// A sentence for people.
    public var message: String

    /// Creates an error with a code and a message.
    public init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    /// The `{code, message}` object.
    public var json: JSONValue { ["code": .string(code.rawValue), "message": .string(message)] }
}
