/// The port through which the broker performs one HTTP exchange upstream.
///
/// One call is one hop: the broker follows redirects itself so it can check every hop's URL.
/// The adapter resolves the host, asks `addressAllowed` about each address before connecting
/// to it, and throws `BridgeError` (`forbidden`, `network`, `timeout`) for exchanges that
/// produce no response.
public protocol UpstreamClient: Sendable {
    /// Sends `request` and returns once the response's headers have arrived.
    func send(_ request: UpstreamRequest) async throws -> UpstreamResponse
}

/// One upstream request.
public struct UpstreamRequest: Sendable {
    /// The absolute http(s) URL.
    public var url: String
    /// The method, upper-case for the standard ones.
    public var method: String
    /// The header fields to send, already sanitised.
    public var headers: HeaderList
    /// The body to send.
    public var body: UpstreamRequestBody
    /// The same body again, from its start, for a request the adapter must send a second time
    /// (a keep-alive connection the origin closed before answering); nil when it cannot be
    /// made again (a body streamed by the client). A request without a body needs none.
    public var bodyAgain: (@Sendable () -> UpstreamRequestBody)?

    /// Whether the request can go out a second time: it has no body, or its body can be made again.
    public var canBeSentAgain: Bool {
        if case .none = body { return true }
        return bodyAgain != nil
    }
    /// When the whole exchange must have ended.
    public var deadline: ContinuousClock.Instant
    /// Whether the broker may connect to this textual IP address.
    public var addressAllowed: @Sendable (String) -> Bool
    /// Whether an allow pattern names the URL, so `addressAllowed` admits every address: an
    /// adapter may then leave the name to a proxy instead of resolving it.
    public var anyAddressAllowed: Bool

    /// Creates a request.
    public init(
        url: String, method: String = "GET", headers: HeaderList = HeaderList(), body: UpstreamRequestBody = .none,
        deadline: ContinuousClock.Instant, addressAllowed: @escaping @Sendable (String) -> Bool = { _ in true },
        anyAddressAllowed: Bool = false, bodyAgain: (@Sendable () -> UpstreamRequestBody)? = nil
    ) {
        self.anyAddressAllowed = anyAddressAllowed
        self.bodyAgain = bodyAgain
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.deadline = deadline
        self.addressAllowed = addressAllowed
    }
}

/// A request body: none, bytes in memory, or a stream pulled chunk by chunk.
public enum UpstreamRequestBody: Sendable {
    /// No body.
    case none
    /// A body held in memory; `onSent` hears each chunk's size as it is written.
    case bytes([UInt8])
    /// A body pulled chunk by chunk until `next` returns nil; `length` when known.
    case stream(length: Int?, next: @Sendable () async throws -> [UInt8]?)
}

/// One upstream response, its body still to be read.
public struct UpstreamResponse: Sendable {
    /// The status code.
    public var status: Int
    /// The reason phrase.
    public var statusText: String
    /// The header fields as received.
    public var headers: HeaderList
    /// The address the response came from, when known.
    public var remoteAddress: String?
    /// The body; it must be read to its end or dropped.
    public var body: UpstreamResponseBody

    /// Creates a response.
    public init(status: Int, statusText: String, headers: HeaderList, remoteAddress: String? = nil, body: UpstreamResponseBody) {
        self.status = status
        self.statusText = statusText
        self.headers = headers
        self.remoteAddress = remoteAddress
        self.body = body
    }
}

/// A response body pulled chunk by chunk; dropping it before the end abandons the transfer.
///
/// A body read from the network may also offer `nextFrame`, which copies each chunk straight
/// into a `FrameBuffer` with room for a frame header and the transport's headroom in front: a
/// binary response then reaches the client with one copy of its bytes instead of two. Both pull
/// from the same source, so a reader uses one or the other.
public struct UpstreamResponseBody: Sendable {
    /// Pulls the next chunk into a frame with `headroom` free bytes in front, at most `limit`
    /// bytes of it; nil at the end.
    public typealias FramePull = @Sendable (_ headroom: Int, _ limit: Int) async throws -> FrameBuffer?

    /// The next chunk (decoded: content codings are removed), or nil at the end.
    public let next: @Sendable () async throws -> [UInt8]?
    /// The next chunk as a frame payload (see `FramePull`), when the source can fill frames.
    public let nextFrame: FramePull?
    /// Whether `Content-Encoding` was decoded, so Content-Length does not count these bytes.
    public let decoded: Bool
    /// The exact byte count of `next`'s chunks when known (a stored body), else nil.
    public let length: Int?

    /// Creates a body from a pull function, and optionally a frame-filling one over the same source.
    public init(decoded: Bool = false, length: Int? = nil, nextFrame: FramePull? = nil, next: @escaping @Sendable () async throws -> [UInt8]?) {
        self.next = next
        self.nextFrame = nextFrame
        self.decoded = decoded
        self.length = length
    }

    /// An empty body.
    public static let empty = UpstreamResponseBody { nil }
}

/// A content-coding decoder (gzip, deflate) fed the encoded bytes as they arrive.
public protocol BodyDecoder: AnyObject {
    /// The decoded bytes of `bytes`.
    func decode(_ bytes: UnsafeRawBufferPointer) throws -> [UInt8]
    /// What is left at the end; throws when the encoded stream was cut short.
    func finish() throws -> [UInt8]
}
