import BridgeCore
import CLibWebSockets
import Foundation
import Synchronization

/// Plain `http:` exchanges made on libwebsockets' service thread, over raw TCP connections that
/// lws polls beside the WebSocket sessions: with the broker's tasks on that thread too
/// (`ServiceThreadExecutor`), a fetch's post, its upstream request and response, and the frames
/// it sends back all happen on one thread, with no wake of another thread on the way.
///
/// What it does not take goes to `fallback` (AsyncHTTPClient): `https:`, an IPv6 address, a
/// body the client streams or one over `maxGatheredBody`, a host name where no `resolve` is
/// given (the broker does not make one when a proxy is configured). HTTP/1.1 only,
/// keep-alive connections pooled per address and port (at most `connectionsPerHost` live), a
/// request sent again (twice at most) when a reused connection closes before any byte of an
/// answer, the request's deadline as a timer on its connection.
public final class ServiceThreadUpstream: UpstreamClient, @unchecked Sendable {
    let fallback: any UpstreamClient
    let connectionsPerHost: Int
    /// Resolves a host name to addresses (the caller's resolver); nil sends names to `fallback`.
    let resolve: (@Sendable (String) async throws -> [String])?
    /// The decoder of a content coding ("gzip", "deflate"); nil leaves encoded bodies to `fallback`
    /// by not asking for them.
    let decoder: (@Sendable (String) -> (any BodyDecoder)?)?
    private let attached = Mutex<Attachment?>(nil)
    private let operations = Mutex<[@Sendable () -> Void]>([])

    struct Attachment: @unchecked Sendable {
        let loop: ServiceLoop
        let context: OpaquePointer
        let vhost: OpaquePointer?
    }

    // Service-thread state.
    private var idle: [String: [RawConnection]] = [:]
    private var live: [String: Int] = [:]
    private var waiting: [String: [UpstreamExchange]] = [:]
    private var shutDown = false
    static let protocolName = CString("bridge.upstream")
    /// The largest request body gathered in memory and sent on the service thread.
    static let maxGatheredBody = 1 << 20

    public init(
        fallback: any UpstreamClient, connectionsPerHost: Int = 16,
        resolve: (@Sendable (String) async throws -> [String])? = nil,
        decoder: (@Sendable (String) -> (any BodyDecoder)?)? = nil
    ) {
        self.fallback = fallback
        self.connectionsPerHost = max(1, connectionsPerHost)
        self.resolve = resolve
        self.decoder = decoder
    }

    func attach(loop: ServiceLoop, context: OpaquePointer, vhost: OpaquePointer?) {
        attached.locked { $0 = Attachment(loop: loop, context: context, vhost: vhost) }
    }

    /// Service thread, as the loop stops: every exchange fails, no connection is made again.
    func detach() {
        shutDown = true
        for (_, queue) in waiting { for exchange in queue { exchange.fail(BridgeError(.network, "the broker is shutting down")) } }
        waiting = [:]
        attached.locked { $0 = nil }
    }

