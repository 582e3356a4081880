import BridgeCore
import CWebKitGTK
import Foundation
import Synchronization

/// The broker's side of one page connection inside a `BridgeWebView` (one per frame whose shim
/// said `open`): frames the broker sends are queued here from any thread and handed to the page
/// on the main thread, the frames of one main-loop turn at once, one of two ways
/// (docs/PROTOCOL.md, "WKWebView transport"; docs/BENCHMARKS.md, "Host-to-page binary bodies"):
///
/// - `evaluate` (the top frame): one `evaluate_javascript` of `__bridgeBrokerReceive(string)`
///   calls, text frames as JSON strings and binary frames as `"b64:"` strings. Every script checks
///   `window.__bridgeBrokerSession` first, so frames of a connection that a navigation ended never
///   reach the next document. Measured the faster way for the page's bodies (WebKitGTK 2.50 hands a
///   script to the page faster than a string as a message reply).
/// - `replies` (any other frame, which `evaluate_javascript` cannot reach): the frame's shim keeps
///   one message waiting, first its `open`, then `N:pull` after each answer; the answer is an
///   object: `session` (the connection number, in the answer to `open` only), `frames` (every
///   frame queued, up to `batchBytes`) and, once the connection ended, `close` (`{code, reason}`).
final class PageSink: ConnectionSink, @unchecked Sendable {
    /// How frames reach the page.
    enum Delivery {
        /// Through `evaluate_javascript` on the main thread; the closure is called back when it ran.
        case evaluate(@Sendable (String, @escaping @Sendable () -> Void) -> Void)
        /// In the replies to the frame's waiting messages.
        case replies
    }

    /// The connection number this sink belongs to, and the prefix of the page's messages.
    let session: Int
    /// Queued bytes over which `isWritable` turns false.
    let highWater: Int
    let delivery: Delivery
    private let state = Mutex(State())
    /// The page's `open` or `pull` waiting for frames; main thread only.
    private var held: (reply: OpaquePointer, context: OpaquePointer)?
    private var sessionSent = false
    private var started = false
    private var evaluates: Bool {
        if case .evaluate = delivery { return true }
        return false
    }

    struct State {
        var frames: [[UInt8]] = []
        var scheduled = false
        var pendingBytes = 0
        var closed = false
        var closing: (code: UInt16, reason: String)?
        var waiters: [CheckedContinuation<Void, Never>] = []
        var replies = 0
        var lastReply: ContinuousClock.Instant?
        var deliveries = 0

        /// Takes the frames at the head of the queue that one delivery carries (a script or an
        /// answer): up to `limit` bytes, or the first frame alone when it is larger; a delivery
        /// that carries any is counted.
        mutating func takeBatch(limit: Int) -> (frames: [[UInt8]], bytes: Int) {
            var count = 0, bytes = 0
            while count < frames.count, count == 0 || bytes + frames[count].count <= limit {
                bytes += frames[count].count
                count += 1
            }
            let batch = Array(frames[..<count])
            frames.removeFirst(count)
            if count > 0 { deliveries += 1 }
            return (batch, bytes)
        }
    }

    /// Replies sent to the page so far, and when the last one was queued.
    var replyStats: (count: Int, last: ContinuousClock.Instant?) { state.locked { ($0.replies, $0.lastReply) } }
    /// Scripts or replies that carried frames to the page so far.
    var deliveries: Int { state.locked { $0.deliveries } }
    private static let replyPrefix = Array("{\"type\":\"reply\"".utf8)

    /// The most frame bytes one answer carries (one frame alone may be larger); more waits for
    /// the next pull.
    static let batchBytes = 4 << 20

    init(session: Int, highWater: Int = 8 << 20, delivery: Delivery) {
        self.session = session
        self.highWater = highWater
        self.delivery = delivery
    }

