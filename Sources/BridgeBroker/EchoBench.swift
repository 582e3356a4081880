import BridgeCore
import BridgeWebSocket
import Foundation
import Histogram

/// Round trips over one WebSocket connection with a fixed number of messages in flight.
struct RoundTripBench {
    /// One run's figures.
    struct Figures {
        var messagesPerSecond: Double
        var p50Microseconds: Double
        var p99Microseconds: Double
    }

    /// Sends `count` messages (after `warmup`) keeping `inFlight` outstanding; `message(seq)`
    /// builds a message and `sequence(reply)` reads the seq back (nil for frames to skip).
    static func run(url: String, subprotocol: String?, count: Int, warmup: Int, inFlight: Int,
                    message: @escaping @Sendable (Int) -> [UInt8], sequence: @escaping @Sendable ([UInt8]) -> Int?) async throws -> Figures {
        let client = try WebSocketClient(url: url, subprotocol: subprotocol)
        let state = RunState(total: warmup + count, warmup: warmup)
        client.onMessage = { received in
            guard case .text(let bytes) = received, let seq = sequence(bytes) else { return }
            if let next = state.replied(seq) { client.send(text: message(next)) }
        }
        try await client.connect()
        if subprotocol != nil { try await Task.sleep(for: .milliseconds(50)) }  // let hello pass
        for seq in 0..<min(inFlight, warmup + count) {
            state.sent(seq)
            client.send(text: message(seq))
        }
        // A run whose replies stop coming (the connection closed) fails instead of hanging.
        let finished = try? await withDeadline(.seconds(120), message: "no reply for 120 s") {
            await state.waitUntilDone()
            return true
        }
        client.close()
        guard finished == true else { throw BridgeError(.timeout, "round trips to \(url) stopped before the end") }
        return state.figures(count: count)
    }

    /// A run against the bare echo with `size`-byte messages: the seq in ten ASCII digits, then filler.
    static func bare(url: String, size: Int, count: Int, inFlight: Int) async throws -> Figures {
        try await run(
            url: url, subprotocol: nil, count: count, warmup: 1000, inFlight: inFlight,
            message: { seq in
                let digits = String(seq)
                return Array((String(repeating: "0", count: 10 - digits.count) + digits + String(repeating: "x", count: size - 10)).utf8)
            },
            sequence: { bytes in
                guard bytes.count >= 10 else { return nil }
                return bytes[0..<10].reduce(0) { $0 * 10 + Int($1) - 48 }
            })
    }

    /// Bookkeeping shared by the bench task and the client's service thread.
    final class RunState: @unchecked Sendable {
        private let lock = NSLock()
        private var sendTimes: [UInt64]
        private var nextToSend = 0
        private var received = 0
        private let total: Int
        private let warmup: Int
        private var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
        private var measuredStart: UInt64 = 0
        private var measuredEnd: UInt64 = 0
        private var done: CheckedContinuation<Void, Never>?
        private var finished = false

        init(total: Int, warmup: Int) {
            self.total = total
            self.warmup = warmup
            sendTimes = [UInt64](repeating: 0, count: total)
        }

        func sent(_ seq: Int) {
            lock.withLock {
                sendTimes[seq] = DispatchTime.now().uptimeNanoseconds
                nextToSend = max(nextToSend, seq + 1)
            }
        }

        /// Records a reply; returns the next seq to send, if any.
        func replied(_ seq: Int) -> Int? {
            let now = DispatchTime.now().uptimeNanoseconds
            var resume: CheckedContinuation<Void, Never>?
            let next: Int? = lock.withLock {
                guard seq < total else { return nil }
                received += 1
                if seq >= warmup { _ = histogram.record((now - sendTimes[seq]) / 1000) }
                if received == warmup { measuredStart = now }
                if received == total {
                    measuredEnd = now
                    finished = true
                    resume = done
                    done = nil
                }
                guard nextToSend < total else { return nil }
                let next = nextToSend
                nextToSend += 1
                sendTimes[next] = DispatchTime.now().uptimeNanoseconds
                return next
            }
            resume?.resume()
            return next
        }

        func waitUntilDone() async {
            await withCheckedContinuation { continuation in
                let already = lock.withLock {
                    if !finished { done = continuation }
                    return finished
                }
                if already { continuation.resume() }
            }
        }

        func figures(count: Int) -> Figures {
            lock.withLock {
                let seconds = Double(measuredEnd - measuredStart) / 1e9
                return Figures(messagesPerSecond: Double(count) / max(seconds, 1e-9), p50Microseconds: Double(histogram.valueAtPercentile(50)),
                               p99Microseconds: Double(histogram.valueAtPercentile(99)))
            }
        }
    }
}

/// Parses the integer after `"id":` in a reply frame without a JSON parser.
func replyID(_ bytes: [UInt8]) -> Int? {
    let key = Array("\"type\":\"reply\",\"id\":".utf8)
    guard bytes.count > key.count, Array(bytes[1..<(1 + key.count)]) == key else { return nil }
    var value = 0
    var index = 1 + key.count
    while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
        value = value * 10 + Int(bytes[index] - 48)
        index += 1
    }
    return value
}
