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

final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
