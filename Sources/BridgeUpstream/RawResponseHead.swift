import BridgeCore
import NIOCore
import NIOHTTP1

/// The bytes of HTTP/1.1 response heads as they came off the wire, which SwiftNIO's parser does
/// not keep: it drops the reason phrase (a known status gets its standard phrase, an unknown one
/// none) and decodes header values as UTF-8, replacing bytes that are not. A browser shows both as
/// sent, one character per byte, so the broker reads them here.
///
/// `RawHeadRecorder` sits before the response decoder and copies each head's bytes (it needs no
/// body framing: the decoder behind it says when a response ended); `RawHeadApplier` sits after
/// it and puts the raw reason phrase and values into the decoded head, as byte strings
/// (`ByteString`), with the status as `.custom` so the phrase is kept.
enum RawResponseHead {
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

    /// A head as sent: the status code, the reason phrase and the header fields, values trimmed.
    struct Head {
        var code: Int
        var reason: [UInt8]
        var fields: [(name: [UInt8], value: [UInt8])]
    }

    /// Parses one head (status line and field lines, without the blank line); nil when it is not one.
    static func parse(_ bytes: ArraySlice<UInt8>) -> Head? {
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line in
            line.last == UInt8(ascii: "\r") ? line.dropLast() : line
        }
        guard !lines.isEmpty else { return nil }
        let statusLine = lines.removeFirst()
        // "HTTP/1.1 299 Custom Reason": the reason is everything after the second space.
        let parts = statusLine.split(separator: UInt8(ascii: " "), maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].starts(with: Array("HTTP/".utf8)), parts[1].count == 3,
            let code = Int(String(decoding: parts[1], as: UTF8.self))
        else { return nil }
        let reason = parts.count == 3 ? Array(parts[2]) : []
        var fields: [(name: [UInt8], value: [UInt8])] = []
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            let value = line[line.index(after: colon)...].drop { $0 == 0x20 || $0 == 0x09 }
            let end = value.lastIndex { $0 != 0x20 && $0 != 0x09 }.map { value.index(after: $0) } ?? value.startIndex
            fields.append((Array(line[..<colon]), Array(value[..<end])))
        }
        return Head(code: code, reason: reason, fields: fields)
    }
}

/// Copies response heads off the wire, before the decoder; see `RawResponseHead`.
final class RawHeadRecorder: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// The largest head kept; a longer one is left to the decoder alone (which limits heads too).
    static let headLimit = 256 * 1024

    private var inBody = false
    private var pending: [UInt8] = []
    /// Heads read and not yet matched with the decoder's, oldest first.
    var heads: [RawResponseHead.Head] = []

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !inBody {
            var buffer = unwrapInboundIn(data)
            if let bytes = buffer.readBytes(length: buffer.readableBytes) { take(bytes) }
        }
        context.fireChannelRead(data)
    }

    /// The decoder passed a response's end: the next bytes start a head.
    func responseEnded() {
        inBody = false
        pending = []
    }

    private func take(_ bytes: [UInt8]) {
        pending += bytes
        while !inBody, let end = headEnd() {
            let head = pending[..<end.head]
            pending.removeFirst(end.next)
            guard let parsed = RawResponseHead.parse(head) else {
                pending = []
                return
            }
            heads.append(parsed)
            // An interim 1xx (not 101) is followed by another head; anything else by a body.
            if !(100..<200).contains(parsed.code) || parsed.code == 101 { inBody = true }
        }
        if inBody { pending = [] } else if pending.count > Self.headLimit { pending = [] }
    }

    /// Where the first complete head in `pending` ends, and where the bytes after it start.
    private func headEnd() -> (head: Int, next: Int)? {
        var index = pending.startIndex
        while let newline = pending[index...].firstIndex(of: UInt8(ascii: "\n")) {
            let after = pending.index(after: newline)
            if after < pending.endIndex, pending[after] == UInt8(ascii: "\n") { return (newline, after + 1) }
            if after + 1 < pending.endIndex, pending[after] == UInt8(ascii: "\r"), pending[after + 1] == UInt8(ascii: "\n") {
                return (newline, after + 2)
            }
            if after >= pending.endIndex { return nil }
            index = after
        }
        return nil
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
