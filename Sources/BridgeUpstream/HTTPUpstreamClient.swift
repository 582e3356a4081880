import AsyncHTTPClient
import BridgeCore
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// The `UpstreamClient` the broker uses: AsyncHTTPClient, one hop per call, no automatic
/// redirects, gzip and deflate decoded, and every connection pinned to an address that the
/// URL rules allowed.
///
/// It resolves host names itself, asks the request's `addressAllowed` about each address, and
/// connects only to an allowed one (through AsyncHTTPClient's `dnsOverride`, so TLS still checks
/// the certificate against the host name).
///
/// With an `UpstreamProxy`, requests to hosts it does not bypass go through it (see
/// `HTTPUpstreamClient+Proxy.swift` for what is checked where).
public final class HTTPUpstreamClient: UpstreamClient {
    let group: any EventLoopGroup
    private let logger: Logger
    let resolver: HostResolver
    /// The proxy upstream requests go through, if any.
    public let proxy: UpstreamProxy?
    let forwarder: ForwardProxyClient?
    /// The most HTTP/1.1 connections kept open to one host (and port) at a time: a page's
    /// requests beyond it wait for a free connection, so a cold page of R resources behind an
    /// origin of latency L takes about ceil(R / N) * L.
    public let connectionsPerHost: Int
    // Clients are made on first use: AsyncHTTPClient traps if one is released unshut.
    private let clients = Mutex<ClientCache>(ClientCache())

    /// The most pinned clients kept; the least recently used is shut down beyond it.
    static let maxPinnedClients = 64

    /// The default `connectionsPerHost`: 16. A cold page of 30 resources behind an origin of
    /// 50 ms then takes two rounds of the latency instead of four with AsyncHTTPClient's own 8
    /// (`make bench-pageload`: 0.61x the browser's cold load against 0.86x). It bounds only a
    /// page's live requests to an HTTP/1.1 origin: HTTP/2 multiplexes them on one connection,
    /// and preloads keep their own `perHost` limit (docs/BENCHMARKS.md, "Connections per host").
    public static let defaultConnectionsPerHost = 16

    /// Creates the client on the shared event loop group, sending through `proxy` if given and
    /// opening at most `connectionsPerHost` HTTP/1.1 connections to one host (at least 1).
    public init(
        proxy: UpstreamProxy? = nil, connectionsPerHost: Int = HTTPUpstreamClient.defaultConnectionsPerHost,
        logger: Logger = Logger(label: "bridge.upstream")
    ) {
        precondition(connectionsPerHost >= 1, "connectionsPerHost must be at least 1")
        self.connectionsPerHost = connectionsPerHost
        self.group = MultiThreadedEventLoopGroup.singleton
        self.logger = logger
        self.resolver = HostResolver()
        self.proxy = proxy
        self.forwarder = proxy.flatMap { $0.kind == .http ? ForwardProxyClient(proxy: $0, group: MultiThreadedEventLoopGroup.singleton) : nil }
    }

    /// Shuts down every pooled connection.
    public func shutdown() async {
        let all = clients.locked { cache -> [HTTPClient] in
            defer {
                cache = ClientCache()
                cache.isShutDown = true
            }
            return cache.all
        }
        for client in all { try? await client.shutdown() }
    }

