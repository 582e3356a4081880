import BridgeCore
import Foundation
import Testing

/// The real `bridge-broker monitor` executable against a real broker.
@Suite struct MonitorCommandTests {
    static let binary = BrokerHarness.projectRoot + "/.build/debug/bridge-broker"

    /// Runs `monitor` with `arguments` while `work` runs, then stops it and returns its output.
    func monitor(_ harness: BrokerHarness, _ arguments: [String], during work: () async throws -> Void) async throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["monitor", "--url", harness.url] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        try await waitFor { harness.server.broker.progress.subscriberCount == 1 }
        try await work()
        try await Task.sleep(for: .milliseconds(300))
        process.terminate()
        process.waitUntilExit()
        try await waitFor { harness.server.broker.progress.subscriberCount == 0 }
        return String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    @Test func jsonPrintsOneJSONLinePerEvent() async throws {
        let harness = try await BrokerHarness.start()
        let client = try await harness.client()
        let url = harness.origin.url("/bytes/300000")
        let text = try await monitor(harness, ["--json"]) {
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
        let text = try await monitor(harness, []) {
            _ = try await client.post("fetch", ["url": .string(harness.origin.url("/json"))])
        }
        #expect(!text.contains("\u{1B}"))
        #expect(text.contains("monitor: connected"))
        #expect(text.split(separator: "\n").contains { $0.hasPrefix("request 1 finished fetch 200 miss") && $0.hasSuffix("/json") })
        await harness.stop()
    }
}