    public func send(_ request: UpstreamRequest) async throws -> UpstreamResponse {
        guard let attachment = attached.locked({ $0 }), let target = Target(request) else {
            return try await fallback.send(request)
        }
        let address: String
        if IPAddress(target.host) != nil {
            guard request.addressAllowed(target.host) else { return try await fallback.send(request) }
            address = target.host
        } else {
            guard let resolve else { return try await fallback.send(request) }
            let addresses = try await resolve(target.host)
            guard let allowed = addresses.first(where: request.addressAllowed), !allowed.contains(":") else {
                return try await fallback.send(request)
            }
            address = allowed
        }
        var body: [UInt8]
        switch request.body {
        case .none: body = []
        case .bytes(let bytes): body = bytes
        case .stream(let length, let next):
            // A body held in memory (it can be made again) of a known, bounded length is
            // gathered and sent with the head; one the client streams goes to `fallback`.
            guard request.bodyAgain != nil, let length, length <= Self.maxGatheredBody else { return try await fallback.send(request) }
            body = []
            body.reserveCapacity(length)
            while let chunk = try await next() { body += chunk }
        }
        // The bytes go out as they are built: libwebsockets' headroom, the head, the body.
        guard var bytes = requestHead(request, target: target, bodyLength: body.count) else { return try await fallback.send(request) }
        bytes += body
        let exchange = UpstreamExchange(
            owner: self, key: "\(address)|\(target.port)", address: address, port: target.port, method: request.method,
            bytes: bytes, canBeSentAgain: request.canBeSentAgain, deadline: request.deadline, url: request.url)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<UpstreamResponse, any Error>) in
                exchange.headWaiter(continuation)
                onServiceThread(attachment) { self.start(exchange) }
            }
        } onCancel: {
            exchange.cancel()
        }
    }

    /// libwebsockets' headroom, then the request line and header fields, with room for the body
    /// after them; nil when a field could not go out as it is (a line
    /// break or NUL in it, which the broker's header rules never let through), left to
    /// AsyncHTTPClient's checks.
    private func requestHead(_ request: UpstreamRequest, target: Target, bodyLength: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: Self.headroom)
        bytes.reserveCapacity(Self.headroom + 1024 + bodyLength)
        func add(_ text: String) { ByteString.append(text, to: &bytes) }
        add(request.method)
        add(" ")
        add(target.requestTarget)
        add(" HTTP/1.1\r\nHost: ")
        add(target.hostHeader)
        add("\r\n")
        var hasLength = false
        var hasEncoding = false
        for field in request.headers {
            let lower = field.name.lowercased()
            if lower == "host" || lower == "transfer-encoding" || lower == "connection" { continue }
            if lower == "content-length" { hasLength = true }
            if lower == "accept-encoding" { hasEncoding = true }
            if field.name.utf8.contains(where: { $0 <= 0x20 || $0 == 0x3A || $0 >= 0x7F }) || field.value.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D || $0 == 0x00 }) {
                return nil
            }
            add(field.name)
            add(": ")
            add(field.value)
            add("\r\n")
        }
        if !hasEncoding, decoder != nil { add("Accept-Encoding: deflate, gzip\r\n") }
        if !hasLength, bodyLength > 0 || ["POST", "PUT", "PATCH"].contains(request.method) { add("Content-Length: \(bodyLength)\r\n") }
        add("\r\n")
        return bytes
    }

    /// The bytes libwebsockets may use in front of what it writes (`LWS_PRE`): a request's bytes
    /// start with them, so a write passes them as they are.
    static let headroom = Int(bridge_lws_pre())

    /// What the URL says about where and what to ask.
    struct Target {
        let host: String
        let port: Int
        let hostHeader: String
        let requestTarget: String

        init?(_ request: UpstreamRequest) {
            guard let parts = URLParts.ascii(request.url), parts.scheme == "http", let host = parts.host, !host.isEmpty,
                !parts.hasCredentials, !host.hasPrefix("[")
            else { return nil }
            self.host = host
            port = parts.port ?? 80
            hostHeader = parts.port.map { "\(host):\($0)" } ?? host
            let path = parts.path.isEmpty ? "/" : parts.path
            requestTarget = parts.query.map { "\(path)?\($0)" } ?? path
            // Only what goes on the request line as it is (a URL the broker did not normalise,
            // with a space, say, is left to AsyncHTTPClient's own checks).
            guard requestTarget.utf8.allSatisfy({ (0x21...0x7E).contains($0) }), hostHeader.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                return nil
            }
        }
    }

    // MARK: Hand-over to the service thread

    private func onServiceThread(_ attachment: Attachment, _ operation: @escaping @Sendable () -> Void) {
        if attachment.loop.isServiceThread { return operation() }
        let first = operations.locked { list -> Bool in
            list.append(operation)
            return list.count == 1
        }
        if first { attachment.loop.wake() }
    }

    /// Runs `operation` on the service thread (now, when called there); false when detached.
    @discardableResult
    func perform(_ operation: @escaping @Sendable () -> Void) -> Bool {
        guard let attachment = attached.locked({ $0 }) else { return false }
        onServiceThread(attachment, operation)
        return true
    }

    /// Service thread: runs what other threads handed over.
    func drain() {
        while true {
            let due = operations.locked { list -> [@Sendable () -> Void] in
                defer { list = [] }
                return list
            }
            if due.isEmpty { return }
            for operation in due { operation() }
        }
    }

    // MARK: Service thread: connections

    private func start(_ exchange: UpstreamExchange) {
        guard !exchange.isFinished else { return }
        guard !shutDown, let attachment = attached.locked({ $0 }) else {
            return exchange.fail(BridgeError(.network, "the broker is shutting down"))
        }
        if var list = idle[exchange.key], let connection = list.popLast() {
            idle[exchange.key] = list.isEmpty ? nil : list
            return assign(exchange, to: connection)
        }
        if live[exchange.key, default: 0] >= connectionsPerHost {
            waiting[exchange.key, default: []].append(exchange)
            // No connection's timer watches a waiting exchange: it ends at its deadline here,
            // and is skipped when its turn comes.
            let remaining = exchange.deadline - ContinuousClock.now
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(max(0, remaining.wholeNanoseconds)))) {
                exchange.fail(BridgeError(.timeout, "\(exchange.url): the upstream exchange timed out"))
            }
            return
        }
        let connection = RawConnection(key: exchange.key)
        let opaque = Unmanaged.passRetained(connection).toOpaque()
        live[exchange.key, default: 0] += 1
        connection.exchange = exchange
        exchange.connection = connection
        let wsi = exchange.address.withCString { address in
            bridge_lws_connect_raw(attachment.context, attachment.vhost, address, Int32(exchange.port), Self.protocolName.pointer, opaque)
        }
        if let wsi, !connection.closed {
            // The request's deadline covers the connecting too.
            armTimer(wsi, exchange)
        } else if wsi == nil, connection.wsi == nil, !connection.closed {
            // Failed at once, with no callback that took the reference back.
            connection.closed = true
            Unmanaged<RawConnection>.fromOpaque(opaque).release()
            live[exchange.key, default: 1] -= 1
            exchange.connection = nil
            exchange.fail(BridgeError(.network, "\(exchange.url): cannot connect to \(exchange.address):\(exchange.port)"))
        }
    }

    private func assign(_ exchange: UpstreamExchange, to connection: RawConnection) {
        connection.exchange = exchange
        exchange.connection = connection
        exchange.parser = HTTP1ResponseParser(method: exchange.method)
        guard let wsi = connection.wsi else { return }
        armTimer(wsi, exchange)
        write(exchange, on: wsi)
    }

    private func armTimer(_ wsi: OpaquePointer, _ exchange: UpstreamExchange) {
        let remaining: Duration = exchange.deadline - ContinuousClock.now
        let nanoseconds: Int64 = remaining.wholeNanoseconds
        let micros: Int64 = Int64(max(1, min(nanoseconds / 1000, 3_600_000_000)))
        lws_set_timer_usecs(wsi, micros)
    }

    private func write(_ exchange: UpstreamExchange, on wsi: OpaquePointer) {
        let pre = Self.headroom
        // A raw write sends the bytes as they are and leaves them so (a resend writes them again).
        let written = exchange.bytes.withUnsafeBytes { raw in
            bridge_lws_write_raw(wsi, UnsafeMutablePointer(mutating: raw.baseAddress!.advanced(by: pre).assumingMemoryBound(to: UInt8.self)), raw.count - pre)
        }
        if written < 0 { bridge_lws_close_async(wsi) }
    }

    /// A connection's exchange ended with the connection still usable: the next waiting
    /// exchange takes it, or it rests in the pool.
    private func release(_ connection: RawConnection, wsi: OpaquePointer) {
        connection.exchange?.connection = nil
        connection.exchange = nil
        connection.reused = true
        // The last bytes may have filled the body's buffer: the next exchange reads from the start.
        resumeReading(connection)
        lws_set_timer_usecs(wsi, -1)
        if let next = nextWaiting(for: connection.key) { return assign(next, to: connection) }
        idle[connection.key, default: []].append(connection)
        lws_set_timer_usecs(wsi, Self.idleTimeoutMicroseconds)
    }

    /// How long an idle connection is kept: AsyncHTTPClient's 60 s.
    static let idleTimeoutMicroseconds: Int64 = 60_000_000

    /// The first waiting exchange for `key` that has not ended (at its deadline) meanwhile.
    private func nextWaiting(for key: String) -> UpstreamExchange? {
        guard var queue = waiting[key] else { return nil }
        defer { waiting[key] = queue.isEmpty ? nil : queue }
        while !queue.isEmpty {
            let next = queue.removeFirst()
            if !next.isFinished { return next }
        }
        return nil
    }

    private func connectionGone(_ connection: RawConnection) {
        live[connection.key, default: 1] -= 1
        if live[connection.key] == 0 { live[connection.key] = nil }
        if var list = idle[connection.key], let index = list.firstIndex(where: { $0 === connection }) {
            list.remove(at: index)
            idle[connection.key] = list.isEmpty ? nil : list
        }
        // A waiting exchange gets the place the closed connection held.
        if let next = nextWaiting(for: connection.key) { start(next) }
    }

    /// The lws callback of the upstream protocol's connections.
    func handle(wsi: OpaquePointer, reason: lws_callback_reasons, input: UnsafeMutableRawPointer?, length: Int) -> Int32 {
        guard let opaque = lws_get_opaque_user_data(wsi) else { return 0 }
        let connection = Unmanaged<RawConnection>.fromOpaque(opaque).takeUnretainedValue()
        switch reason {
        case LWS_CALLBACK_RAW_CONNECTED:
            connection.wsi = wsi
            bridge_lws_nodelay(wsi)
            guard let exchange = connection.exchange else {
                // Its exchange ended while it connected: closed when given up on, else pooled.
                if connection.abandoned { return -1 }
                release(connection, wsi: wsi)
                return 0
            }
            exchange.parser = HTTP1ResponseParser(method: exchange.method)
            armTimer(wsi, exchange)
            write(exchange, on: wsi)
        case LWS_CALLBACK_RAW_RX:
            guard let exchange = connection.exchange, let input else {
                // Bytes on an idle connection: nothing may come unasked; close it.
                return -1
            }
            let progress: HTTP1ResponseParser.Progress
            do {
                progress = try exchange.parser.parse(
                    UnsafeRawBufferPointer(start: input, count: length),
                    onHead: { head in exchange.headArrived(head) },
                    onBody: { bytes in exchange.bodyArrived(bytes) })
            } catch {
                exchange.fail(BridgeError(.network, "\(exchange.url): \(error)"))
                connection.exchange = nil
                return -1
            }
            if case .complete(let consumed, let keepAlive) = progress {
                exchange.end()
                if consumed < length || !keepAlive {
                    connection.exchange = nil
                    return -1
                }
                release(connection, wsi: wsi)
            }
        case LWS_CALLBACK_TIMER:
            // The exchange's deadline, or an idle connection's time out.
            if let exchange = connection.exchange {
                exchange.fail(BridgeError(.timeout, "\(exchange.url): the upstream exchange timed out"))
                connection.exchange = nil
            }
            return -1
        case LWS_CALLBACK_CLIENT_CONNECTION_ERROR, LWS_CALLBACK_RAW_CLOSE:
            let wasConnected = connection.wsi != nil
            closed(connection, error: reason == LWS_CALLBACK_CLIENT_CONNECTION_ERROR, wasConnected: wasConnected, detail: input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) })
            lws_set_opaque_user_data(wsi, nil)
        default:
            break
        }
        return 0
    }

    private func closed(_ connection: RawConnection, error: Bool, wasConnected: Bool, detail: String?) {
        guard !connection.closed else { return }
        connection.closed = true
        connection.wsi = nil
        let exchange = connection.exchange
        connection.exchange = nil
        defer { Unmanaged.passUnretained(connection).release() }
        if let exchange, !exchange.isFinished {
            exchange.connection = nil
            if !error, wasConnected, exchange.parser.sawNothing, exchange.canBeSentAgain, exchange.resends < 2, connection.reused {
                // The origin closed a kept-alive connection as the request went out on it.
                exchange.resends += 1
                connectionGone(connection)
                return start(exchange)
            }
            if exchange.parser.hasHead {
                do {
                    try exchange.parser.finish()
                    exchange.end()
                } catch {
                    exchange.fail(BridgeError(.network, "\(exchange.url): \(error)"))
                }
            } else if error || !wasConnected {
                exchange.fail(BridgeError(.network, "\(exchange.url): cannot connect to \(exchange.address):\(exchange.port)\(detail.map { " (\($0))" } ?? "")"))
            } else {
                exchange.fail(BridgeError(.network, "\(exchange.url): the connection closed before a response"))
            }
        }
        connectionGone(connection)
    }

    /// Service thread: more of `connection`'s body waits for the reader than it may; it reads no more.
    func pauseReading(_ connection: RawConnection) {
        guard !connection.paused, let wsi = connection.wsi else { return }
        connection.paused = true
        lws_rx_flow_control(wsi, 0)
    }

    /// Service thread: the reader took enough for `connection` to read again.
    func resumeReading(_ connection: RawConnection) {
        guard connection.paused, let wsi = connection.wsi else { return }
        connection.paused = false
        lws_rx_flow_control(wsi, 1)
    }

    /// Service thread: the exchange on `connection` is over before its end (cancelled, or its
    /// body dropped): the connection closes.
    func abandon(_ connection: RawConnection) {
        guard let wsi = connection.wsi else {
            // Still connecting: it closes once connected or failed.
            connection.exchange = nil
            connection.abandoned = true
            return
        }
        connection.exchange = nil
        bridge_lws_close_async(wsi)
    }
}


