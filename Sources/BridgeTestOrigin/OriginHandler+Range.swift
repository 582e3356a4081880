import Foundation
import NIOCore
import NIOHTTP1

extension OriginHandler {
    /// `/range/N?etag=E&cc=CC`: an N-byte pattern representation that honours byte ranges, as
    /// a real origin does (RFC 9110 §14).
    ///
    /// One satisfiable `bytes` range gets 206 with `Content-Range`; an unsatisfiable one gets
    /// 416 with `Content-Range: bytes */N`; several ranges, or an `If-Range` that does not match
    /// the tag, get the whole 200. `If-None-Match` with the tag gets 304. `ETag: "E"` (default
    /// `"rN"`; a request header `X-Etag: E` overrides it, so a test can change the
    /// representation behind one URL), `Cache-Control: CC` (default `max-age=60`). Each
    /// request's `Range` value is also counted under `range <value>` (see `/count`).
    func respondRange(_ context: ChannelHandlerContext, to request: OriginRequest, length: Int) {
        let query = request.query
        let tag = "\"\(request.head.headers["X-Etag"].first ?? query["etag"] ?? "r\(length)")\""
        var extra: [(String, String)] = [("ETag", tag), ("Cache-Control", query["cc"] ?? "max-age=60"), ("Accept-Ranges", "bytes")]
        let headers = request.head.headers
        let range = headers["Range"].first
        if let range { counts.value.withLock { $0["range \(range)", default: 0] += 1 } }
        if headers["If-None-Match"].contains(tag) {
            var response = HTTPHeaders(extra)
            response.add(name: "Content-Length", value: "0")
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: request.head.version, status: .notModified, headers: response))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            return
        }
        let ifRangeHolds = headers["If-Range"].first.map { $0 == tag } ?? true
        if ifRangeHolds, let range, let (first, last) = Self.singleRange(range, length: length) {
            guard first >= 0 else {
                extra.append(("Content-Range", "bytes */\(length)"))
                send(context, status: .rangeNotSatisfiable, type: "text/plain", body: [], head: request.head, extra: extra)
                return
            }
            extra.append(("Content-Range", "bytes \(first)-\(last)/\(length)"))
            send(context, status: .partialContent, type: "application/octet-stream",
                 body: patternBytes(from: first, count: last - first + 1), head: request.head, extra: extra)
            return
        }
        send(context, status: .ok, type: "application/octet-stream", body: patternBytes(from: 0, count: length), head: request.head, extra: extra)
    }

    /// The positions of a single `bytes` range in a representation of `length` bytes;
    /// `(-1, -1)` when it cannot be satisfied; nil when the header is not one valid range.
    static func singleRange(_ header: String, length: Int) -> (Int, Int)? {
        let parts = header.split(separator: "=", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bytes", !parts[1].contains(",") else { return nil }
        let bounds = parts[1].trimmingCharacters(in: .whitespaces).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2 else { return nil }
        if bounds[0].isEmpty {
            guard let suffix = Int(bounds[1]) else { return nil }
            return suffix > 0 && length > 0 ? (max(0, length - suffix), length - 1) : (-1, -1)
        }
        guard let first = Int(bounds[0]) else { return nil }
        let last = bounds[1].isEmpty ? length - 1 : Int(bounds[1])
        guard let last, last >= first else { return nil }
        return first < length ? (first, min(last, length - 1)) : (-1, -1)
    }

    /// `/headers?status=S&body=TEXT&NAME=VALUE...`: status S (default 200), body TEXT (default
    /// empty), and every other query item as a response header, in order and repeatable
    /// (`/headers?Set-Cookie=a%3D1&Set-Cookie=b%3D2&Cache-Control=max-age%3D60`).
    func respondHeaders(_ context: ChannelHandlerContext, to request: OriginRequest) {
        let items = URLComponents(string: request.head.uri)?.queryItems ?? []
        var status = 200
        var body = ""
        var extra: [(String, String)] = []
        for item in items {
            switch item.name {
            case "status": status = Int(item.value ?? "") ?? 200
            case "body": body = item.value ?? ""
            default: extra.append((item.name, item.value ?? ""))
            }
        }
        let type = extra.first { $0.0.lowercased() == "content-type" }?.1 ?? "text/plain"
        extra.removeAll { $0.0.lowercased() == "content-type" }
        send(context, status: HTTPResponseStatus(statusCode: status), type: type, body: Array(body.utf8), head: request.head, extra: extra)
    }
}
