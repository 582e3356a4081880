import Dispatch
import Synchronization

/// Posts a page sends over HTTP before its WebSocket is open (`POST /bridge/early`,
/// docs/PROTOCOL.md): its identity and fetches that want a fresh stored response or nothing.
///
/// A page's WebSocket opens late: Chromium starts it only after the page's parse and first scripts
/// (15 to 20 ms after its first `fetch()` in the page-load benchmark), while a plain HTTP request
/// leaves at once. What the page asks then can be answered from the cache alone, so the answer is
/// ready before the socket: each request runs on a connection of its own, whose frames are
/// collected until every post has replied and go back as one body. What is not fresh in the cache
/// is answered `not_cached` and goes over the WebSocket as usual; nothing here goes upstream.
public enum EarlyPosts {
    /// The largest request body taken (413 above it).
    public static let maxRequestBytes = 256 * 1024
    /// The most fetches one request may hold.
    public static let maxFetches = 64
    /// The answer stops growing here: posts not answered by then are cancelled and left out, and
    /// the page sends them again over the WebSocket.
    public static let maxAnswerBytes = 8 * 1024 * 1024
    /// How long the lookups may take before the answer goes with what is there.
    public static let deadline: Duration = .seconds(5)

    /// A frame's kind in an answer: a text frame (a JSON envelope) or a binary one.
    public static let textKind: UInt8 = 1
    /// See `textKind`.
    public static let binaryKind: UInt8 = 2
    /// A frame's kind and length in front of its bytes in an answer.
    static let frameHeaderBytes = 5

    /// The request body's posts, one envelope per line, decoded and checked: `page.identity` (without an id),
    /// `fetch` posts with an id, cache mode `fresh-only` and no request body, or one
    /// `page.preloaded` with an id (whose fetches are `fresh-only`) and no fetch beside it.
    public static func parse(_ body: [UInt8]) throws(BridgeError) -> [ClientMessage] {
        guard body.count <= maxRequestBytes else {
            throw BridgeError(.tooLarge, "an early request holds at most \(maxRequestBytes) bytes")
        }
        var lines: [ClientMessage] = []
        var fetches = 0
        for raw in body.split(separator: UInt8(ascii: "\n")) {
            let line = Array(raw.last == UInt8(ascii: "\r") ? raw.dropLast() : raw[...])
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            let decoded = line.withUnsafeBytes { bytes in Result { () throws(EnvelopeError) in try ClientMessage.decode(bytes) } }
            let message: ClientMessage
            switch decoded {
            case .success(let value): message = value
            case .failure(let error): throw BridgeError(.badMessage, "line \(lines.count + 1): \(error.message)")
            }
            guard case .post(let name, let id, let postBody) = message else {
                throw BridgeError(.badMessage, "line \(lines.count + 1): only posts go early")
            }
            switch name {
            case "page.identity":
                break
            case "page.preloaded":
                // Its fetches stand for a whole request's worth: nothing else asks beside it.
                guard id != nil else { throw BridgeError(.badMessage, "line \(lines.count + 1): page.preloaded needs an id") }
                fetches += PreloadedPages.maxResources
                guard fetches <= maxFetches else {
                    throw BridgeError(.tooLarge, "an early request with page.preloaded holds no other fetch")
                }
            case "fetch":
                guard id != nil else { throw BridgeError(.badMessage, "line \(lines.count + 1): an early fetch needs an id") }
                guard postBody["cache"]?.stringValue == "fresh-only" else {
                    throw BridgeError(.badMessage, "line \(lines.count + 1): an early fetch asks with \"cache\": \"fresh-only\"")
                }
                guard postBody["body"] == nil || postBody["body"]!.isNull else {
                    throw BridgeError(.badMessage, "line \(lines.count + 1): an early fetch has no request body")
                }
                fetches += 1
                guard fetches <= maxFetches else {
                    throw BridgeError(.tooLarge, "an early request holds at most \(maxFetches) fetches")
                }
            default:
                throw BridgeError(.badMessage, "line \(lines.count + 1): only page.identity, page.preloaded and fetch posts go early, not \"\(name)\"")
            }
            lines.append(message)
        }
        return lines
    }

    /// Runs `lines` (from `parse`) on a new connection of `broker` and calls `completion` once,
    /// from any thread, with the answer: every frame the posts sent, each as
    /// `[kind][UInt32 big-endian length][bytes]`, once each has replied (or the answer is full, or
    /// `deadline` passed). The answer starts after `headroom` bytes of zeros, which a transport
    /// that needs free bytes in front of what it writes (libwebsockets' `LWS_PRE`) writes in
    /// place of copying the answer.
    public static func run(
        _ lines: [ClientMessage], broker: Broker, info: ConnectionInfo, deadline: Duration = EarlyPosts.deadline,
        headroom: Int = 0, completion: @escaping @Sendable ([UInt8]) -> Void
    ) {
        let sink = Collector(limit: maxAnswerBytes, headroom: headroom, deadlines: broker.deadlines, completion: completion)
        let connection = broker.connect(sink: sink, info: info)
        sink.start(connection)
        // On the broker's one deadline timer, as the posts' own deadlines: a dispatch timer per
        // request would wake libdispatch's manager thread on every one (DeadlineTimer).
        sink.keep(deadline: broker.deadlines.schedule(after: deadline) { [weak sink] in sink?.finish() })
        for line in lines { connection.receive(line) }
        connection.whenIdle { sink.finish() }
    }

