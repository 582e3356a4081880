import BridgeCore
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTPCompression
import NIOPosix

/// Sends `http` requests to an HTTP proxy in absolute form (`GET http://host/path HTTP/1.1`),
/// the way browsers and curl do, so that a caching proxy such as Squid can answer and store
/// them.
///
/// AsyncHTTPClient 1.37 tunnels every request through `CONNECT`, `http` ones included, which a
/// proxy cannot cache (and Squid's default configuration refuses for ports other than 443);
/// `https` requests do go through AsyncHTTPClient's `CONNECT` support. One connection per
/// request (`Connection: close`): the proxy is expected near the broker.
struct ForwardProxyClient: Sendable {
    let proxy: UpstreamProxy
    let group: any EventLoopGroup

    /// Sends `request` (an `http` URL whose host and port are given) through the proxy.
    func send(_ request: UpstreamRequest, host: String, port: Int?) async throws -> UpstreamResponse {
        let handlerBox = NIOLockedValueBox<ProxyExchangeHandler?>(nil)
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(.seconds(15))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelOption(.autoRead, value: false)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = ProxyExchangeHandler(eventLoop: channel.eventLoop)
                    handlerBox.withLockedValue { $0 = handler }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(NIOHTTPResponseDecompressor(limit: .none))
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: proxy.host, port: proxy.port).get()
        } catch {
            throw BridgeError(.network, "\(request.url): cannot reach the upstream proxy \(proxy): \(error)")
        }
        guard let handler = handlerBox.withLockedValue({ $0 }) else {
            channel.close(promise: nil)
            throw BridgeError(.internal, "the proxy connection has no handler")
        }
        let exchange = ProxyConnection(channel: channel, url: request.url)
        exchange.closeAt(request.deadline)
        do {
            return try await withTaskCancellationHandler {
                try await run(request, host: host, port: port, on: exchange, handler: handler)
            } onCancel: {
                exchange.close()
            }
        } catch {
            exchange.close()
            throw exchange.translate(error)
        }
    }

    private func run(
        _ request: UpstreamRequest, host: String, port: Int?, on exchange: ProxyConnection, handler: ProxyExchangeHandler
    ) async throws -> UpstreamResponse {
        let channel = exchange.channel
        var head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: request.method), uri: request.url)
        let hostName = host.contains(":") ? "[\(host)]" : host
        head.headers.add(name: "Host", value: port.map { "\(hostName):\($0)" } ?? hostName)
        for field in request.headers { head.headers.add(name: field.name, value: field.value) }
        if let authorization = proxy.authorization { head.headers.add(name: "Proxy-Authorization", value: authorization) }
        head.headers.add(name: "Connection", value: "close")
        switch request.body {
        case .none:
            if ["POST", "PUT", "PATCH"].contains(request.method) { head.headers.add(name: "Content-Length", value: "0") }
        case .bytes(let bytes):
            head.headers.add(name: "Content-Length", value: String(bytes.count))
        case .stream(let length, _):
            if let length {
                head.headers.add(name: "Content-Length", value: String(length))
            } else {
                head.headers.add(name: "Transfer-Encoding", value: "chunked")
            }
        }
        // The head is flushed with the first body part or the end, so a proxy that answers at
        // once (a cache hit) has the whole request first.
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        do {
            switch request.body {
            case .none: break
            case .bytes(let bytes):
                try await channel.writeAndFlush(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: bytes))))
            case .stream(_, let next):
                while let chunk = try await next() {
                    try await channel.writeAndFlush(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: chunk))))
                }
            }
            try await channel.writeAndFlush(HTTPClientRequestPart.end(nil))
        } catch let error as BridgeError {
            throw error
        } catch {
            // The proxy may answer (and close) before it read the whole body, e.g. to refuse it:
            // its response, if any, is the answer.
        }
        channel.read()
        let responseHead = try await handler.head.futureResult.get()
        var headers = HeaderList()
        // Values as byte strings (ByteString): this parser gives them decoded as UTF-8.
        for field in responseHead.headers { headers.add(field.name, ByteString.from(utf8Text: field.value)) }
        let encoding = headers["content-encoding"]?.lowercased()
        let decoded = encoding.map { ["gzip", "deflate", "x-gzip"].contains($0) } ?? false
        let body = ProxyBody(exchange: exchange, handler: handler)
        return UpstreamResponse(
            status: Int(responseHead.status.code), statusText: responseHead.status.reasonPhrase, headers: headers,
            body: UpstreamResponseBody(decoded: decoded) { try await body.next() })
    }
}

/// The proxy connection of one exchange: closed at the deadline, on cancellation, at the end
/// of the body, or when the body is dropped unread.
final class ProxyConnection: Sendable {
    let channel: any Channel
    let url: String
    private let state = NIOLockedValueBox((timedOut: false, timer: Scheduled<Void>?.none))

    init(channel: any Channel, url: String) {
        self.channel = channel
        self.url = url
    }

    func closeAt(_ deadline: ContinuousClock.Instant) {
        let remaining = deadline - ContinuousClock.now
        let nanoseconds = max(1, remaining.wholeNanoseconds)
        let timer = channel.eventLoop.scheduleTask(in: .nanoseconds(nanoseconds)) { [self] in
            state.withLockedValue { $0.timedOut = true }
            channel.close(promise: nil)
        }
        state.withLockedValue { $0.timer = timer }
    }

    func close() {
        state.withLockedValue { $0.timer }?.cancel()
        channel.close(promise: nil)
    }

    /// The broker's error for a failure of this exchange.
    func translate(_ error: any Error) -> any Error {
        if error is BridgeError || error is CancellationError { return error }
        if state.withLockedValue({ $0.timedOut }) { return BridgeError(.timeout, "\(url): the upstream exchange timed out") }
        return BridgeError(.network, "\(url): the exchange with the upstream proxy failed: \(error)")
    }
}

/// The response body read from the proxy; dropping it closes the connection.
final class ProxyBody: Sendable {
    let exchange: ProxyConnection
    let handler: ProxyExchangeHandler

    init(exchange: ProxyConnection, handler: ProxyExchangeHandler) {
        self.exchange = exchange
        self.handler = handler
    }

    func next() async throws -> [UInt8]? {
        let handler = self.handler
        while true {
            let chunk: ByteBuffer?
            do {
                chunk = try await exchange.channel.eventLoop.flatSubmit { handler.next() }.get()
            } catch {
                exchange.close()
                throw exchange.translate(error)
            }
            guard let chunk else {
                exchange.close()
                return nil
            }
            if chunk.readableBytes > 0 { return Array(chunk.readableBytesView) }
        }
    }

    deinit {
        exchange.close()
    }
}