/// One raw TCP connection to an origin; lws holds a retained reference as the wsi's opaque data
/// until the connection closes.
final class RawConnection: @unchecked Sendable {
    let key: String
    var wsi: OpaquePointer?
    var exchange: UpstreamExchange?
    var closed = false
    var paused = false
    var reused = false
    var abandoned = false

    init(key: String) { self.key = key }
}

/// One exchange: filled on the service thread, its head awaited and its body read by a task
/// (on that thread too when the broker's tasks run there, or on any other).
final class UpstreamExchange: @unchecked Sendable {
    let owner: ServiceThreadUpstream
    let key: String
    let address: String
    let port: Int
    let method: String
    /// What is written: `ServiceThreadUpstream.headroom` bytes, then the request.
    let bytes: [UInt8]
    let canBeSentAgain: Bool
    let deadline: ContinuousClock.Instant
    let url: String

    // Service thread.
    var connection: RawConnection?
    var parser: HTTP1ResponseParser
    var resends = 0
    var decoder: (any BodyDecoder)?

    /// Body bytes buffered beyond this stop the connection's reads until the reader has taken
    /// them down to `resumeBytes`.
    static let pauseBytes = 1 << 20
    static let resumeBytes = 256 * 1024

    /// The body on its way to the reader; set once in `init`.
    private(set) var body: ChunkChannel!