    /// The early connection's sink: collects its frames (not the hello) into the answer.
    final class Collector: ConnectionSink, @unchecked Sendable {
        /// `connection` is there from `start` until `finish`: frames before it (the hello) and
        /// after it are not the answer's.
        private struct State {
            /// The answer's frames so far, each kept as it came (a whole response's frame is not
            /// copied until `finish` joins them), and their size in the answer.
            var pieces: [Piece] = []
            var size = 0
            var connection: BrokerConnection?
            /// The deadline's token on `deadlines`, cancelled when the answer goes first.
            var deadline: UInt64?
        }

        /// One frame of the answer: a text frame's bytes, or a binary frame as the connection built it.
        private enum Piece {
            case bytes([UInt8], binary: Bool)
            case frame(FrameBuffer)

            var kind: UInt8 {
                switch self {
                case .bytes(_, let binary): binary ? EarlyPosts.binaryKind : EarlyPosts.textKind
                case .frame: EarlyPosts.binaryKind
                }
            }

            var count: Int {
                switch self {
                case .bytes(let bytes, _): bytes.count
                case .frame(let frame): frame.count
                }
            }

            func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
                switch self {
                case .bytes(let bytes, _): bytes.withUnsafeBytes(body)
                case .frame(let frame): frame.withUnsafeBytes(body)
                }
            }
        }

        private let limit: Int
        private let headroom: Int
        private let deadlines: DeadlineTimer
        private let completion: @Sendable ([UInt8]) -> Void
        private let state = Mutex(State())

        init(limit: Int, headroom: Int = 0, deadlines: DeadlineTimer, completion: @escaping @Sendable ([UInt8]) -> Void) {
            self.limit = limit
            self.headroom = headroom
            self.deadlines = deadlines
            self.completion = completion
        }

        func start(_ connection: BrokerConnection) {
            state.withLock { $0.connection = connection }
        }

        /// Keeps the deadline's token for `finish` to cancel; cancels it at once if the answer went.
        func keep(deadline token: UInt64) {
            let gone: Bool = state.withLock { state in
                if state.connection != nil { state.deadline = token }
                return state.connection == nil
            }
            if gone { deadlines.cancel(token) }
        }

        func send(_ bytes: [UInt8], binary: Bool) {
            keep(.bytes(bytes, binary: binary))
        }

        /// A frame the connection built (a whole response, a body chunk) is kept as it is, not
        /// copied out of its buffer as `ConnectionSink`'s default would.
        func send(framed: FrameBuffer, binary: Bool) {
            keep(binary ? .frame(framed) : .bytes(framed.bytes, binary: false))
        }

        private func keep(_ piece: Piece) {
            let full: Bool = state.withLock { state in
                guard state.connection != nil else { return false }
                let size = state.size + EarlyPosts.frameHeaderBytes + piece.count
                guard size <= limit else { return true }
                state.pieces.append(piece)
                state.size = size
                return false
            }
            // Off this thread: the connection may be sending under its own lock.
            if full { DispatchQueue.global().async { self.finish() } }
        }

        func waitUntilWritable() async {}

        func close(code: UInt16, reason: String) {
            DispatchQueue.global().async { self.finish() }
        }

        func pauseReading(_ paused: Bool) {}

        /// Sends the answer once; the posts still running are cancelled.
        func finish() {
            let done: ([Piece], Int, BrokerConnection, UInt64?)? = state.withLock { state in
                guard let connection = state.connection else { return nil }
                defer { state = State() }
                return (state.pieces, state.size, connection, state.deadline)
            }
            guard let (pieces, size, connection, deadline) = done else { return }
            if let deadline { deadlines.cancel(deadline) }
            connection.closed()
            completion(Self.join(pieces, size: size, headroom: headroom))
        }

        /// The answer's bytes after `headroom` zeros: one allocation of the exact size, each
        /// frame copied into it once.
        private static func join(_ pieces: [Piece], size: Int, headroom: Int) -> [UInt8] {
            [UInt8](unsafeUninitializedCapacity: headroom + size) { buffer, initialized in
                guard let base = buffer.baseAddress else { return }
                base.initialize(repeating: 0, count: headroom)
                var at = headroom
                for piece in pieces {
                    buffer[at] = piece.kind
                    UInt32(piece.count).forEachBigEndianByte { byte in
                        at += 1
                        buffer[at] = byte
                    }
                    at += 1
                    piece.withUnsafeBytes { bytes in
                        if let source = bytes.baseAddress, !bytes.isEmpty {
                            UnsafeMutableRawPointer(base + at).copyMemory(from: source, byteCount: bytes.count)
                        }
                    }
                    at += piece.count
                }
                initialized = at
            }
        }
    }
}