    static func makeClient(
        group: any EventLoopGroup, dnsOverride: [String: String], proxy: HTTPClient.Configuration.Proxy? = nil,
        connectionsPerHost: Int
    ) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connectionsPerHost
        configuration.proxy = proxy
        configuration.redirectConfiguration = .disallow
        configuration.decompression = .enabled(limit: .none)
        configuration.timeout = .init(connect: .seconds(15), read: nil)
        configuration.dnsOverride = dnsOverride
        configuration.httpVersion = .automatic
        // No spans: the default is swift-distributed-tracing's global tracer, a no-op one unless a
        // host app bootstraps another, and even the no-op span costs a Foundation URL parse and
        // its attributes per request.
        configuration.tracing.tracer = nil
        // A refused connection must fail the fetch at once, as in a browser, not after the
        // pool has retried for the whole connect timeout.
        configuration.connectionPool.retryConnectionEstablishment = false
        // Reason phrases and header values as sent, byte for byte (RawResponseHead).
        configuration.http1_1ConnectionDebugInitializer = { RawResponseHead.install(on: $0) }
        return HTTPClient(eventLoopGroupProvider: .shared(group), configuration: configuration)
    }

    public func send(_ request: UpstreamRequest) async throws -> UpstreamResponse {
        let host: String
        let port: Int?
        let secure: Bool
        if let parts = URLParts.ascii(request.url), let asciiHost = parts.host {
            // A plain ASCII URL: its host has nothing to decode (URLParts' fast path).
            (host, port, secure) = (asciiHost, parts.port, parts.scheme == "https")
        } else {
            guard let components = URLComponents(string: request.url), let rawHost = components.host else {
                throw BridgeError(.badRequest, "\(request.url) is not a valid URL")
            }
            // An IPv6 literal comes bracketed ("[::1]").
            host = rawHost.hasPrefix("[") && rawHost.hasSuffix("]") ? String(rawHost.dropFirst().dropLast()) : rawHost
            (port, secure) = (components.port, components.scheme?.lowercased() == "https")
        }
        if let proxy, !proxy.bypasses(host: host, port: port ?? (secure ? 443 : 80)) {
            return try await sendThroughProxy(request, proxy: proxy, host: host, port: port, secure: secure)
        }
        let client = try await pinnedClient(for: host, allowed: request.addressAllowed)
        return try await execute(request, on: client)
    }

    /// The addresses `host` resolves to (cached as the client's own lookups are).
    public func resolve(_ host: String) async throws -> [String] {
        try await resolver.resolve(host)
    }

    /// Sends `request` on `client` and wraps the response.
    func execute(_ request: UpstreamRequest, on client: HTTPClient) async throws -> UpstreamResponse {
        var outgoing = HTTPClientRequest(url: request.url)
        outgoing.method = HTTPMethod(rawValue: request.method)
        for field in request.headers { outgoing.headers.add(name: field.name, value: field.value) }
        outgoing.body = Self.outgoing(request.body)

        let remaining = request.deadline - ContinuousClock.now
        let nanoseconds = max(1, remaining.wholeNanoseconds)
        let deadline = NIODeadline.now() + .nanoseconds(nanoseconds)
        var resends = 0
        let response: HTTPClientResponse
        while true {
            do {
                response = try await client.execute(outgoing, deadline: deadline, logger: logger)
                break
            } catch let error as HTTPClientError where error == .remoteConnectionClosed && resends < Self.maxResends && request.canBeSentAgain {
                // A keep-alive connection the origin closed as this request went out on it, before
                // any byte of an answer: send it again (AsyncHTTPClient has dropped the connection).
                if let again = request.bodyAgain { outgoing.body = Self.outgoing(again()) }
                resends += 1
            } catch {
                throw HTTPUpstreamClient.translate(error, url: request.url)
            }
        }
        var headers = HeaderList()
        // HTTP/1 values are byte strings already (RawResponseHead); HTTP/2's come decoded as UTF-8.
        let http1 = response.version.major < 2
        for field in response.headers { headers.add(field.name, http1 ? field.value : ByteString.from(utf8Text: field.value)) }
        let encoding = headers["content-encoding"]?.lowercased()  // HeaderList trims values.
        let decoded = encoding.map { ["gzip", "deflate", "x-gzip"].contains($0) } ?? false
        let iterator = BodyIterator(response.body.makeAsyncIterator(), url: request.url)
        return UpstreamResponse(
            // HTTP/2 has no reason phrase: a browser shows "".
            status: Int(response.status.code), statusText: http1 ? response.status.reasonPhrase : "", headers: headers,
            body: UpstreamResponseBody(decoded: decoded, nextFrame: { try await iterator.nextFrame(headroom: $0, limit: $1) }) {
                try await iterator.next()
            }
        )
    }

    static func outgoing(_ body: UpstreamRequestBody) -> HTTPClientRequest.Body? {
        switch body {
        case .none: nil
        case .bytes(let bytes): .bytes(ByteBuffer(bytes: bytes))
        case .stream(let length, let next): .stream(PullSequence(next: next), length: length.map { .known(Int64($0)) } ?? .unknown)
        }
    }

    private func pinnedClient(for host: String, allowed: @Sendable (String) -> Bool) async throws -> HTTPClient {
        let key: String
        let override: [String: String]
        if IPAddress(host) != nil {
            guard allowed(host) else { throw HTTPUpstreamClient.refusal(host: host, addresses: [host]) }
            (key, override) = ("", [:])
        } else {
            let addresses = try await resolver.resolve(host)
            guard let address = addresses.first(where: allowed) else {
                throw HTTPUpstreamClient.refusal(host: host, addresses: addresses)
            }
            (key, override) = ("\(host)|\(address)", [host: address])
        }
        return try client(key: key, dnsOverride: override)
    }

    /// How often a request whose connection was closed before any byte of an answer is sent
    /// again: Chromium's `kMaxRetryAttempts` for a reused connection. A browser resends only on a
    /// reused connection; AsyncHTTPClient does not say whether it reused one, so an origin that
    /// closes every connection unanswered (`/reset`) is asked up to three times, not once.
    static let maxResends = 2

    /// The pooled client for `key`, made with these settings on first use.
    ///
    /// After `shutdown()` none is made: a request still on its way (a fetch the shutdown
    /// cancelled, say) would make one that nothing shuts down, and AsyncHTTPClient traps when such
    /// a client is released ("Client not shut down before the deinit"): the ASan test run crashed
    /// so once the test brokers were freed (issue #17).
    func client(key: String, dnsOverride: [String: String], proxy: HTTPClient.Configuration.Proxy? = nil) throws(BridgeError) -> HTTPClient {
        let made = clients.locked { cache -> (HTTPClient, evicted: HTTPClient?)? in
            guard !cache.isShutDown else { return nil }
            return cache.client(for: key) { HTTPUpstreamClient.makeClient(group: group, dnsOverride: dnsOverride, proxy: proxy, connectionsPerHost: connectionsPerHost) }
        }
        guard let (client, evicted) = made else { throw BridgeError(.network, "the upstream client is shut down") }
        if let evicted { Task { try? await evicted.shutdown() } }
        return client
    }

    static func refusal(host: String, addresses: [String]) -> BridgeError {
        BridgeError(.forbidden, "\(host) resolves to \(addresses.joined(separator: ", ")): loopback, private and link-local addresses need an --allow-url pattern")
    }

    static func translate(_ error: any Error, url: String) -> any Error {
        if error is BridgeError || error is CancellationError { return error }
        if let client = error as? HTTPClientError {
            switch client {
            case .deadlineExceeded, .readTimeout, .writeTimeout: return BridgeError(.timeout, "\(url): the upstream exchange timed out")
            case .connectTimeout: return BridgeError(.timeout, "\(url): connecting timed out")
            case .cancelled: return CancellationError()
            default: return BridgeError(.network, "\(url): \(client)")
            }
        }
        return BridgeError(.network, "\(url): \(error)")
    }
}