    private struct Shared {
        var headWaiter: CheckedContinuation<UpstreamResponse, any Error>?
        var headDone = false
        var failure: (any Error)?
        var finished = false
        /// The frames the reader takes (`BodyReader.nextFrame`), known from its first call:
        /// bytes arriving after it land straight in such frames, one copy from the socket's
        /// buffer to the frame that goes out.
        var frameShape: (headroom: Int, limit: Int)?
    }

    private let shared = Mutex(Shared())

    init(owner: ServiceThreadUpstream, key: String, address: String, port: Int, method: String, bytes: [UInt8],
         canBeSentAgain: Bool, deadline: ContinuousClock.Instant, url: String) {
        self.owner = owner
        self.key = key
        self.address = address
        self.port = port
        self.method = method
        self.bytes = bytes
        self.canBeSentAgain = canBeSentAgain
        self.deadline = deadline
        self.url = url
        parser = HTTP1ResponseParser(method: method)
        body = ChunkChannel(highWater: Self.pauseBytes, lowWater: Self.resumeBytes) { [weak self] over in
            self?.pressure(over: over)
        }
    }

    var isFinished: Bool { shared.locked { $0.finished } }

    func headWaiter(_ continuation: CheckedContinuation<UpstreamResponse, any Error>) {
        let failure = shared.locked { state -> (any Error)? in
            if let failure = state.failure {
                state.headDone = true
                return failure
            }
            state.headWaiter = continuation
            return nil
        }
        if let failure { continuation.resume(throwing: failure) }
    }