    func send(_ bytes: [UInt8], binary: Bool) {
        // A reply envelope, or a whole response (a hit's head and body in one binary frame).
        if binary ? bytes.first == BinaryFrameHeader.wholeResponse : bytes.starts(with: Self.replyPrefix) {
            let now = ContinuousClock.now
            state.locked { state in
                state.replies += 1
                state.lastReply = now
            }
        }
        var frame: [UInt8] = []
        frame.reserveCapacity((binary ? 4 + (bytes.count + 2) / 3 * 4 : bytes.count) + 16)
        if evaluates { frame.append(contentsOf: Array("r(\"".utf8)) }
        if binary {
            frame.append(contentsOf: Array("b64:".utf8))
            frame.append(contentsOf: Data(bytes).base64EncodedData())
        } else if evaluates {
            Self.appendEscaped(bytes, to: &frame)
        } else {
            frame.append(contentsOf: bytes)
        }
        // A call in the script, or a C string for jsc_value_new_array_from_strv (JSON has no raw NUL).
        if evaluates { frame.append(contentsOf: Array("\");".utf8)) } else { frame.append(0) }
        queue(frame)
    }

    /// Tells the page its side of the connection is gone, after the frames queued before;
    /// nothing is sent after it.
    func close(code: UInt16, reason: String) {
        if evaluates {
            var call = Array("window.__bridgeBrokerClose(\(code),\"".utf8)
            Self.appendEscaped(Array(reason.utf8), to: &call)
            call.append(contentsOf: Array("\");".utf8))
            queue(call)
            state.locked { $0.closed = true }
            return
        }
        let schedule = state.locked { state in
            guard !state.closed else { return false }
            state.closed = true
            state.closing = (code, reason)
            defer { state.scheduled = true }
            return !state.scheduled
        }
        if schedule { MainLoop.perform { self.flush() } }
    }

