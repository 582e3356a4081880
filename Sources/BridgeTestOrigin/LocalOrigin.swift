import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A real HTTP/1.1 origin server on loopback for tests, benchmarks and demos.
///
/// Routes (all GET unless said):
/// - `/bytes/N`: N bytes of a repeating pattern, `application/octet-stream`, with Content-Length.
/// - `/text/N`: N bytes of `text/plain`.
/// - `/json`: a small JSON document.
/// - `/status/N`: status N with a short text body.
/// - `/redirect/N`: 302 to `/redirect/N-1`, ending at `/redirect/0` (200).
/// - `/redirect-to?url=U&status=S`: status S (302 by default) to U.
/// - `/slow?chunks=N&delay=MS&size=B`: N chunks of B bytes, MS apart, chunked encoding.
/// - `/reset`: closes the connection without answering; `/hang`: never answers.
/// - `/drop-next`: answers, and closes the connection unanswered at the next request on it (a
///   keep-alive connection the origin closed just as it was reused).
/// - `/echo` (any method): JSON with the method, path, headers, body length and FNV-1a hashes.
/// - `/multipart` (POST): the multipart/form-data fields and files it parsed, as JSON.
/// - `/gzip`: a gzip-encoded text body.
/// - `/count`: JSON of request counts by path.
/// - `/cached?cc=&etag=&lm=&vary=&size=`: Cache-Control, ETag, Last-Modified, Vary and 304s
///   for cache tests (see `OriginHandler+Cache.swift`).
/// - `/range/N?etag=&cc=`: N pattern bytes honouring `Range`, `If-Range` and `If-None-Match`
///   (206, 416, 304; see `OriginHandler+Range.swift`).
/// - `/headers?status=&body=&NAME=VALUE...`: any status, body and response headers.
/// - `/page?n=&size=&max-age=&broker=`: an HTML page with n `<link rel="preload">` resources
///   that loads them through the broker's shim; `/manifest?n=&size=&max-age=`: the same list as
///   a preload manifest (see `OriginHandler+Page.swift`).
/// - `/pageload?way=browser|shim|links&n=&size=&max-age=&broker=[&snippet=1]`: the page-load
///   benchmark's pages: the same page code with the browser's networking or the shim's (with the
///   shim's bootstrap snippet before it, when the origin was given one), and the hidden page of
///   `<link rel="preload">` tags (see `OriginHandler+PageLoad.swift`).
/// Every response gets `latency` of delay first, and a `Date` header unless it sets its own.
public final class LocalOrigin: Sendable {
    /// The port it listens on.
    public let port: Int
    private let channel: any Channel
    let counts: RequestCounter
    /// Delay added before every response.
    public let latency: Duration

    /// Starts an origin on 127.0.0.1 and an OS-chosen port (or `port`). `pageSnippet` is the text
    /// of the shim's bootstrap snippet (`bridge-js/bridge-snippet.js`) that `/pageload?snippet=1` inlines.
    public static func start(port: Int = 0, latency: Duration = .zero, pageSnippet: String? = nil) async throws -> LocalOrigin {
        let counts = RequestCounter()
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                counts.connectionOpened()
                channel.closeFuture.whenComplete { _ in counts.connectionClosed() }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(DateHeaderHandler())
                    try channel.pipeline.syncOperations.addHandler(OriginHandler(counts: counts, latency: latency, pageSnippet: pageSnippet))
                }
            }
        let channel = try await bootstrap.bind(host: "127.0.0.1", port: port).get()
        return LocalOrigin(channel: channel, counts: counts, latency: latency)
    }

    private init(channel: any Channel, counts: RequestCounter, latency: Duration) {
        self.channel = channel
        self.port = channel.localAddress?.port ?? 0
        self.counts = counts
        self.latency = latency
    }

    /// `http://127.0.0.1:PORT` + `path`.
    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// How many requests reached `path` (without the query).
    public func requestCount(_ path: String) -> Int { counts.value.withLock { $0[path] ?? 0 } }

    /// All request counts by path.
    public var requestCounts: [String: Int] { counts.value.withLock { $0 } }

    /// Forgets the request counts (and the peak of open connections).
    public func resetCounts() {
        counts.value.withLock { $0 = [:] }
        counts.connections.withLock { $0.peak = $0.open }
    }

    /// The most client connections that were open at once (since the last `resetCounts`).
    public var peakConnections: Int { counts.connections.withLock { $0.peak } }

    /// The client connections accepted since the origin started.
    public var acceptedConnections: Int { counts.connections.withLock { $0.accepted } }

    /// Stops listening.
    public func stop() async {
        try? await channel.close()
    }
}

/// The FNV-1a 64-bit hash of `bytes`: a cheap fingerprint for checking bodies byte for byte.
public func fnv1a(_ bytes: some Sequence<UInt8>) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in bytes {
        hash ^= UInt64(byte)
        hash = hash &* 0x100_0000_01b3
    }
    return hash
}

/// The byte at `index` of the `/bytes/N` pattern: it repeats every 65,521 bytes (a prime, so
/// chunks of power-of-two sizes never line up with it).
public func patternByte(_ index: Int) -> UInt8 { patternTable[index % patternPeriod] }

/// `count` bytes of the pattern starting at `offset`.
public func patternBytes(from offset: Int, count: Int) -> [UInt8] {
    var result: [UInt8] = []
    result.reserveCapacity(count)
    var position = offset % patternPeriod
    while result.count < count {
        let take = min(count - result.count, patternPeriod - position)
        result += patternTable[position..<(position + take)]
        position = 0
    }
    return result
}

/// The `/bytes/N` body from its start as a buffer built once per size and shared (a
/// `ByteBuffer` is copied only when written to): the benchmarks' origin runs on the machine it
/// measures, so building a 1 MiB body twice per request (the pattern, then the buffer) took CPU
/// from both sides of a comparison, more from the side with more threads to run.
func patternBuffer(count: Int) -> ByteBuffer {
    if let buffer = patternBuffers.withLock({ $0[count] }) { return buffer }
    let buffer = ByteBuffer(bytes: patternBytes(from: 0, count: count))
    patternBuffers.withLock { buffers in
        if buffers.count >= 16 { buffers.removeAll() }
        buffers[count] = buffer
    }
    return buffer
}

private let patternBuffers = Mutex<[Int: ByteBuffer]>([:])

let patternPeriod = 65_521
let patternTable: [UInt8] = (0..<patternPeriod).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }

/// Request counts by path, shared by the origin's connections.
final class RequestCounter: Sendable {
    let value = Mutex<[String: Int]>([:])
    /// Client connections open now, and the most open at once.
    let connections = Mutex<(open: Int, peak: Int, accepted: Int)>((0, 0, 0))

    func connectionOpened() { connections.withLock { $0.open += 1; $0.accepted += 1; $0.peak = max($0.peak, $0.open) } }
    func connectionClosed() { connections.withLock { $0.open -= 1 } }
}
