import BridgeCore
import Synchronization
import Testing

@Suite struct BrokerTests {
    let sink = RecordingSink()

    func connect(_ broker: Broker = Broker()) -> BrokerConnection {
        broker.connect(sink: sink, info: ConnectionInfo(origin: nil, peer: "test"))
    }

    @Test func sendsHelloFirstWithHandlersAndLimits() throws {
        let broker = Broker()
        broker.register("zeta") { _ in .null }
        _ = connect(broker)
        let hello = try #require(sink.jsonFrames.first)
        #expect(hello["type"] == "hello")
        #expect(hello["protocol"] == 1)
        #expect(hello["handlers"] == ["echo", "zeta"])
        #expect(hello["limits"]?["maxMessageBytes"]?.intValue == broker.configuration.maxMessageBytes)
        #expect(hello["limits"]?["maxInFlight"]?.intValue == broker.configuration.maxInFlight)
    }

    @Test func echoRepliesWithTheBody() async throws {
        let connection = connect()
        post(connection, ["type": "post", "name": "echo", "id": 1, "body": ["a": [1, 2]]])
        let reply = try await sink.reply(1)
        #expect(reply["ok"] == true)
        #expect(reply["body"] == ["a": [1, 2]])
    }

    @Test func unknownHandlerRepliesOrReportsWithoutID() async throws {
        let connection = connect()
        post(connection, ["type": "post", "name": "nope", "id": 2])
        #expect(try await sink.reply(2)["error"]?["code"] == "unknown_handler")
        post(connection, ["type": "post", "name": "nope"])
        let errors = try await sink.frames(ofType: "error")
        #expect(errors.last?["error"]?["code"] == "unknown_handler")
    }

    @Test func malformedFramesGetBadMessageAndTheConnectionGoesOn() async throws {
        let connection = connect()
        connection.receive(text: Array("{nope".utf8))
        post(connection, ["type": "post", "id": 5])
        post(connection, ["type": "post", "name": "echo", "id": 6, "body": "still here"])
        #expect(try await sink.frames(ofType: "error").first?["error"]?["code"] == "bad_message")
        #expect(try await sink.reply(5)["error"]?["code"] == "bad_message")
        #expect(try await sink.reply(6)["body"] == "still here")
    }

    @Test func duplicateIDIsRefusedAndTheFirstPostGoesOn() async throws {
        let broker = Broker()
        let gate = Gate()
        broker.register("wait") { _ in await gate.wait(); return "done" }
        let connection = connect(broker)
        post(connection, ["type": "post", "name": "wait", "id": 3])
        post(connection, ["type": "post", "name": "wait", "id": 3])
        let error = try await sink.frames(ofType: "error").first
        #expect(error?["error"]?["code"] == "duplicate_id")
        #expect(error?["duplicateId"] == 3)
        gate.open()
        #expect(try await sink.reply(3)["body"] == "done")
        #expect(sink.jsonFrames.filter { $0["type"] == "reply" }.count == 1)
    }

    @Test func tooManyInFlightIsRefused() async throws {
        let broker = Broker(configuration: { var c = BrokerConfiguration(); c.maxInFlight = 2; return c }())
        let gate = Gate()
        broker.register("wait") { _ in await gate.wait(); return .null }
        let connection = connect(broker)
        for id in 1...3 { post(connection, ["type": "post", "name": "wait", "id": .integer(id)]) }
        #expect(try await sink.reply(3)["error"]?["code"] == "too_many_in_flight")
        gate.open()
        #expect(try await sink.reply(1)["ok"] == true)
        #expect(try await sink.reply(2)["ok"] == true)
    }

    @Test func cancelRepliesCancelledStopsTheTaskAndNothingFollows() async throws {
        let broker = Broker()
        let cancelled = Gate()
        let lateSent = Gate()
        broker.register("slow") { call in
            await call.sendEvent("started", .null)
            do { try await Task.sleep(for: .seconds(30)) } catch { cancelled.open() }
            await call.sendEvent("late", .null)
            lateSent.open()
            return "finished"
        }
        let connection = connect(broker)
        post(connection, ["type": "post", "name": "slow", "id": 4])
        _ = try await sink.frames(ofType: "event")
        post(connection, ["type": "cancel", "id": 4])
        #expect(try await sink.reply(4)["error"]?["code"] == "cancelled")
        await cancelled.wait()
        // Once the handler tried its late event (not after a fixed 50 ms, which a loaded machine
        // can outlast before the handler gets there), then a little for a reply that would follow.
        await lateSent.wait()
        try await Task.sleep(for: .milliseconds(50))
        let frames = sink.jsonFrames.filter { $0["id"] == 4 }
        #expect(frames.map { $0["type"]?.stringValue ?? "" } == ["event", "reply"])
        #expect(connection.inFlightCount == 0)
    }

    @Test func closingTheConnectionCancelsEveryPost() async throws {
        let broker = Broker()
        let cancelled = Counter()
        let started = Counter()
        broker.register("slow") { _ in
            started.increment()
            do { try await Task.sleep(for: .seconds(30)) } catch { cancelled.increment() }
            return .null
        }
        let connection = connect(broker)
        post(connection, ["type": "post", "name": "slow", "id": 1])
        post(connection, ["type": "post", "name": "slow"])
        // Both running (not a fixed 20 ms, which a loaded machine can outlast), then the close.
        try await waitUntil { started.value == 2 }
        connection.closed()
        try await waitUntil { cancelled.value == 2 }
        #expect(connection.inFlightCount == 0)
    }

