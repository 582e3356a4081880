import CLibWebSockets

extension WebSocketServer {
    /// Serves `GET`/`HEAD` of the shim and the examples, and the early requests `POST /bridge/early`
    /// (`WebSocketServer+Early.swift`); everything else is 404.
    func serveHTTP(_ wsi: OpaquePointer, input: UnsafeMutableRawPointer?, length: Int) -> Int32 {
        let path = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "/"
        if path == "/metrics", let metrics = configuration.metrics { return serveMetrics(wsi, metrics) }
        if path == "/bridge/early" { return beginEarly(wsi) }
        guard let files else { return notFound(wsi) }
        switch files.resolve(path, acceptEncoding: header(wsi, WSI_TOKEN_HTTP_ACCEPT_ENCODING)) {
        case .notFound:
            return notFound(wsi)
        case .redirect(let location):
            var buffer = [UInt8](repeating: 0, count: 512)
            let result: Int32 = buffer.withUnsafeMutableBufferPointer { raw in
                var cursor: UnsafeMutablePointer<UInt8>? = raw.baseAddress!
                let end = raw.baseAddress! + raw.count
                return location.withCString { loc in
                    lws_http_redirect(wsi, 302, UnsafeRawPointer(loc).assumingMemoryBound(to: UInt8.self), Int32(location.utf8.count), &cursor, end)
                }
            }
            return result < 0 ? -1 : (lws_http_transaction_completed(wsi) != 0 ? -1 : 0)
        case .file(let file):
            if file.isNotModified(ifNoneMatch: header(wsi, WSI_TOKEN_HTTP_IF_NONE_MATCH)) {
                if bridge_lws_not_modified(wsi, file.headers) != 0 { return -1 }
                return lws_http_transaction_completed(wsi) != 0 ? -1 : 0
            }
            let status = lws_serve_http_file(wsi, file.path, file.mimeType, file.headers, Int32(file.headers.utf8.count))
            if status < 0 { return -1 }
            if status > 0, lws_http_transaction_completed(wsi) != 0 { return -1 }
            return 0
        }
    }

    private func notFound(_ wsi: OpaquePointer) -> Int32 {
        lws_return_http_status(wsi, 404, "Not found")
        return lws_http_transaction_completed(wsi) != 0 ? -1 : 0
    }
}