/// Pinned clients by host and address, least recently used first out.
struct ClientCache {
    private var entries: [String: HTTPClient] = [:]
    private var order: [String] = []
    /// Set by `HTTPUpstreamClient.shutdown()`: no client is made after it.
    var isShutDown = false

    var all: [HTTPClient] { Array(entries.values) }

    mutating func client(for key: String, make: () -> HTTPClient) -> (HTTPClient, evicted: HTTPClient?) {
        if let existing = entries[key] {
            order.removeAll { $0 == key }
            order.append(key)
            return (existing, nil)
        }
        let client = make()
        entries[key] = client
        order.append(key)
        var evicted: HTTPClient?
        if order.count > HTTPUpstreamClient.maxPinnedClients {
            let oldest = order.removeFirst()
            evicted = entries.removeValue(forKey: oldest)
        }
        return (client, evicted)
    }
}

/// Adapts the broker's pull function to the async sequence AsyncHTTPClient streams from.
struct PullSequence: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let next: @Sendable () async throws -> [UInt8]?

    struct AsyncIterator: AsyncIteratorProtocol {
        let next: @Sendable () async throws -> [UInt8]?
        mutating func next() async throws -> ByteBuffer? {
            guard let bytes = try await next() else { return nil }
            return ByteBuffer(bytes: bytes)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(next: next) }
}

/// The response body's iterator, used by one consumer at a time.
final class BodyIterator: @unchecked Sendable {
    private var iterator: HTTPClientResponse.Body.AsyncIterator
    private let url: String
    // What a frame had no room for, handed out first by the next pull.
    private var rest: ByteBuffer?

    init(_ iterator: HTTPClientResponse.Body.AsyncIterator, url: String) {
        self.iterator = iterator
        self.url = url
    }

    func next() async throws -> [UInt8]? {
        guard let buffer = try await nextBuffer() else { return nil }
        return Array(buffer.readableBytesView)
    }

    /// The next chunk copied straight into a frame (see `UpstreamResponseBody.FramePull`).
    func nextFrame(headroom: Int, limit: Int) async throws -> FrameBuffer? {
        guard var buffer = try await nextBuffer() else { return nil }
        let count = min(buffer.readableBytes, max(1, limit))
        let frame = FrameBuffer(headroom: headroom, capacity: count)
        buffer.withUnsafeReadableBytes { frame.append(contentsOf: UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
        buffer.moveReaderIndex(forwardBy: count)
        if buffer.readableBytes > 0 { rest = buffer }
        return frame
    }

    /// The next non-empty buffer: the rest of the last one first. Errors come out as the
    /// broker's (`network`, `timeout`, cancellation).
    private func nextBuffer() async throws -> ByteBuffer? {
        if let rest {
            self.rest = nil
            return rest
        }
        do {
            while let buffer = try await iterator.next() {
                if buffer.readableBytes > 0 { return buffer }
            }
            return nil
        } catch {
            throw HTTPUpstreamClient.translate(error, url: url)
        }
    }
}