    /// Drops whatever was not delivered yet and every later frame: the page is gone. A message
    /// still waiting is answered with the end of the connection.
    func markClosed() {
        let waiters = state.locked { state in
            state.closed = true
            state.frames = []
            state.pendingBytes = 0
            if state.closing == nil { state.closing = (1001, "the page is gone") }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
        if !evaluates { MainLoop.perform { self.flush() } }
    }

    var isWritable: Bool { state.locked { $0.pendingBytes <= highWater || $0.closed } }

    func waitUntilWritable() async {
        await withCheckedContinuation { continuation in
            let ready = state.locked { state in
                if state.pendingBytes <= highWater || state.closed { return true }
                state.waiters.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// The page cannot be paused: its request bodies arrive through `postMessage` as it sends
    /// them. The broker's high-water mark on a request body is therefore not enforced here.
    func pauseReading(_ paused: Bool) {}

    private func queue(_ frame: [UInt8]) {
        let schedule = state.locked { state in
            guard !state.closed else { return false }
            state.frames.append(frame)
            state.pendingBytes += frame.count
            defer { state.scheduled = true }
            return !state.scheduled
        }
        if schedule { MainLoop.perform { self.flush() } }
    }

    /// On the main thread: the page's `open` or `pull` arrived; it is answered at once when
    /// frames are queued, else when the next ones are. A second one answers the first empty.
    func hold(reply: OpaquePointer, context: OpaquePointer) {
        if let earlier = held {
            held = nil
            answer(earlier, frames: [], close: nil)
        }
        held = (webkit_script_message_reply_ref(reply), context)
        g_object_ref(UnsafeMutableRawPointer(context))
        flush()
    }

    /// On the main thread: hands what is queued to the page.
    private func flush() {
        if case .evaluate(let evaluate) = delivery { return flushScripts(evaluate) }
        let taken: (frames: [[UInt8]], bytes: Int, close: (code: UInt16, reason: String)?)? = state.locked { state in
            state.scheduled = false
            guard held != nil, !state.frames.isEmpty || state.closing != nil || !sessionSent else { return nil }
            let batch = state.takeBatch(limit: Self.batchBytes)
            // The end goes after the last frame queued before it.
            let close = state.frames.isEmpty ? state.closing.take() : nil
            return (batch.frames, batch.bytes, close)
        }
        guard let taken, let current = held else { return }
        held = nil
        answer(current, frames: taken.frames, close: taken.close)
        delivered(taken.bytes)
    }

    /// On the main thread: hands the queued calls to the page in scripts of at most `batchBytes`
    /// (or one call, when it alone is larger).
    private func flushScripts(_ evaluate: (String, @escaping @Sendable () -> Void) -> Void) {
        while true {
            let next: (script: String, bytes: Int)? = state.locked { state in
                guard !state.frames.isEmpty else {
                    state.scheduled = false
                    return nil
                }
                let batch = state.takeBatch(limit: Self.batchBytes)
                var script: [UInt8] = []
                script.reserveCapacity(batch.bytes + 96)
                if started {
                    script += Array("if(window.__bridgeBrokerSession===\(session)){".utf8)
                } else {
                    // The first script of a session answers the page's `open`: it tells the page
                    // which session it is, so later scripts of an older session are ignored.
                    script += Array("{window.__bridgeBrokerSession=\(session);".utf8)
                    started = true
                }
                script += Array("const r=window.__bridgeBrokerReceive;".utf8)
                for call in batch.frames { script += call }
                script.append(UInt8(ascii: "}"))
                return (String(decoding: script, as: UTF8.self), batch.bytes)
            }
            guard let next else { return }
            evaluate(next.script) { [self] in delivered(next.bytes) }
        }
    }

    private func delivered(_ bytes: Int) {
        let waiters: [CheckedContinuation<Void, Never>] = state.locked { state in
            state.pendingBytes -= bytes
            guard state.pendingBytes <= highWater else { return [] }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Appends UTF-8 text as the inside of a JavaScript string literal.
    static func appendEscaped(_ bytes: [UInt8], to out: inout [UInt8]) {
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [0x5C, byte])
            case UInt8(ascii: "\\"): out.append(contentsOf: [0x5C, byte])
            case 0x0A: out.append(contentsOf: Array("\\n".utf8))
            case 0x0D: out.append(contentsOf: Array("\\r".utf8))
            case 0..<0x20:
                out.append(contentsOf: Array(String(format: "\\u%04x", byte).utf8))
            case 0xE2 where index + 2 < bytes.count && bytes[index + 1] == 0x80 && (bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9):
                // U+2028 and U+2029 end a line in older JavaScript string literals.
                out.append(contentsOf: Array((bytes[index + 2] == 0xA8 ? "\\u2028" : "\\u2029").utf8))
                index += 2
            default: out.append(byte)
            }
            index += 1
        }
    }

    private func answer(_ waiting: (reply: OpaquePointer, context: OpaquePointer), frames: [[UInt8]], close: (code: UInt16, reason: String)?) {
        let context = waiting.context
        let object = jsc_value_new_object(context, nil, nil)!
        if !sessionSent {
            sessionSent = true
            set(object, "session", jsc_value_new_number(context, Double(session)))
        }
        if !frames.isEmpty {
            // Each frame (a C string) is copied into a JS string while the array is made.
            let pointers = UnsafeMutablePointer<UnsafePointer<CChar>?>.allocate(capacity: frames.count + 1)
            let copies = frames.map { frame in
                let copy = UnsafeMutablePointer<CChar>.allocate(capacity: frame.count)
                frame.withUnsafeBytes { UnsafeMutableRawPointer(copy).copyMemory(from: $0.baseAddress!, byteCount: frame.count) }
                return copy
            }
            for (index, copy) in copies.enumerated() { pointers[index] = UnsafePointer(copy) }
            pointers[frames.count] = nil
            set(object, "frames", jsc_value_new_array_from_strv(context, pointers))
            for copy in copies { copy.deallocate() }
            pointers.deallocate()
        }
        if let close {
            let end = jsc_value_new_object(context, nil, nil)!
            set(end, "code", jsc_value_new_number(context, Double(close.code)))
            set(end, "reason", jsc_value_new_string(context, close.reason))
            set(object, "close", end)
        }
        BridgeWebView.trace("host -> page \(session): \(frames.count) frames, \(frames.reduce(0) { $0 + $1.count }) bytes\(close.map { ", close \($0.code)" } ?? "")")
        webkit_script_message_reply_return_value(waiting.reply, object)
        g_object_unref(UnsafeMutableRawPointer(object))
        webkit_script_message_reply_unref(waiting.reply)
        g_object_unref(UnsafeMutableRawPointer(context))
    }

    private func set(_ object: OpaquePointer, _ name: String, _ value: OpaquePointer?) {
        guard let value else { return }
        jsc_value_object_set_property(object, name, value)
        g_object_unref(UnsafeMutableRawPointer(value))
    }
}

extension Optional {
    /// The value, leaving nil behind.
    fileprivate mutating func take() -> Wrapped? {
        defer { self = nil }
        return self
    }
}
