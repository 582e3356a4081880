import BridgeCore
import Foundation
import Synchronization
import Testing

/// The frames of an early answer: `[kind][UInt32 big-endian length][bytes]` each.
func earlyFrames(_ answer: [UInt8]) -> [(binary: Bool, bytes: [UInt8])] {
    var frames: [(binary: Bool, bytes: [UInt8])] = []
    var at = 0
    while at + 5 <= answer.count {
        let length = answer[(at + 1)..<(at + 5)].reduce(0) { $0 << 8 | Int($1) }
        frames.append((answer[at] == EarlyPosts.binaryKind, Array(answer[(at + 5)..<(at + 5 + length)])))
        at += 5 + length
    }
    #expect(at == answer.count, "an answer is whole frames")
    return frames
}

private func line(_ value: JSONValue) -> String { String(decoding: value.jsonBytes, as: UTF8.self) }

private func fetchLine(id: Int, cache: String? = "fresh-only", extra: [(key: String, value: JSONValue)] = []) -> String {
    var body: [(key: String, value: JSONValue)] = [("url", "http://origin.test/a")]
    if let cache { body.append(("cache", .string(cache))) }
    return line(["type": "post", "name": "fetch", "id": .integer(id), "body": .object(JSONObject(body + extra))])
}

/// Runs an early request; the deadline is long, for a loaded CI machine, unless a test sets one.
private func run(_ text: String, on broker: Broker, deadline: Duration = .seconds(120)) async throws -> [(binary: Bool, bytes: [UInt8])] {
    earlyFrames(try await answer(text, on: broker, deadline: deadline))
}

/// The bytes of an early request's answer, after `headroom` bytes.
private func answer(_ text: String, on broker: Broker, deadline: Duration = .seconds(120), headroom: Int = 0) async throws -> [UInt8] {
    let lines = try EarlyPosts.parse(Array(text.utf8))
    return await withCheckedContinuation { continuation in
        EarlyPosts.run(
            lines, broker: broker, info: ConnectionInfo(origin: "http://page.test", peer: "test"), deadline: deadline, headroom: headroom
        ) {
            continuation.resume(returning: $0)
        }
    }
}

@Suite struct EarlyPostsTests {
    @Test func parseTakesIdentityAndFreshOnlyFetchesLineByLine() throws {
        let identity = line(["type": "post", "name": "page.identity", "body": ["url": "http://page.test/"]])
        let lines = try EarlyPosts.parse(Array((identity + "\n" + fetchLine(id: 1) + "\r\n\n" + fetchLine(id: 2) + "\n").utf8))
        #expect(lines.count == 3)
        guard case .post("fetch", 1, let body) = lines[1] else {
            Issue.record("line 2 is the first fetch: \(lines[1])")
            return
        }
        #expect(body["cache"]?.stringValue == "fresh-only", "a CR before the newline is not part of the line")
    }

    @Test(arguments: [
        ("not JSON", "{oops"),
        ("no id", line(["type": "post", "name": "fetch", "body": ["url": "http://origin.test/a", "cache": "fresh-only"]])),
        ("default mode", fetchLine(id: 1, cache: nil)),
        ("no-store mode", fetchLine(id: 1, cache: "no-store")),
        ("a request body", fetchLine(id: 1, extra: [("body", ["binary": true])])),
        ("another handler", line(["type": "post", "name": "echo", "id": 1, "body": "x"])),
        ("a cancel", line(["type": "cancel", "id": 1])),
    ])
    func parseRefusesWhatCannotGoEarly(_ what: String, _ text: String) {
        #expect(throws: BridgeError.self, "\(what)") { try EarlyPosts.parse(Array(text.utf8)) }
    }

    @Test func parseRefusesTooMuch() {
        let many = (1...(EarlyPosts.maxFetches + 1)).map { fetchLine(id: $0) }.joined(separator: "\n")
        #expect { try EarlyPosts.parse(Array(many.utf8)) } throws: { ($0 as? BridgeError)?.code == .tooLarge }
        let big = [UInt8](repeating: 0x20, count: EarlyPosts.maxRequestBytes + 1)
        #expect { try EarlyPosts.parse(big) } throws: { ($0 as? BridgeError)?.code == .tooLarge }
    }

