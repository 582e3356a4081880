import BridgeCore
import BridgeServer
import BridgeWebSocket
import Foundation
import Testing

@Suite struct HostHandlerTests {
    @Test func aHostHandlerAnswersWithEventsAndSeesCancellation() async throws {
        let cancelled = Flag()
        let harness = try await BrokerHarness.start()
        defer { Task { await harness.stop() } }
        harness.server.broker.register("greet") { call in
            guard let name = call.body["name"]?.stringValue else { throw BridgeError(.badRequest, "greet needs a name") }
            await call.sendEvent("thinking", ["step": 1])
            return ["greeting": .string("hello \(name)")]
        }
        let started = Flag()
        harness.server.broker.register("wait") { call in
            started.set()
            do { try await Task.sleep(for: .seconds(30)) } catch { cancelled.set() }
            return .null
        }
        let client = try await harness.client()
        defer { client.close() }
        let recorder = PostRecorder()
        #expect(try await client.post("greet", ["name": "Ada"], onEvent: recorder.handler) == ["greeting": "hello Ada"])
        #expect(recorder.events.map(\.name) == ["thinking"])
        await #expect(throws: BridgeError(.badRequest, "greet needs a name")) { try await client.post("greet", [:]) }
        let task = Task { try await client.post("wait") }
        try await waitFor { started.isSet }
        task.cancel()
        _ = try? await task.value
        try await waitFor { cancelled.isSet }
    }
}

/// A host's handler that holds its thread (sleeps, reads a file, computes) does not hold the
/// broker's traffic: unless registered `nonBlocking`, its posts run on the global executor, not on
/// the WebSocket service thread where the broker's own posts run.
@Suite struct BlockingHostHandlerTests {
    @Test func aBlockingHostHandlerLeavesOtherPostsFlowing() async throws {
        let harness = try await BrokerHarness.start()
        defer { Task { await harness.stop() } }
        let started = Flag()
        harness.server.broker.register("block") { _ in
            started.set()
            usleep(1_500_000)  // Holds the thread, as blocking work does.
            return "done"
        }
        let blocker = try await harness.client()
        defer { blocker.close() }
        let other = try await harness.client()
        defer { other.close() }
        let blocked = Task { try await blocker.post("block") }
        try await waitFor { started.isSet }
        let begun = ContinuousClock.now
        #expect(try await other.post("echo", ["n": 1]) == ["n": 1])
        let reply = try await other.post("fetch", ["url": .string(harness.origin.url("/bytes/16")), "cache": "no-store"])
        #expect(reply["status"] == 200)
        // Well under the handler's 1.5 s of sleep.
        #expect(ContinuousClock.now - begun < .seconds(1), "the other client's posts waited \(ContinuousClock.now - begun)")
        #expect(try await blocked.value == "done")
    }
}

final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
