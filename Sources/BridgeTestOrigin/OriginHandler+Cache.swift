import NIOCore
import NIOHTTP1

extension OriginHandler {
    /// `/cached?cc=CC&etag=E&lm=DATE&vary=NAME&size=N`: a validating origin for cache tests.
    ///
    /// Sends `Cache-Control: CC`, `ETag: "E"`, `Last-Modified: DATE` and `Vary: NAME` when given.
    /// A request whose `If-None-Match` names the tag (or whose `If-Modified-Since` equals the
    /// date) gets 304 with the same validators and `Cache-Control`. The 200 body is
    /// `variant=<value of the Vary header>` or, with `size`, N pattern bytes.
    func respondCached(_ context: ChannelHandlerContext, to request: OriginRequest) {
        let query = request.query
        var extra: [(String, String)] = []
        if let cc = query["cc"] { extra.append(("Cache-Control", cc)) }
        let tag = query["etag"].map { "\"\($0)\"" }
        if let tag { extra.append(("ETag", tag)) }
        if let modified = query["lm"] { extra.append(("Last-Modified", modified)) }
        if let vary = query["vary"] { extra.append(("Vary", vary)) }
        let headers = request.head.headers
        let matches = (tag != nil && headers["If-None-Match"].contains(tag!))
            || (query["lm"] != nil && headers["If-Modified-Since"].first == query["lm"])
        if matches {
            var response = HTTPHeaders(extra)
            response.add(name: "Content-Length", value: "0")
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: request.head.version, status: .notModified, headers: response))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            return
        }
        let body: [UInt8]
        if let size = query["size"].flatMap({ Int($0) }) {
            body = (0..<size).map(patternByte)
        } else {
            body = Array("variant=\(query["vary"].flatMap { headers[$0].first } ?? "")".utf8)
        }
        let type = query["size"] == nil ? "text/plain" : "application/octet-stream"
        send(context, status: .ok, type: type, body: body, head: request.head, extra: extra)
    }
}
