import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

final class OriginHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let counts: RequestCounter
    let latency: Duration
    /// The shim's bootstrap snippet (`bridge-js/bridge-snippet.js`), for `/pageload?snippet=1`.
    let pageSnippet: String?
    var head: HTTPRequestHead?
    var body: [UInt8] = []
    /// Set by `/drop-next`: the next request on this connection is dropped unanswered.
    var dropNext = false

    init(counts: RequestCounter, latency: Duration, pageSnippet: String? = nil) {
        self.counts = counts
        self.latency = latency
        self.pageSnippet = pageSnippet
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
        case .body(var buffer):
            body.append(contentsOf: buffer.readBytes(length: buffer.readableBytes) ?? [])
        case .end:
            guard let head else { return }
            let path = String(head.uri.split(separator: "?", maxSplits: 1).first ?? "")
            counts.value.withLock { $0[path, default: 0] += 1 }
            if dropNext {
                context.close(promise: nil)
                return
            }
            let request = OriginRequest(head: head, path: path, body: body)
            let delay = latency
            if delay > .zero {
                let nanos = delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
                context.eventLoop.scheduleTask(in: .nanoseconds(nanos)) { self.respond(context: context, to: request) }
            } else {
                respond(context: context, to: request)
            }
        }
    }

    func respond(context: ChannelHandlerContext, to request: OriginRequest) {
        let parts = request.path.split(separator: "/").map(String.init)
        switch parts.first ?? "" {
        case "bytes":
            let count = Int(parts.dropFirst().first ?? "") ?? 0
            if count > 1 << 20 {
                streamPattern(context, count: count, head: request.head)
            } else {
                send(context, status: .ok, type: "application/octet-stream", buffer: patternBuffer(count: count), head: request.head)
            }
        case "text":
            let count = Int(parts.dropFirst().first ?? "") ?? 0
            send(context, status: .ok, type: "text/plain; charset=utf-8", body: [UInt8](repeating: UInt8(ascii: "a"), count: count), head: request.head)
        case "json":
            send(context, status: .ok, type: "application/json", body: Array(#"{"hello":"world","n":1}"#.utf8), head: request.head)
        case "status":
            let code = Int(parts.dropFirst().first ?? "") ?? 200
            send(context, status: HTTPResponseStatus(statusCode: code), type: "text/plain", body: Array("status \(code)".utf8), head: request.head)
        case "reason":
            // `/reason?code=N&phrase=P&value=V`: status N with reason phrase P and `X-Value: V` (its UTF-8 bytes).
            let code = Int(request.query["code"] ?? "") ?? 200
            let status = HTTPResponseStatus.custom(code: UInt(code), reasonPhrase: request.query["phrase"] ?? "")
            send(context, status: status, type: "text/plain", body: Array("reason".utf8), head: request.head,
                 extra: [("X-Value", request.query["value"] ?? ""), ("Cache-Control", "no-store")])
        case "redirect":
            let remaining = Int(parts.dropFirst().first ?? "") ?? 0
            if remaining <= 0 {
                send(context, status: .ok, type: "text/plain", body: Array("done".utf8), head: request.head)
            } else {
                send(context, status: .found, type: "text/plain", body: [], head: request.head, extra: [("Location", "/redirect/\(remaining - 1)")])
            }
        case "redirect-to":
            let target = request.query["url"] ?? "/"
            let code = Int(request.query["status"] ?? "") ?? 302
            send(context, status: HTTPResponseStatus(statusCode: code), type: "text/plain", body: [], head: request.head, extra: [("Location", target)])
        case "slow":
            streamSlowly(context, request: request)
        case "reset":
            context.close(promise: nil)
        case "drop-next":
            // As an origin whose keep-alive timeout ends just as the client reuses the
            // connection: this answer keeps it open, the next request on it is never answered.
            dropNext = true
            send(context, status: .ok, type: "text/plain", body: Array("ok".utf8), head: request.head, extra: [("Cache-Control", "no-store")])
        case "hang":
            break
        case "echo":
            send(context, status: .ok, type: "application/json", body: request.echoJSON, head: request.head, extra: [("X-Origin", "local")])
        case "multipart":
            guard let parts = Multipart.parse(request.body, contentType: request.head.headers["content-type"].first ?? "") else {
                send(context, status: .badRequest, type: "text/plain", body: Array("not multipart/form-data".utf8), head: request.head)
                return
            }
            send(context, status: .ok, type: "application/json", body: Multipart.describe(parts), head: request.head)
        case "gzip":
            send(context, status: .ok, type: "text/plain", body: OriginRequest.gzipHello, head: request.head, extra: [("Content-Encoding", "gzip")])
        case "cached":
            respondCached(context, to: request)
        case "range":
            respondRange(context, to: request, length: Int(parts.dropFirst().first ?? "") ?? 0)
        case "headers":
            respondHeaders(context, to: request)
        case "cookies":
            respondCookies(context, to: request, route: parts.dropFirst().first ?? "")
        case "page":
            respondPage(context, to: request)
        case "manifest":
            respondManifest(context, to: request)
        case "pageload":
            respondPageLoad(context, to: request)
        case "count":
            let counts = self.counts.value.withLock { $0 }
            let json = "{" + counts.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
            send(context, status: .ok, type: "application/json", body: Array(json.utf8), head: request.head)
        default:
            send(context, status: .notFound, type: "text/plain", body: Array("not found".utf8), head: request.head)
        }
    }

    func send(_ context: ChannelHandlerContext, status: HTTPResponseStatus, type: String, body: [UInt8], head: HTTPRequestHead, extra: [(String, String)] = []) {
        send(context, status: status, type: type, buffer: ByteBuffer(bytes: body), head: head, extra: extra)
    }

    func send(_ context: ChannelHandlerContext, status: HTTPResponseStatus, type: String, buffer: ByteBuffer, head: HTTPRequestHead, extra: [(String, String)] = []) {
        var headers = HTTPHeaders([("Content-Type", type), ("Content-Length", String(buffer.readableBytes))])
        for (name, value) in extra { headers.add(name: name, value: value) }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        if head.method != .HEAD, buffer.readableBytes > 0 {
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// Sends `count` pattern bytes in 64 KiB chunks, each after the previous one was written,
    /// so a large body never sits whole in the origin either.
    func streamPattern(_ context: ChannelHandlerContext, count: Int, head: HTTPRequestHead) {
        let headers = HTTPHeaders([("Content-Type", "application/octet-stream"), ("Content-Length", String(count))])
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers))), promise: nil)
        guard head.method != .HEAD else {
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            return
        }
        let chunk = 64 * 1024
        func send(from offset: Int) {
            guard offset < count else {
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                return
            }
            let end = min(count, offset + chunk)
            let bytes = patternBytes(from: offset, count: end - offset)
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: bytes))))).whenComplete { result in
                if case .success = result { send(from: end) }
            }
        }
        send(from: 0)
    }

    func streamSlowly(_ context: ChannelHandlerContext, request: OriginRequest) {
        let chunks = Int(request.query["chunks"] ?? "") ?? 3
        let delay = Int64(request.query["delay"] ?? "") ?? 200
        let size = Int(request.query["size"] ?? "") ?? 16
        let headers = HTTPHeaders([("Content-Type", "application/octet-stream"), ("Transfer-Encoding", "chunked")])
        context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: request.head.version, status: .ok, headers: headers))), promise: nil)
        func send(_ index: Int) {
            guard context.channel.isActive else { return }
            if index == chunks {
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                return
            }
            let bytes = patternBytes(from: index * size, count: size)
            counts.value.withLock { $0["slow-chunks", default: 0] += 1 }
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: bytes)))), promise: nil)
            context.eventLoop.scheduleTask(in: .milliseconds(delay)) { send(index + 1) }
        }
        send(0)
    }
}
