import BridgeCore
@testable import BridgeServer
@testable import BridgeWebSocket
import Foundation
import Synchronization
import Testing

/// `idlePollMicroseconds` (`--idle-poll-us`): libwebsockets' service thread polls for a while
/// after each event instead of sleeping, and frames handed to it meanwhile ring a doorbell
/// instead of writing lws's pipe (`ServiceLoop`).
@Suite(.serialized) struct IdlePollTests {
    /// Responses handed over by the upstream event loops at every moment of the service thread's
    /// spells, their ends included: none may be left behind a doorbell the loop no longer reads.
    /// Without the loop's last read of the doorbell before it blocks, a reply rung in that window
    /// is left in its outbox and the fetches never finish: the wait below gives up and the test
    /// fails (it did, with that read removed). How long the slowest fetch took is no evidence
    /// either way: under AddressSanitizer on a loaded machine a reply can wait seconds for a
    /// cooperative thread (5.7 s once in `make test-asan`), so it is not asserted.
    @Test func noWakeIsLostAtTheEndOfAPollingSpell() async throws {
        // Polling even on a busy machine (the tests run side by side): this is about the hand-over.
        let harness = try await BrokerHarness.start {
            $0.idlePollMicroseconds = 40
            $0.idlePollNeedsSpareCPU = false
            // Responses from AsyncHTTPClient's loops: the hand-over from other threads.
            $0.upstreamOnServiceThread = false
        }
        defer { Task { await harness.stop() } }
        let url = harness.origin.url("/bytes/64?t=1")
        let clients = try await withThrowingTaskGroup(of: BridgeClient.self) { group in
            for _ in 0..<4 { group.addTask { try await harness.client() } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        defer { clients.forEach { $0.close() } }
        let perClient = 600
        let tally = Tally()
        let work = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, client) in clients.enumerated() {
                    group.addTask {
                        for request in 0..<perClient {
                            let reply = try await client.post("fetch", ["url": .string(url + "&c=\(index)&r=\(request)"), "cache": "no-store", "responseBody": "none"])
                            #expect(reply["status"] == 200)
                            tally.record()
                            // A few microseconds of irregular spacing, so replies land at every
                            // point of the service thread's turns.
                            let spin = ContinuousClock.now + .microseconds((request * 7 + index * 13) % 50)
                            while ContinuousClock.now < spin {}
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        try await waitFor(.seconds(90)) { tally.done == clients.count * perClient }
        try await work.value
        let wakes = harness.server.serviceWakes
        #expect(wakes.doorbell > 0, "the service thread polled (wakes: \(wakes))")
    }

    /// A broker with the largest budget and no traffic sleeps: its service thread's CPU time over
    /// 2 s stays under 2% of it, after a burst of requests that started polling spells.
    @Test func anIdleBrokerDoesNotSpin() async throws {
        let harness = try await BrokerHarness.start {
            $0.idlePollMicroseconds = BrokerServerConfiguration.maxIdlePollMicroseconds
            $0.idlePollNeedsSpareCPU = false
            $0.upstreamOnServiceThread = false
        }
        defer { Task { await harness.stop() } }
        let client = try await harness.client()
        defer { client.close() }
        for request in 0..<50 {
            _ = try await client.post("fetch", ["url": .string(harness.origin.url("/bytes/64?t=1") + "&r=\(request)"), "cache": "no-store", "responseBody": "none"])
        }
        #expect(harness.server.serviceWakes.doorbell + harness.server.serviceWakes.pipe > 0)
        let thread = harness.server.webSocket.loop.kernelThreadID.load(ordering: .acquiring)
        try #require(thread > 0)
        try await Task.sleep(for: .milliseconds(100))
        let before = try cpuNanoseconds(thread: thread)
        try await Task.sleep(for: .seconds(2))
        let used = try cpuNanoseconds(thread: thread) - before
        #expect(used < 40_000_000, "the idle service thread used \(used / 1_000_000) ms of CPU in 2 s")
    }

    /// Off (0), nothing rings a doorbell: every wake is lws's pipe, as before the setting.
    @Test func offMeansEveryWakeIsAPipeWrite() async throws {
        let harness = try await BrokerHarness.start {
            $0.idlePollMicroseconds = 0
            $0.upstreamOnServiceThread = false
        }
        defer { Task { await harness.stop() } }
        let client = try await harness.client()
        defer { client.close() }
        for request in 0..<20 {
            _ = try await client.post("fetch", ["url": .string(harness.origin.url("/bytes/64?t=1") + "&r=\(request)"), "cache": "no-store", "responseBody": "none"])
        }
        let wakes = harness.server.serviceWakes
        #expect(wakes.doorbell == 0)
        #expect(wakes.pipe >= 20)
    }

    final class Tally: Sendable {
        private let state = Mutex(0)
        func record() { state.withLock { $0 += 1 } }
        var done: Int { state.withLock { $0 } }
    }

    /// The spare-CPU check reads the machine's runnable tasks: at least this test's thread.
    @Test func theRunnableTasksAreRead() throws {
        let runnable = try #require(ServiceLoop.SpareCPU.runnableTasks())
        #expect(runnable >= 1)
        #expect(runnable < 100_000)
    }

    /// Nanoseconds thread `thread` of this process has run (`/proc/self/task/ID/schedstat`).
    func cpuNanoseconds(thread: Int32) throws -> Int {
        let text = try String(contentsOfFile: "/proc/self/task/\(thread)/schedstat", encoding: .utf8)
        return try #require(Int(text.split(separator: " ").first ?? ""))
    }
}
