import Foundation
import Synchronization

/// One `fetch` post in progress: the hops, the events and the body delivery.
struct FetchExchange: Sendable {
    let call: HandlerCall
    let request: FetchRequest
    let handler: FetchHandler
    let groupToken: UInt64?
    let trace: RequestTrace
    /// The identity headers and cookies of each hop.
    let hops: HopIdentity

    init(call: HandlerCall, request: FetchRequest, handler: FetchHandler, groupToken: UInt64?, trace: RequestTrace) {
        self.call = call
        self.request = request
        self.handler = handler
        self.groupToken = groupToken
        self.trace = trace
        hops = HopIdentity(request: request, identity: RequestIdentity(connection: call.connection), jar: handler.cookies)
    }

    /// The final response of a request, after the redirects it followed.
    struct FinalHop: Sendable {
        var exchange: CachedExchange
        var url: String
        var method: String
        var redirected: Bool
        /// For a page: the cookies set along the way that its `document.cookie` should see.
        var cookies: [String] = []
    }

    func run() async throws -> JSONValue {
        let hop = try await finalHop()
        return try await deliver(hop.exchange, url: hop.url, method: hop.method, redirected: hop.redirected, cookies: hop.cookies)
    }

    /// Sends the request through the cache and follows redirects as the request asks; the
    /// caller reads the final response's body.
    func finalHop() async throws -> FinalHop {
        let deadline = ContinuousClock.now + request.timeout
        var url = request.url
        var method = request.method
        var headers = request.headers
        var body = request.body
        var redirected = false
        var hopCount = 0
        var tainted = false
        var cookies: [String] = []
        // A body streamed as binary frames is kept while it is read, so a 307 or 308 can resend it.
        let tape: RequestBodyTape? = if case .stream = body { RequestBodyTape(channel: call.requestBody().channel) } else { nil }
        while true {
            let verdict = handler.rules.check(FetchRequest.ruleForm(of: url))
            if case .refused(let reason) = verdict { throw BridgeError(.forbidden, reason) }
            let anyAddress = verdict == .anyAddress
            let upstreamRequest = UpstreamRequest(
                url: url, method: method, headers: hops.headers(headers, url: url, method: method, tainted: tainted),
                body: try upstreamBody(body, tape: tape), deadline: deadline,
                addressAllowed: { address in anyAddress || (IPAddress(address)?.isPublic ?? false) },
                anyAddressAllowed: anyAddress, bodyAgain: bodyAgain(body)
            )
            trace.connecting(url: url)
            let exchange = try await handler.exchange(upstreamRequest, mode: request.cache)
            let response = exchange.response
            cookies += hops.storeCookies(from: response.headers, url: url, method: method)
            // Location's bytes are read as UTF-8, as browsers do.
            guard [301, 302, 303, 307, 308].contains(response.status), let location = response.headers["location"].map(ByteString.utf8Text) else {
                return FinalHop(exchange: exchange, url: url, method: method, redirected: redirected, cookies: cookies)
            }
            switch request.redirect {
            case .manual:
                return FinalHop(exchange: exchange, url: url, method: method, redirected: redirected, cookies: cookies)
            case .error:
                throw BridgeError(.network, "\(url) redirected to \(location) and redirect mode is \"error\"")
            case .follow:
                break
            }
            hopCount += 1
            guard hopCount <= FetchHandler.maxRedirects else {
                throw BridgeError(.network, "more than \(FetchHandler.maxRedirects) redirects from \(request.url)")
            }
            guard let base = URL(string: url), let target = URL(string: location, relativeTo: base)?.absoluteURL else {
                throw BridgeError(.network, "\(url) redirected to an invalid location \"\(location)\"")
            }
            let next: String
            do { next = try FetchRequest.normalize(url: target.absoluteString) } catch {
                throw BridgeError(.network, "\(url) redirected to \(location), which is not an http(s) URL")
            }
            if response.status == 303 && method != "HEAD" || [301, 302].contains(response.status) && method == "POST" {
                method = "GET"
                body = .none
                for name in ["content-type", "content-length", "content-encoding", "content-language", "content-location"] {
                    headers.remove(name)
                }
            } else if case .stream(let length) = body, let tape {
                // As the Fetch standard: a body without a known length came from a stream, which
                // cannot be sent again; a known one is resent from what the tape kept.
                guard length != nil else {
                    throw BridgeError(.network, "\(url) answered \(response.status), and a streamed body (no length) cannot be sent again")
                }
                guard await !tape.overflowed else {
                    throw BridgeError(
                        .network, "\(url) answered \(response.status), and a body over \(RequestBodyTape.replayLimit) bytes is not kept to be sent again")
                }
            }
            if origin(of: next) != origin(of: url) { headers.remove("authorization") }
            // Fetch §4.4 step 14: a cross-origin redirect away from a foreign origin taints the
            // request's origin, which is then sent as `null`.
            if request.mode != .navigate, WebOrigin(url: next) != WebOrigin(url: url), WebOrigin(url: url) != hops.identity.pageOrigin {
                tainted = true
            }
            url = next
            redirected = true
        }
    }

