import Foundation

extension FetchExchange {
    /// Sends the `response` event, the body as the request asked, and builds the reply.
    func deliver(_ exchange: CachedExchange, url: String, method: String, redirected: Bool, cookies: [String] = []) async throws -> JSONValue {
        let response = exchange.response
        var headers = response.headers
        // Set-Cookie stays hidden, as from a browser's fetch, unless a headless client asks for it.
        if request.exposeSetCookie {
            if [.hit, .stale].contains(exchange.status) { for line in exchange.storedSetCookie { headers.add("set-cookie", line) } }
        } else {
            headers.remove("set-cookie")
        }
        headers.remove("set-cookie2")
        var cache: JSONValue = ["status": .string(exchange.status.rawValue)]
        if let age = exchange.age { cache = ["status": .string(exchange.status.rawValue), "age": .integer(age)] }
        var head: [(key: String, value: JSONValue)] = [
            ("url", .string(url)), ("status", .integer(response.status)), ("statusText", .string(request.written(statusText: response.statusText))),
            ("headers", request.written(headers).json), ("redirected", .bool(redirected)), ("cache", cache),
        ]
        if !cookies.isEmpty { head.append(("cookies", .array(cookies.map { .string($0) }))) }
        await call.sendEvent("response", .object(JSONObject(head)))

        let noBody = method == "HEAD" || [204, 304].contains(response.status) || (100..<200).contains(response.status)
        let mode = noBody ? ResponseBodyMode.none : (request.responseBody ?? Self.defaultMode(for: headers["content-type"]))
        let total = Self.expectedLength(of: response)
        trace.response(status: response.status, cache: exchange.status, total: total)
        if let group = request.group, let groupToken {
            call.connection.groups.update(group: group, token: groupToken, loaded: 0, total: total)
        }

        var reply = JSONObject(head.filter { $0.key != "cache" })
        reply["bodyEncoding"] = .string(mode.rawValue)
        switch mode {
        case .none:
            // A 204 or 304 has an empty body: reading its end lets the cache commit it (a 204 is
            // stored like a 200).
            if noBody { while try await response.body.next() != nil {} }
            reply["body"] = .null
            reply["bodyBytes"] = 0
        case .binary:
            let count: Int
            // With a window (flow control), the upstream body is read only while the client has credit.
            let credit = request.window.map { call.creditWindow(initial: $0) }
            var ended = false
            if let nextFrame = response.body.nextFrame {
                // One copy: each chunk lands in its frame, the header goes in front of it. A frame
                // the transport leaves intact, since the cache writer may still be reading it.
                let (headroom, limit) = (call.bodyFrameHeadroom, call.bodyFramePayloadLimit)
                var sent = 0
                count = try await stream(total: total) {
                    guard !ended else { return nil }
                    try await credit?.waitForRoom()
                    guard let frame = try await nextFrame(headroom, limit) else { return nil }
                    let size = frame.count
                    credit?.spend(size)
                    sent += size
                    try Task.checkCancellation()
                    // The last bytes of a body of known length: its end is read first (it came
                    // with them), so they carry END and no empty frame follows: one frame and
                    // one write fewer per response.
                    if let total, sent == total {
                        guard try await nextFrame(headroom, limit) == nil else {
                            throw BridgeError(.network, "\(url) sent more than its Content-Length of \(total) bytes")
                        }
                        ended = true
                    }
                    try await call.sendBodyFrame(frame, isEnd: ended)
                    return size
                }
            } else {
                count = try await stream(response.body, total: total) { chunk in
                    try await credit?.waitForRoom()
                    credit?.spend(chunk.count)
                    try await call.sendBodyChunk(chunk, isEnd: false)
                }
            }
            if !ended { try await call.sendBodyChunk([UInt8](), isEnd: true) }
            reply["body"] = .null
            reply["bodyBytes"] = .integer(count)
        case .text, .base64:
            // base64 grows 4/3: keep the encoded reply under the message limit.
            let limit = mode == .text ? call.configuration.maxMessageBytes : call.configuration.maxMessageBytes / 4 * 3
            var collected: [UInt8] = []
            let count = try await stream(response.body, total: total) { chunk in
                guard collected.count + chunk.count <= limit else {
                    throw BridgeError(.tooLarge, "the body of \(url) is over \(limit) bytes; ask for responseBody \"binary\"")
                }
                collected.append(contentsOf: chunk)
            }
            reply["body"] = mode == .text ? .string(String(decoding: collected, as: UTF8.self)) : .string(Data(collected).base64EncodedString())
            reply["bodyBytes"] = .integer(count)
        }
        reply["cache"] = cache
        return .object(reply)
    }

    /// Reads the body to its end, handing each chunk to `consume` and sending download progress.
    private func stream(_ body: UpstreamResponseBody, total: Int?, consume: ([UInt8]) async throws -> Void) async throws -> Int {
        try await stream(total: total) {
            guard let chunk = try await body.next() else { return nil }
            try Task.checkCancellation()
            try await consume(chunk)
            return chunk.count
        }
    }

    /// Calls `pull`, which reads and passes on one chunk and returns its size (nil at the end),
    /// until the end, sending download progress.
    private func stream(total: Int?, pull: () async throws -> Int?) async throws -> Int {
        var loaded = 0
        var throttle = ProgressThrottle()
        if request.progress, throttle.isDue(final: false) {
            await call.sendEvent("progress", Self.progress(loaded: 0, total: total))
        }
        while let size = try await pull() {
            loaded += size
            trace.progress(loaded: loaded)
            if let group = request.group, let groupToken {
                call.connection.groups.update(group: group, token: groupToken, loaded: loaded, total: total)
            }
            if request.progress, throttle.isDue(final: false) {
                await call.sendEvent("progress", Self.progress(loaded: loaded, total: total))
            }
        }
        if request.progress, throttle.isDue(final: true) {
            await call.sendEvent("progress", Self.progress(loaded: loaded, total: total ?? loaded))
        }
        return loaded
    }

    /// The body's size when the response tells it: stored bodies know theirs, and an undecoded
    /// network body has its Content-Length.
    static func expectedLength(of response: UpstreamResponse) -> Int? {
        response.body.length ?? (response.body.decoded ? nil : response.headers["content-length"].flatMap { Int($0.trimmingSpaces) })
    }

    private static func progress(loaded: Int, total: Int?) -> JSONValue {
        ["phase": "download", "loaded": .integer(loaded), "total": total.map { .integer($0) } ?? .null]
    }

    /// `text` for textual content types, `base64` for everything else.
    static func defaultMode(for contentType: String?) -> ResponseBodyMode {
        guard let contentType else { return .base64 }
        let type = contentType.split(separator: ";").first.map { $0.trimmingSpaces.lowercased() } ?? ""
        if type.hasPrefix("text/") || type.hasSuffix("+json") || type.hasSuffix("+xml") { return .text }
        let textual: Set<String> = [
            "application/json", "application/xml", "application/javascript", "application/ecmascript",
            "application/x-javascript", "application/x-www-form-urlencoded", "image/svg+xml",
        ]
        return textual.contains(type) ? .text : .base64
    }
}