    @Test func theAnswerHoldsEveryFrameOfThePostsButTheHelloOnceAllReplied() async throws {
        let broker = Broker()
        // A slow handler: the answer waits for its reply.
        broker.register("fetch") { call in
            _ = await call.sendEvent("response", ["status": 200])
            try await Task.sleep(for: .milliseconds(50))
            return ["ok": .string(call.body["url"]?.stringValue ?? "")]
        }
        let frames = try await run(fetchLine(id: 7) + "\n" + fetchLine(id: 8), on: broker)
        let texts = frames.map { String(decoding: $0.bytes, as: UTF8.self) }
        #expect(!texts.contains { $0.contains("\"hello\"") })
        #expect(texts.filter { $0.contains("\"reply\"") }.count == 2)
        #expect(texts.filter { $0.contains("\"response\"") }.count == 2)
        #expect(texts.last?.contains("\"reply\"") == true)
        #expect(frames.allSatisfy { !$0.binary })
    }

    @Test func binaryFramesKeepTheirKind() async throws {
        let broker = Broker()
        broker.register("fetch") { call in
            try await call.sendBodyChunk([1, 2, 3], isEnd: true)
            return .null
        }
        let frames = try await run(fetchLine(id: 3), on: broker)
        try #require(frames.count == 2)
        #expect(frames[0].binary && frames[0].bytes.suffix(3) == [1, 2, 3])
        #expect(!frames[1].binary)
    }

    @Test func headroomComesBeforeTheSameAnswer() async throws {
        let broker = Broker()
        broker.register("fetch") { call in
            _ = await call.sendEvent("response", ["status": 200])
            try await call.sendBodyChunk(Array(0..<200), isEnd: true)
            return ["url": .string(call.body["url"]?.stringValue ?? "")]
        }
        // One post: its frames come in one order (two would interleave as their tasks run).
        let text = fetchLine(id: 4)
        let plain = try await answer(text, on: broker)
        let padded = try await answer(text, on: broker, headroom: 16)
        #expect(earlyFrames(plain).map(\.binary) == [false, true, false])
        #expect(padded.count == 16 + plain.count)
        #expect(padded.prefix(16).allSatisfy { $0 == 0 })
        #expect(Array(padded.dropFirst(16)) == plain, "the same frames in the same order after the headroom")
    }

    @Test func atTheDeadlineTheAnswerGoesWithWhatIsThere() async throws {
        let broker = Broker()
        broker.register("fetch") { call in
            try await call.sendBodyChunk([4, 5], isEnd: false)
            try await Task.sleep(for: .seconds(60))
            return .null
        }
        let started = ContinuousClock.now
        let frames = try await run(fetchLine(id: 9), on: broker, deadline: .milliseconds(300))
        #expect(ContinuousClock.now - started < .seconds(30))
        #expect(frames.allSatisfy { $0.binary }, "the body frame, if it was sent in time, and no reply")
    }

    @Test func anAnswerThatWouldPassItsLimitGoesWithWhatFitsAndCancelsTheRest() async throws {
        let broker = Broker()
        let cancelled = Atomic<Int>(0)
        broker.register("fetch") { call in
            do {
                for _ in 0..<12 { try await call.sendBodyChunk([UInt8](repeating: 7, count: 1 << 20), isEnd: false) }
                try await Task.sleep(for: .seconds(30))
            } catch {
                cancelled.add(1, ordering: .relaxed)
                throw error
            }
            return .null
        }
        let started = ContinuousClock.now
        let frames = try await run(fetchLine(id: 1), on: broker)
        #expect(ContinuousClock.now - started < .seconds(60), "the answer went when it was full, not at the deadline")
        #expect(frames.reduce(0) { $0 + 5 + $1.bytes.count } <= EarlyPosts.maxAnswerBytes)
        #expect(!frames.contains { !$0.binary }, "no reply: the post did not finish")
        try await waitUntil { cancelled.load(ordering: .relaxed) == 1 }
    }

    @Test func identityAloneAnswersAtOnceWithNothing() async throws {
        let broker = Broker()
        let identity = line(["type": "post", "name": "page.identity", "body": ["url": "http://page.test/"]])
        // page.identity is the fetch handler's; without it the post fails, and without an id that is an error frame.
        let frames = try await run(identity, on: broker)
        #expect(frames.count <= 1)
    }
}

private func waitUntil(_ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(10)
    while !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("condition not met in time")
            return
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}
