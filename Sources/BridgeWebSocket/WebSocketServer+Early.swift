import BridgeCore
import CLibWebSockets
import Foundation

/// An early request (`POST /bridge/early`) on the service thread: its body as it arrives, then its
/// answer once the broker has it.
final class EarlyRequest {
    let serial: UInt64
    let info: ConnectionInfo
    var body: [UInt8] = []
    var overflowed = false
    var answer: [UInt8]?
    /// When its head, its whole body and its answer arrived (`bridge_monotonic_ns`), for the debug log.
    let began = bridge_monotonic_ns()
    var bodyDone: UInt64 = 0
    var answered: UInt64 = 0
    var posts = 0

    init(serial: UInt64, info: ConnectionInfo) {
        self.serial = serial
        self.info = info
    }
}

/// Early requests answered by the broker, waiting for the service thread.
struct EarlyAnswers {
    var ready: [(serial: UInt64, answer: [UInt8], at: UInt64)] = []
}

extension WebSocketServer {
    /// The most early requests whose lookups run at once; more get 429.
    static let maxEarlyRequests = 64

    /// `LWS_CALLBACK_HTTP` for `/bridge/early`: refuses what cannot be an early request at once,
    /// else starts collecting its body.
    func beginEarly(_ wsi: OpaquePointer) -> Int32 {
        let origin = header(wsi, WSI_TOKEN_ORIGIN)
        guard lws_hdr_total_length(wsi, WSI_TOKEN_POST_URI) > 0 else {
            return respondEarly(wsi, status: 405, origin: origin, message: "/bridge/early takes POST", extra: "allow: POST\r\n")
        }
        // The same loopback, origin and token rules as the socket's handshake.
        if case .failure(let refusal) = checkHandshake(wsi, path: "/bridge") {
            logger.warning("refused an early request from \(peer(wsi)): \(refusal.reason)")
            return respondEarly(wsi, status: 403, origin: nil, message: refusal.reason)
        }
        if shuttingDown { return respondEarly(wsi, status: 503, origin: origin, message: "the broker is shutting down") }
        guard let length = header(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH).flatMap({ Int($0) }), length > 0 else {
            return respondEarly(wsi, status: 411, origin: origin, message: "an early request has a body with a Content-Length")
        }
        guard length <= EarlyPosts.maxRequestBytes else {
            return respondEarly(wsi, status: 413, origin: origin, message: "an early request holds at most \(EarlyPosts.maxRequestBytes) bytes")
        }
        guard earlyRequests.count < Self.maxEarlyRequests else {
            return respondEarly(wsi, status: 429, origin: origin, message: "\(Self.maxEarlyRequests) early requests are running; send over the WebSocket")
        }
        nextEarlySerial += 1
        let info = ConnectionInfo(
            origin: origin, peer: peer(wsi), userAgent: header(wsi, WSI_TOKEN_HTTP_USER_AGENT),
            acceptLanguage: header(wsi, WSI_TOKEN_HTTP_ACCEPT_LANGUAGE))
        earlyRequests[wsi] = EarlyRequest(serial: nextEarlySerial, info: info)
        return 0
    }

    /// `LWS_CALLBACK_HTTP_BODY`: a part of an early request's body.
    func earlyBody(_ wsi: OpaquePointer, input: UnsafeMutableRawPointer?, length: Int) -> Int32? {
        guard let request = earlyRequests[wsi] else { return nil }
        if let input, !request.overflowed {
            if request.body.count + length > EarlyPosts.maxRequestBytes {
                request.overflowed = true
                request.body = []
            } else {
                request.body.append(contentsOf: UnsafeRawBufferPointer(start: input, count: length))
            }
        }
        return 0
    }

    /// `LWS_CALLBACK_HTTP_BODY_COMPLETION`: checks the posts and starts them; the answer goes out
    /// from `earlyWritable` once `drainEarlyAnswers` has it.
    func earlyBodyComplete(_ wsi: OpaquePointer) -> Int32? {
        guard let request = earlyRequests[wsi] else { return nil }
        let origin = request.info.origin
        if request.overflowed {
            earlyRequests[wsi] = nil
            return respondEarly(wsi, status: 413, origin: origin, message: "an early request holds at most \(EarlyPosts.maxRequestBytes) bytes")
        }
        let lines: [ClientMessage]
        do {
            lines = try EarlyPosts.parse(request.body)
        } catch {
            earlyRequests[wsi] = nil
            return respondEarly(wsi, status: error.code == .tooLarge ? 413 : 400, origin: origin, message: error.message)
        }
        request.body = []
        request.bodyDone = bridge_monotonic_ns()
        request.posts = lines.count
        let serial = request.serial
        earlySerials[serial] = wsi
        // The answer comes with libwebsockets' headroom in front, so that it is written where it is.
        EarlyPosts.run(lines, broker: broker, info: request.info, deadline: configuration.earlyDeadline, headroom: Int(bridge_lws_pre())) {
            [weak self] answer in
            guard let self else { return }
            let first = earlyAnswers.withLock { answers -> Bool in
                answers.ready.append((serial, answer, bridge_monotonic_ns()))
                return answers.ready.count == 1
            }
            if first { loop.wake() }
        }
        // Every post answered at once (hits and sure misses, on this thread): the answer goes now,
        // not two loop turns later, when a busy machine may have given the CPU away between them.
        guard let (answer, at) = takeEarlyAnswer(serial) else { return 0 }
        earlySerials[serial] = nil
        // Moved, so that the request holds the answer's only reference when it is written.
        request.answer = consume answer
        request.answered = at
        return earlyWritable(wsi) ?? 0
    }

