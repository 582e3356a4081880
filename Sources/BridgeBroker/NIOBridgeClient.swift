import BridgeCore
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// A bridge protocol client on SwiftNIO's WebSocket codec, for the fetch benchmarks.
///
/// The libwebsockets client parses received frames a byte at a time (about 130 MB/s here), which
/// would make a 1 MiB fetch benchmark measure the client. NIO's decoder takes payloads in bulk, as
/// a browser does, so the figures are the broker's.
final class NIOBridgeClient: @unchecked Sendable {
    private let channel: any Channel
    private let handler: BridgeFrameHandler

    private init(channel: any Channel, handler: BridgeFrameHandler) {
        self.channel = channel
        self.handler = handler
    }

    /// Connects to `ws://127.0.0.1:port/bridge` and waits for the hello.
    ///
    /// The broker sends its hello right after the `101` response, so both often arrive in one
    /// read, the more often the more loaded the machine. NIO's HTTP decoder drops the bytes after
    /// the response when it is removed at the upgrade, unless told to forward them
    /// (`leftOverBytesStrategy`); with the default, the hello was lost in about half the
    /// connections on a loaded machine and nearly all of them under a load average of 20. A
    /// connection that still shows no hello within five seconds is made again, five times at most.
    static func connect(port: Int) async throws -> NIOBridgeClient {
        var attempts = 0
        while true {
            attempts += 1
            do {
                return try await open(port: port, within: .seconds(5))
            } catch let error as BridgeError where error.code == .timeout && attempts < 5 {
                continue
            }
        }
    }

    private static func open(port: Int, within limit: TimeAmount) async throws -> NIOBridgeClient {
        let handler = BridgeFrameHandler()
        let upgraded = MultiThreadedEventLoopGroup.singleton.next().makePromise(of: Void.self)
        // Completing a completed promise does nothing: these only fire if the hello is late.
        let late = BridgeError(.timeout, "no hello from the broker on port \(port)")
        upgraded.futureResult.eventLoop.scheduleTask(in: limit) { upgraded.fail(late) }
        handler.hello.futureResult.eventLoop.scheduleTask(in: limit) { handler.hello.fail(late) }
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                let request = UpgradeRequestHandler(port: port)
                let upgrader = NIOWebSocketClientUpgrader(maxFrameSize: 1 << 26, automaticErrorHandling: true) { channel, _ in
                    // No frame aggregator: a browser's or AsyncHTTPClient's reader does not copy a
                    // body's pieces together either, so neither side of the comparison does.
                    channel.pipeline.addHandler(handler).map { upgraded.succeed(()) }
                }
                let configuration: NIOHTTPClientUpgradeConfiguration = (upgraders: [upgrader], completionHandler: { _ in
                    channel.pipeline.removeHandler(request, promise: nil)
                })
                return channel.pipeline.addHTTPClientHandlers(leftOverBytesStrategy: .forwardBytes, withClientUpgrade: configuration).flatMap { channel.pipeline.addHandler(request) }
            }
            .connect(host: "127.0.0.1", port: port).get()
        do {
            try await upgraded.futureResult.get()
            try await handler.hello.futureResult.get()
        } catch {
            try? await channel.close()
            throw error
        }
        return NIOBridgeClient(channel: channel, handler: handler)
    }

    /// Posts `fetch` with `body` and returns, once the reply arrives, the body bytes received in
    /// binary frames (for `responseBody: "binary"`) or else the reply's `bodyBytes`.
    func fetch(_ body: JSONValue) async throws -> Int {
        let (id, promise) = handler.register(on: channel.eventLoop)
        let frame = ServerMessageForClient.post(id: id, name: "fetch", body: body)
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: ByteBuffer(bytes: frame)), promise: nil)
        return try await promise.futureResult.get()
    }

    /// `fetch(body)`, failing unless the response's body had `size` bytes.
    func fetch(_ body: JSONValue, expecting size: Int) async throws {
        let received = try await fetch(body)
        guard received == size else { throw BridgeError(.internal, "short body: \(received) of \(size) bytes") }
    }

    func close() async {
        try? await channel.close()
    }
}

/// Encodes the one client frame the benchmark sends.
enum ServerMessageForClient {
    static func post(id: Int, name: String, body: JSONValue) -> [UInt8] {
        JSONValue.object(JSONObject([("type", "post"), ("name", .string(name)), ("id", .integer(id)), ("body", body)])).jsonBytes
    }
}

/// Matches replies to posts; counts binary body bytes per post.
final class BridgeFrameHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = WebSocketFrame
    let hello = MultiThreadedEventLoopGroup.singleton.next().makePromise(of: Void.self)
    private let lock = NSLock()
    private var nextID = 0
    private var pending: [Int: (promise: EventLoopPromise<Int>, bytes: Int)] = [:]
    /// The message whose fragments are arriving: binary (with the post's id) or text (collected).
    private var binaryID: Int?
    private var text: ByteBuffer?

    func register(on loop: any EventLoop) -> (Int, EventLoopPromise<Int>) {
        let promise = loop.makePromise(of: Int.self)
        let id = lock.withLock {
            nextID += 1
            pending[nextID] = (promise, 0)
            return nextID
        }
        return (id, promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .binary:
            var payload = frame.unmaskedData
            guard let header = payload.readBytes(length: BinaryFrameHeader.size) else { return }
            let id = header[2..<10].reduce(0) { $0 << 8 | Int($1) }
            lock.withLock { pending[id]?.bytes += payload.readableBytes }
            binaryID = frame.fin ? nil : id
        case .text:
            text = frame.unmaskedData
            if frame.fin { textMessage() }
        case .continuation:
            if let id = binaryID {
                let count = frame.unmaskedData.readableBytes
                lock.withLock { pending[id]?.bytes += count }
                if frame.fin { binaryID = nil }
            } else if text != nil {
                var more = frame.unmaskedData
                text!.writeBuffer(&more)
                if frame.fin { textMessage() }
            }
        case .connectionClose:
            context.close(promise: nil)
        default:
            break
        }
    }

    /// Handles the text message collected in `text`: the hello, or a reply.
    private func textMessage() {
        guard let message = text else { return }
        text = nil
        guard let value = try? JSONParser.parse(Array(message.readableBytesView)) else { return }
        if value["type"] == "hello" {
            hello.succeed(())
            return
        }
        guard value["type"] == "reply", let id = value["id"]?.intValue else { return }
        guard let entry = lock.withLock({ pending.removeValue(forKey: id) }) else { return }
        if value["ok"] == true {
            // A binary body is counted as its frames arrived, so the caller checks what came.
            let binary = value["body"]?["bodyEncoding"] == "binary"
            entry.promise.succeed(binary ? entry.bytes : value["body"]?["bodyBytes"]?.intValue ?? entry.bytes)
        } else {
            entry.promise.fail(BridgeError(ErrorCode(value["error"]?["code"]?.stringValue ?? "internal"), value["error"]?["message"]?.stringValue ?? ""))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        let all = lock.withLock { () -> [EventLoopPromise<Int>] in
            defer { pending = [:] }
            return pending.values.map(\.promise)
        }
        all.forEach { $0.fail(BridgeError(.network, "the connection closed")) }
        hello.fail(BridgeError(.network, "the connection closed"))
    }
}

/// Sends the upgrade request once the channel is active.
final class UpgradeRequestHandler: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart
    let port: Int

    init(port: Int) { self.port = port }

    func channelActive(context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "127.0.0.1:\(port)")
        headers.add(name: "Sec-WebSocket-Protocol", value: "bridge.v1")
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/bridge", headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
