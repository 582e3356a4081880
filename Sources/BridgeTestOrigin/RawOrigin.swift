import NIOCore
import NIOPosix

/// An origin that answers every request with the same bytes, written as they are, then closes
/// the connection: for responses no HTTP server library would send (a malformed head, a broken
/// chunked body, a body shorter than its `Content-Length`, an endless head).
public final class RawOrigin: Sendable {
    /// The port it listens on.
    public let port: Int
    private let channel: any Channel

    /// Starts on 127.0.0.1 and an OS-chosen port; each connection gets `response` once the end
    /// of a request head (a blank line) has arrived.
    public static func start(response: [UInt8]) async throws -> RawOrigin {
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(RawAnswer(response: response))
                }
            }
        let channel = try await bootstrap.bind(host: "127.0.0.1", port: 0).get()
        return RawOrigin(channel: channel)
    }

    private init(channel: any Channel) {
        self.channel = channel
        port = channel.localAddress?.port ?? 0
    }

    /// `http://127.0.0.1:PORT` + `path`.
    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Stops listening.
    public func stop() async {
        try? await channel.close()
    }
}

private final class RawAnswer: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let response: [UInt8]
    var received: [UInt8] = []
    var answered = false

    init(response: [UInt8]) { self.response = response }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        received += buffer.readBytes(length: buffer.readableBytes) ?? []
        guard !answered, received.count >= 4, received.suffix(4) == Array("\r\n\r\n".utf8) else { return }
        answered = true
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: response))).whenComplete { _ in
            context.close(promise: nil)
        }
    }
}