    /// Service thread: the final head arrived.
    func headArrived(_ head: HTTP1ResponseHead) {
        var decoded = false
        if let coding = head.headers.first("content-encoding")?.lowercased(), let make = owner.decoder,
            let decoder = make(coding)
        {
            self.decoder = decoder
            decoded = true
        }
        let reader = BodyReader(exchange: self)
        let body = UpstreamResponseBody(
            decoded: decoded, nextFrame: { headroom, limit in try await reader.nextFrame(headroom: headroom, limit: limit) }
        ) { try await reader.next() }
        let response = UpstreamResponse(status: head.status, statusText: head.reason, headers: head.headers, body: body)
        let waiter = shared.locked { state -> CheckedContinuation<UpstreamResponse, any Error>? in
            guard !state.headDone else { return nil }
            state.headDone = true
            defer { state.headWaiter = nil }
            return state.headWaiter
        }
        waiter?.resume(returning: response)
    }

    /// Service thread: body bytes arrived (decoded here when the response has a content coding).
    func bodyArrived(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        if let decoder {
            do {
                let decoded = try decoder.decode(bytes)
                if !decoded.isEmpty { body.append(.bytes(decoded)) }
            } catch {
                fail(BridgeError(.network, "\(url): the body cannot be decoded: \(error)"))
            }
        } else if let shape = shared.locked({ $0.frameShape }) {
            var offset = 0
            while offset < bytes.count {
                let size = min(shape.limit, bytes.count - offset)
                body.append(.frame(FrameBuffer(headroom: shape.headroom, copying: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + size)]))))
                offset += size
            }
        } else {
            body.append(.bytes(Array(bytes)))
        }
    }

    /// The reader takes frames with `headroom` and at most `limit` bytes from now on.
    func takesFrames(headroom: Int, limit: Int) {
        shared.locked { state in
            if state.frameShape == nil { state.frameShape = (headroom, limit) }
        }
    }

    /// The body's buffer went over `pauseBytes` (service thread, as bytes arrive) or back under
    /// `resumeBytes` (the reader's thread): the connection's reads stop or go on.
    private func pressure(over: Bool) {
        owner.perform { [self] in
            guard let connection else { return }
            if over { owner.pauseReading(connection) } else { owner.resumeReading(connection) }
        }
    }

    /// Service thread: the message ended.
    func end() {
        if let decoder {
            self.decoder = nil
            do {
                let rest = try decoder.finish()
                if !rest.isEmpty { body.append(.bytes(rest)) }
            } catch {
                return fail(BridgeError(.network, "\(url): the body cannot be decoded: \(error)"))
            }
        }
        let first = shared.locked { state -> Bool in
            defer { state.finished = true }
            return !state.finished
        }
        if first { body.append(.bytes([]), isEnd: true) }
    }

    /// Ends the exchange with `error` (any thread): the head's waiter throws it, or the body's reader.
    func fail(_ error: any Error) {
        let (open, head) = shared.locked { state -> (Bool, CheckedContinuation<UpstreamResponse, any Error>?) in
            guard !state.finished else { return (false, nil) }
            state.finished = true
            state.failure = error
            var head: CheckedContinuation<UpstreamResponse, any Error>?
            if !state.headDone, let waiter = state.headWaiter {
                state.headDone = true
                head = waiter
                state.headWaiter = nil
            }
            return (true, head)
        }
        guard open else { return }
        head?.resume(throwing: error)
        body.fail(error)
    }

    /// The task was cancelled or the body dropped (any thread): the exchange ends and its
    /// connection closes, unless it already ended.
    func cancel(_ error: any Error = CancellationError()) {
        let wasOpen = !isFinished
        fail(error)
        guard wasOpen else { return }
        owner.perform { [self] in
            guard let connection, connection.exchange === self else { return }
            self.connection = nil
            owner.abandon(connection)
        }
    }

    /// The next chunk of the body, at most `limit` bytes; nil at the end.
    func take(limit: Int) async throws -> BodyChunk? {
        try await body.next(limit: limit) { [self] in cancel() }
    }
}

/// Reads an exchange's body; dropped before the end, it ends the exchange (and closes its connection).
final class BodyReader: @unchecked Sendable {
    let exchange: UpstreamExchange

    init(exchange: UpstreamExchange) { self.exchange = exchange }

    deinit {
        if !exchange.isFinished { exchange.cancel(BridgeError(.cancelled, "the body was dropped")) }
    }

    func next() async throws -> [UInt8]? {
        try await exchange.take(limit: Int.max)?.bytes
    }

    func nextFrame(headroom: Int, limit: Int) async throws -> FrameBuffer? {
        let limit = max(1, limit)
        exchange.takesFrames(headroom: headroom, limit: limit)
        switch try await exchange.take(limit: limit) {
        case nil:
            return nil
        case .frame(let frame) where frame.headroom == headroom:
            return frame
        case .frame(let frame):
            return frame.withUnsafeBytes { FrameBuffer(headroom: headroom, copying: $0) }
        case .bytes(let bytes):
            return FrameBuffer(headroom: headroom, copying: bytes)
        }
    }
}