    private func origin(of url: String) -> Substring {
        let afterScheme = url.range(of: "://").map { url[$0.upperBound...] } ?? Substring(url)
        let end = afterScheme.firstIndex(of: "/") ?? afterScheme.endIndex
        return url[url.startIndex..<end]
    }

    /// A body held in memory can go out again from its start; a streamed one cannot.
    private func bodyAgain(_ body: FetchRequest.Body) -> (@Sendable () -> UpstreamRequestBody)? {
        guard case .bytes(let bytes) = body else { return nil }
        return { [self] in bytesBody(bytes) }
    }

    /// A body held in memory, sent in chunks from its start, its upload progress reported.
    private func bytesBody(_ bytes: [UInt8]) -> UpstreamRequestBody {
        let chunkSize = 64 * 1024
        let offset = Mutex(0)
        let progress = UploadProgress(call: call, total: bytes.count, enabled: request.progress)
        return .stream(length: bytes.count) {
            let chunk: ArraySlice<UInt8>? = offset.locked { start in
                guard start < bytes.count else { return nil }
                let end = min(bytes.count, start + chunkSize)
                defer { start = end }
                return bytes[start..<end]
            }
            guard let chunk else { return nil }
            await progress.sent(chunk.count)
            return Array(chunk)
        }
    }

    private func upstreamBody(_ body: FetchRequest.Body, tape: RequestBodyTape?) throws(BridgeError) -> UpstreamRequestBody {
        switch body {
        case .none:
            return .none
        case .bytes(let bytes):
            return bytesBody(bytes)
        case .stream(let length):
            guard let tape else { return .none }
            let progress = UploadProgress(call: call, total: length, enabled: request.progress)
            let received = Mutex(0)
            let cursor = Mutex(0)
            return .stream(length: length) {
                let index = cursor.locked { index in
                    defer { index += 1 }
                    return index
                }
                guard let chunk = try await tape.chunk(at: index) else {
                    let total = received.locked { $0 }
                    if let length, total != length {
                        throw BridgeError(.badRequest, "the body had \(total) bytes, not the announced length \(length)")
                    }
                    return nil
                }
                let total = received.locked { value in
                    value += chunk.count
                    return value
                }
                if let length, total > length {
                    throw BridgeError(.badRequest, "the body is longer than the announced length \(length)")
                }
                await progress.sent(chunk.count)
                return chunk
            }
        }
    }
}

/// Upload progress events for one request body.
final class UploadProgress: Sendable {
    let call: HandlerCall
    let total: Int?
    let enabled: Bool
    private let state = Mutex((sent: 0, throttle: ProgressThrottle()))

    init(call: HandlerCall, total: Int?, enabled: Bool) {
        self.call = call
        self.total = total
        self.enabled = enabled
    }

    func sent(_ count: Int) async {
        guard enabled else { return }
        let due: Int? = state.locked { state in
            state.sent += count
            let final = total.map { state.sent >= $0 } ?? false
            return state.throttle.isDue(final: final) ? state.sent : nil
        }
        guard let loaded = due else { return }
        await call.sendEvent("progress", ["phase": "upload", "loaded": .integer(loaded), "total": total.map { .integer($0) } ?? .null])
    }
}
