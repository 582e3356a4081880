import BridgeCore
import Foundation
import Synchronization
import Testing

/// The real `bridge-broker monitor` executable against a real broker.
@Suite struct MonitorCommandTests {
    static let binary = BrokerHarness.projectRoot + "/.build/debug/bridge-broker"

    /// Runs `monitor` with `arguments` while `work` runs, waits (up to 30 s) until its output
    /// satisfies `done`, then stops it and returns its output.
    func monitor(_ harness: BrokerHarness, _ arguments: [String], until done: @escaping @Sendable (String) -> Bool,
                 during work: () async throws -> Void) async throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["monitor", "--url", harness.url] + arguments
        let output = Pipe()
        let received = Mutex(Data())
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            received.withLock { $0.append(data) }
        }
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        try await waitFor { harness.server.broker.progress.subscriberCount == 1 }
        try await work()
        func text() -> String { received.withLock { String(decoding: $0, as: UTF8.self) } }
        try? await waitFor { done(text()) }
        process.terminate()
        process.waitUntilExit()
        output.fileHandleForReading.readabilityHandler = nil
        try await waitFor { harness.server.broker.progress.subscriberCount == 0 }
        received.withLock { $0.append(output.fileHandleForReading.readDataToEndOfFile()) }
        return text()
    }

    @Test func jsonPrintsOneJSONLinePerEvent() async throws {
        let harness = try await BrokerHarness.start()
        let client = try await harness.client()
        let url = harness.origin.url("/bytes/300000")
        let done: @Sendable (String) -> Bool = { $0.contains("progress.stats") && $0.contains(#""phase":"finished""#) && $0.contains(#""progress":1"#) }
        let text = try await monitor(harness, ["--json"], until: done) {
            _ = try await client.post("fetch", ["url": .string(url), "responseBody": "binary", "group": "g"])
        }
        let lines = text.split(separator: "\n").map { try? JSONParser.parse(String($0)) }
        #expect(!lines.isEmpty && lines.allSatisfy { $0?["event"]?.stringValue != nil && $0?["body"] != nil })
        let phases = lines.compactMap { $0 }.filter { $0["event"] == "progress.request" && $0["body"]?["url"] == .string(url) }
            .compactMap { $0["body"]?["phase"]?.stringValue }
        #expect(phases.first == "queued" && phases.last == "finished" && phases.contains("response"))
        let finished = lines.compactMap { $0 }.last { $0["body"]?["phase"] == "finished" }
        #expect(finished?["body"]?["loaded"] == 300_000 && finished?["body"]?["cache"] == "miss")
        #expect(lines.contains { $0?["event"] == "progress.group" && $0?["body"]?["progress"] == 1.0 })
        #expect(lines.contains { $0?["event"] == "progress.stats" })
        #expect(!text.contains("\u{1B}"))
        await harness.stop()
    }

    @Test func plainTextWhenNotATerminal() async throws {
        let harness = try await BrokerHarness.start()
        let client = try await harness.client()
        let text = try await monitor(harness, [], until: { $0.contains("request 1 finished") }) {
            _ = try await client.post("fetch", ["url": .string(harness.origin.url("/json"))])
        }
        #expect(!text.contains("\u{1B}"))
        #expect(text.contains("monitor: connected"))
        #expect(text.split(separator: "\n").contains { $0.hasPrefix("request 1 finished fetch 200 miss") && $0.hasSuffix("/json") })
        await harness.stop()
    }
}
