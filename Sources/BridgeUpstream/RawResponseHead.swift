import BridgeCore
import NIOCore
import NIOHTTP1

/// Response heads as they came off the wire (`RawResponseHead`, parsed in BridgeCore), which
/// SwiftNIO's parser does not keep: it drops the reason phrase (a known status gets its standard
/// phrase, an unknown one none) and decodes header values as UTF-8, replacing bytes that are not.
/// A browser shows both as sent, one character per byte, so the broker reads them here.
///
/// `RawHeadRecorder` sits before the response decoder and copies each head's bytes (it needs no
/// body framing: the decoder behind it says when a response ended); `RawHeadApplier` sits after
/// it and puts the raw reason phrase and values into the decoded head, as byte strings
/// (`ByteString`), with the status as `.custom` so the phrase is kept.
extension RawResponseHead {
    /// Adds both handlers around the HTTP/1.1 response decoder of an AsyncHTTPClient connection.
    static func install(on channel: any Channel) -> EventLoopFuture<Void> {
        channel.eventLoop.makeCompletedFuture {
            let sync = channel.pipeline.syncOperations
            // Without the decoder where it is expected the connection works as before, parsed by NIO alone.
            guard let decoder = try? sync.handler(type: ByteToMessageHandler<HTTPResponseDecoder>.self) else { return }
            let recorder = RawHeadRecorder()
            try sync.addHandler(recorder, position: .before(decoder))
            try sync.addHandler(RawHeadApplier(recorder: recorder), position: .after(decoder))
        }
    }
}

/// Copies response heads off the wire, before the decoder; see `RawResponseHead`.
final class RawHeadRecorder: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private var scanner = RawHeadScanner()
    /// Heads read and not yet matched with the decoder's, oldest first.
    var heads: [RawResponseHead] = []

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !scanner.inBody {
            let buffer = unwrapInboundIn(data)
            buffer.withUnsafeReadableBytes { heads += scanner.take($0) }
        }
        context.fireChannelRead(data)
    }

    /// The decoder passed a response's end: the next bytes start a head.
    func responseEnded() {
        scanner.responseEnded()
    }
}

/// Puts the raw reason phrase and header values into each decoded head; see `RawResponseHead`.
final class RawHeadApplier: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias InboundOut = HTTPClientResponsePart

    private let recorder: RawHeadRecorder

    init(recorder: RawHeadRecorder) {
        self.recorder = recorder
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(var head):
            guard !recorder.heads.isEmpty else { break }
            let raw = recorder.heads.removeFirst()
            // Interim and 101 heads keep NIO's status: AsyncHTTPClient compares it with `.switchingProtocols`.
            guard raw.code == Int(head.status.code), raw.code >= 200 else { break }
            head.status = .custom(code: head.status.code, reasonPhrase: ByteString.from(bytes: raw.reason))
            // The decoder keeps every field line in order; anything else means the heads do not match.
            if head.headers.count == raw.fields.count,
                zip(head.headers, raw.fields).allSatisfy({ $0.0.name.utf8.elementsEqual($0.1.name) })
            {
                head.headers = HTTPHeaders(raw.fields.map { (String(decoding: $0.name, as: UTF8.self), ByteString.from(bytes: $0.value)) })
            }
            context.fireChannelRead(wrapInboundOut(.head(head)))
            return
        case .end:
            recorder.responseEnded()
        case .body:
            break
        }
        context.fireChannelRead(data)
    }
}
