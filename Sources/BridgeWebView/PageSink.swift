import BridgeCore
import Foundation
import Synchronization

/// The broker's side of one page connection inside a `BridgeWebView`: frames the broker sends
/// are queued here from any thread and delivered to the page on the main thread, batched into
/// one `evaluate_javascript` per main-loop turn.
///
/// Text frames reach the page as JSON strings and binary frames as `"b64:"` strings (base64 of
/// the whole frame), both handed to `window.__bridgeBrokerReceive`, as docs/PROTOCOL.md's
/// WKWebView transport says. Every script checks `window.__bridgeBrokerSession` first, so frames
/// of a connection that a navigation ended never reach the next document.
final class PageSink: ConnectionSink, @unchecked Sendable {
    /// The connection number this sink belongs to, also set in the page as its session.
    let session: Int
    /// Queued plus delivered-but-not-yet-run bytes over which `isWritable` turns false.
    let highWater: Int
    /// Calls `evaluate_javascript` on the main thread; the closure is called back when it ran.
    private let evaluate: @Sendable (String, @escaping @Sendable () -> Void) -> Void
    private let state = Mutex(State())

    struct State {
        var calls: [[UInt8]] = []
        var scheduled = false
        var pendingBytes = 0
        var closed = false
        var started = false
        var waiters: [CheckedContinuation<Void, Never>] = []
        var replies = 0
        var lastReply: ContinuousClock.Instant?
    }

    /// Replies sent to the page so far, and when the last one was queued.
    var replyStats: (count: Int, last: ContinuousClock.Instant?) { state.withLock { ($0.replies, $0.lastReply) } }
    private static let replyPrefix = Array("{\"type\":\"reply\"".utf8)

    /// The largest script one `evaluate_javascript` carries; more waits for the next one.
    static let batchBytes = 4 << 20

    init(session: Int, highWater: Int = 8 << 20, evaluate: @escaping @Sendable (String, @escaping @Sendable () -> Void) -> Void) {
        self.session = session
        self.highWater = highWater
        self.evaluate = evaluate
    }

    func send(_ bytes: [UInt8], binary: Bool) {
        var call: [UInt8] = []
        call.reserveCapacity(bytes.count * (binary ? 4 : 1) / (binary ? 3 : 1) + 32)
        call.append(contentsOf: Array("r(\"".utf8))
        if binary {
            call.append(contentsOf: Array("b64:".utf8))
            call.append(contentsOf: Data(bytes).base64EncodedData())
        } else {
            Self.appendEscaped(bytes, to: &call)
            if bytes.starts(with: Self.replyPrefix) {
                let now = ContinuousClock.now
                state.withLock { state in
                    state.replies += 1
                    state.lastReply = now
                }
            }
        }
        call.append(contentsOf: Array("\");".utf8))
        queue(call)
    }

    /// Tells the page its side of the connection is gone (`__bridgeBrokerClose`), after the
    /// frames queued before; nothing is sent after it.
    func close(code: UInt16, reason: String) {
        var call = Array("window.__bridgeBrokerClose(\(code),\"".utf8)
        Self.appendEscaped(Array(reason.utf8), to: &call)
        call.append(contentsOf: Array("\");".utf8))
        queue(call)
        state.withLock { $0.closed = true }
    }

    /// Drops whatever was not delivered yet and every later frame: the page is gone.
    func markClosed() {
        let waiters = state.withLock { state in
            state.closed = true
            state.calls = []
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    var isWritable: Bool { state.withLock { $0.pendingBytes <= highWater || $0.closed } }

    func waitUntilWritable() async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state in
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

    private func queue(_ call: [UInt8]) {
        let schedule = state.withLock { state in
            guard !state.closed else { return false }
            state.calls.append(call)
            state.pendingBytes += call.count
            defer { state.scheduled = true }
            return !state.scheduled
        }
        if schedule { MainLoop.perform { self.flush() } }
    }

    /// On the main thread: hands the queued calls to the page in scripts of at most `batchBytes`
    /// (or one call, when it alone is larger).
    private func flush() {
        while true {
            let next: (script: String, bytes: Int)? = state.withLock { state in
                guard !state.calls.isEmpty else {
                    state.scheduled = false
                    return nil
                }
                var taken = 0, bytes = 0
                while taken < state.calls.count, taken == 0 || bytes + state.calls[taken].count <= Self.batchBytes {
                    bytes += state.calls[taken].count
                    taken += 1
                }
                var script: [UInt8] = []
                script.reserveCapacity(bytes + 96)
                if state.started {
                    script += Array("if(window.__bridgeBrokerSession===\(session)){".utf8)
                } else {
                    // The first script of a session answers the page's `open`: it tells the page
                    // which session it is, so later scripts of an older session are ignored.
                    script += Array("{window.__bridgeBrokerSession=\(session);".utf8)
                    state.started = true
                }
                script += Array("const r=window.__bridgeBrokerReceive;".utf8)
                for call in state.calls[..<taken] { script += call }
                script.append(UInt8(ascii: "}"))
                state.calls.removeFirst(taken)
                return (String(decoding: script, as: UTF8.self), bytes)
            }
            guard let next else { return }
            evaluate(next.script) { [self] in delivered(next.bytes) }
        }
    }

    private func delivered(_ bytes: Int) {
        let waiters: [CheckedContinuation<Void, Never>] = state.withLock { state in
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
}