    /// Takes `serial`'s answer if the broker has finished it.
    private func takeEarlyAnswer(_ serial: UInt64) -> (answer: [UInt8], at: UInt64)? {
        earlyAnswers.withLock { answers in
            guard let index = answers.ready.firstIndex(where: { $0.serial == serial }) else { return nil }
            let ready = answers.ready.remove(at: index)
            return (ready.answer, ready.at)
        }
    }

    /// Service thread: hands the answers the broker finished to their requests' connections.
    func drainEarlyAnswers() {
        let ready = earlyAnswers.withLock { answers -> [(serial: UInt64, answer: [UInt8], at: UInt64)] in
            defer { answers.ready = [] }
            return answers.ready
        }
        for (serial, answer, at) in ready {
            // A request whose client went away meanwhile has no connection to answer on.
            guard let wsi = earlySerials.removeValue(forKey: serial), let request = earlyRequests[wsi] else { continue }
            request.answer = answer
            request.answered = at
            lws_callback_on_writable(wsi)
        }
    }

    /// `LWS_CALLBACK_HTTP_WRITEABLE`: sends an early request's answer, if it is there.
    func earlyWritable(_ wsi: OpaquePointer) -> Int32? {
        guard let request = earlyRequests[wsi] else { return nil }
        guard var answer = request.answer else { return 0 }
        // The only reference left is `answer`: written in place, not copied.
        request.answer = nil
        earlyRequests[wsi] = nil
        let bytes = answer.count - Int(bridge_lws_pre())
        trafficCounters.sent.add(bytes, ordering: .relaxed)
        let result = respondEarly(wsi, origin: request.info.origin, answer: &answer)
        let micros = { (from: UInt64, to: UInt64) in (to &- from) / 1000 }
        logger.debug(
            "early request \(request.serial): \(request.posts) posts, \(bytes) bytes answered; body in \(micros(request.began, request.bodyDone)) µs, posts answered in \(micros(request.bodyDone, request.answered)) µs, answer written \(micros(request.answered, bridge_monotonic_ns())) µs later")
        return result
    }

    /// `LWS_CALLBACK_CLOSED_HTTP`: forgets an early request whose connection closed.
    func earlyClosed(_ wsi: OpaquePointer) {
        guard let request = earlyRequests.removeValue(forKey: wsi) else { return }
        earlySerials[request.serial] = nil
    }

    private func respondEarly(
        _ wsi: OpaquePointer, status: UInt32, origin: String?, message: String, extra: String = ""
    ) -> Int32 {
        let failed = Array("\(status): \(message)\n".utf8).withUnsafeBufferPointer {
            bridge_lws_respond(wsi, status, "text/plain; charset=utf-8", Self.earlyHeaders(origin: origin, extra: extra), $0.baseAddress, $0.count)
        }
        return earlyResponded(wsi, failed: failed)
    }

    /// Sends an early request's answer (from `EarlyPosts.run`, after `LWS_PRE` free bytes) from
    /// where it is.
    private func respondEarly(_ wsi: OpaquePointer, origin: String?, answer: inout [UInt8]) -> Int32 {
        let pre = Int(bridge_lws_pre())
        let failed = answer.withUnsafeMutableBufferPointer { buffer in
            bridge_lws_respond_prepadded(
                wsi, 200, "application/octet-stream", Self.earlyHeaders(origin: origin, extra: ""), buffer.baseAddress.map { $0 + pre },
                buffer.count - pre)
        }
        return earlyResponded(wsi, failed: failed)
    }

    /// The page reads the answer (and the status of a refusal) with fetch(): CORS lets it.
    private static func earlyHeaders(origin: String?, extra: String) -> String {
        var headers = "cache-control: no-store\r\n" + extra
        if let origin { headers += "access-control-allow-origin: \(origin)\r\nvary: origin\r\n" }
        return headers
    }

    private func earlyResponded(_ wsi: OpaquePointer, failed: Int32) -> Int32 {
        if failed != 0 { return -1 }
        return lws_http_transaction_completed(wsi) != 0 ? -1 : 0
    }
}