    @Test func handlerErrorsBecomeProtocolErrors() async throws {
        struct Oops: Error {}
        let broker = Broker()
        broker.register("bad") { _ in throw BridgeError(.badRequest, "no") }
        broker.register("bug") { _ in throw Oops() }
        let connection = connect(broker)
        post(connection, ["type": "post", "name": "bad", "id": 1])
        post(connection, ["type": "post", "name": "bug", "id": 2])
        #expect(try await sink.reply(1)["error"] == ["code": "bad_request", "message": "no"])
        #expect(try await sink.reply(2)["error"]?["code"] == "internal")
    }

    @Test func fireAndForgetRunsWithoutReply() async throws {
        let broker = Broker()
        let ran = Counter()
        broker.register("note") { _ in ran.increment(); return .null }
        let connection = connect(broker)
        post(connection, ["type": "post", "name": "note", "body": 1])
        try await waitUntil { ran.value == 1 }
        try await Task.sleep(for: .milliseconds(20))
        #expect(!sink.jsonFrames.contains { $0["type"] == "reply" })
    }

    @Test func binaryFramesFeedTheRequestBodyAndPauseReadingWhenItPilesUp() async throws {
        let broker = Broker(configuration: { var c = BrokerConfiguration(); c.requestBodyHighWater = 100; return c }())
        let start = Gate()
        broker.register("sum") { call in
            await start.wait()
            var total = 0
            for try await chunk in call.requestBody() { total += chunk.count }
            return .integer(total)
        }
        let connection = connect(broker)
        post(connection, ["type": "post", "name": "sum", "id": 9])
        for index in 0..<4 {
            connection.receive(binary: BinaryFrameHeader(id: 9, isEnd: index == 3).frame(payload: [UInt8](repeating: 1, count: 60)))
        }
        #expect(sink.pauseChanges == [true])
        start.open()
        #expect(try await sink.reply(9)["body"] == 240)
        #expect(sink.pauseChanges == [true, false])
    }

    @Test func binaryFrameForNoPostIsBadMessage() async throws {
        let connection = connect()
        connection.receive(binary: BinaryFrameHeader(id: 77, isEnd: true).frame(payload: [1]))
        connection.receive(binary: [1, 2, 3])
        let errors = try await sink.frames(ofType: "error", atLeast: 2)
        #expect(errors.allSatisfy { $0["error"]?["code"] == "bad_message" })
    }

    @Test func groupProgressReachesOneWhenTheLastRequestFinishes() async throws {
        let connection = connect()
        let groups = connection.groups
        let a = groups.start(group: "page")
        let b = groups.start(group: "page")
        groups.update(group: "page", token: a, loaded: 50, total: 100)
        groups.finish(group: "page", token: a)
        groups.finish(group: "page", token: b)
        let events = sink.jsonFrames.filter { $0["name"] == "group.progress" }
        let last = try #require(events.last)
        #expect(last["id"] == nil)
        #expect(last["body"]?["progress"] == 1.0)
        #expect(last["body"]?["requests"] == 2)
        #expect(last["body"]?["finished"] == 2)
        #expect(events.allSatisfy { ($0["body"]?["progress"]?.doubleValue ?? 2) <= 1 })
    }

    @Test func requestsAnsweredOneByOneStayOneGroup() async throws {
        let connection = connect()
        let groups = connection.groups
        let started = ContinuousClock.now
        for _ in 0..<3 {
            let token = groups.start(group: "page")
            groups.update(group: "page", token: token, loaded: 10, total: 10)
            groups.finish(group: "page", token: token)
        }
        // The connection's interval (50 ms): a machine that stalls longer between the calls above
        // (make test-asan on a loaded VM) rightly sends events for the requests in between.
        let withinInterval = ContinuousClock.now - started < .milliseconds(50)
        // One group of three, not three groups of one: the first start, the first finish, then
        // (GroupProgressTests) one final event for the other two, within the interval.
        var events: [JSONValue] = []
        let deadline = ContinuousClock.now + .seconds(20)
        while events.last?["requests"] != 3, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
            events = sink.jsonFrames.filter { $0["name"] == "group.progress" }.compactMap { $0["body"] }
        }
        #expect(events.last?["requests"] == 3 && events.last?["finished"] == 3 && events.last?["loaded"] == 30)
        let requests = events.map { $0["requests"]?.intValue ?? 0 }
        if withinInterval {
            #expect(requests == [1, 1, 3])
        } else {
            // Still one group: its count only grows, from the first start's and finish's events.
            #expect(requests.starts(with: [1, 1]) && requests == requests.sorted() && requests.last == 3, "\(requests)")
        }
        #expect(groups.groupCount == 1)
    }

    @Test func finishedGroupsAreForgottenBeyondTheirLimit() async throws {
        let connection = connect()
        let groups = connection.groups
        for index in 0..<100 {
            groups.finish(group: "load-\(index)", token: groups.start(group: "load-\(index)"))
        }
        let open = groups.start(group: "still-loading")
        #expect(groups.groupCount <= 64 + 1)
        #expect(groups.groupCount >= 2)
        groups.finish(group: "still-loading", token: open)
        let last = sink.jsonFrames.last { $0["name"] == "group.progress" }
        #expect(last?["body"]?["group"] == "still-loading" && last?["body"]?["requests"] == 1)
    }
}

/// A one-shot gate that tests open to let waiting work go on.
final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }
    func wait() async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if ready { continuation.resume() }
        }
    }
}

final class Counter: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

func waitUntil(timeout: Duration = .seconds(120), _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else { throw BridgeError(.timeout, "condition not met") }
        try await Task.sleep(for: .milliseconds(2))
    }
}
