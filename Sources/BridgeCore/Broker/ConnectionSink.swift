/// The transport side of one client connection, as the broker sees it.
///
/// The WebSocket adapter implements it; tests use an in-memory one. Every method may be called
/// from any thread.
public protocol ConnectionSink: AnyObject, Sendable {
    /// Queues one frame; it never blocks. Frames leave in the order they were queued.
    func send(_ bytes: [UInt8], binary: Bool)
    /// Free bytes the transport wants in front of a frame given to `send(framed:binary:)`.
    var frameHeadroom: Int { get }
    /// Queues one frame built after `frameHeadroom` free bytes; the transport may keep its
    /// storage as it is instead of copying the frame. Ordered with `send(_:binary:)`.
    func send(framed: FrameBuffer, binary: Bool)
    /// The largest frame (bytes after the headroom) whose bytes the transport leaves as they are
    /// once it has it: it writes only into the headroom of a frame up to this size. A producer
    /// that keeps reading a frame it handed over (the cache writer writing it to a body file)
    /// makes frames no larger. Int.max for a transport that never writes into a frame.
    var largestIntactFrame: Int { get }
    /// Suspends while the connection's queue of unsent bytes is over its high-water mark.
    func waitUntilWritable() async
    /// Whether the connection's queue of unsent bytes is at or under its high-water mark now:
    /// work that sends without waiting (an immediate cache hit) checks it first.
    var isWritable: Bool { get }
    /// Closes the connection with a WebSocket status code once queued frames have left.
    func close(code: UInt16, reason: String)
    /// Stops (`true`) or resumes (`false`) reading frames from the client: backpressure.
    func pauseReading(_ paused: Bool)
}

extension ConnectionSink {
    /// No headroom: a sink that does not ask for it gets plain frames.
    public var frameHeadroom: Int { 0 }

    /// A sink that copies frames out (`send(framed:binary:)` below) never writes into them.
    public var largestIntactFrame: Int { .max }

    /// Always writable: a sink without a send queue of its own.
    public var isWritable: Bool { true }

    /// Copies the frame out of its headroom and sends it with `send(_:binary:)`.
    public func send(framed: FrameBuffer, binary: Bool) {
        send(framed.bytes, binary: binary)
    }
}

/// What the broker knows about a connection from its handshake.
public struct ConnectionInfo: Sendable, Equatable {
    /// The handshake's `Origin`, or nil for a non-browser client.
    public var origin: String?
    /// The peer's address, for logs.
    public var peer: String
    /// Whether a web page is on the other end: a handshake with `Origin`, or a transport that
    /// says so (the WKWebView transport has no handshake). A page may not set identity headers
    /// (`Cookie`, `Origin`, `Referer`, `User-Agent`...) and may not read the cookie jar.
    public var isPage: Bool
    /// The handshake's `User-Agent`, the fallback for a page's until `page.identity` arrives.
    public var userAgent: String?
    /// The handshake's `Accept-Language`, the fallback for a page's until `page.identity` arrives.
    public var acceptLanguage: String?

    /// Creates connection info; `isPage` defaults to whether the handshake had an `Origin`.
    public init(origin: String?, peer: String, isPage: Bool? = nil, userAgent: String? = nil, acceptLanguage: String? = nil) {
        self.origin = origin
        self.peer = peer
        self.isPage = isPage ?? (origin != nil)
        self.userAgent = userAgent
        self.acceptLanguage = acceptLanguage
    }
}
