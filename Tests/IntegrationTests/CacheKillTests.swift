import BridgeCore
import BridgeSQLite
import BridgeTestOrigin
import BridgeWebSocket
import Foundation
import Synchronization
import Testing

/// A broker killed with SIGKILL while it writes a large entry leaves no torn entry.
struct CacheKillTests {
    /// The `bridge-broker` executable built beside the test bundle.
    static var executable: String {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        return bundle.deletingLastPathComponent().appendingPathComponent("bridge-broker").path
    }

    @Test func killedMidWriteLeavesNoTornEntry() async throws {
        let directory = NSTemporaryDirectory() + "cache-kill-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let origin = try await LocalOrigin.start()
        defer { Task { await origin.stop() } }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.executable)
        process.arguments = ["serve", "--port", "0", "--cache-dir", directory, "--allow-url", "http://127.0.0.1:*", "--log-level", "error"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let banner = try #require(Self.readBanner(output.fileHandleForReading))
        let client = try await BridgeClient.connect(url: banner)
        defer { client.close() }

        // A complete large entry first: it must survive the kill intact.
        let complete = origin.url("/bytes/300000")
        _ = try await client.post("fetch", ["url": .string(complete), "responseBody": "binary"])
        try await waitForCommit(of: complete, client)

        // Then a slow 12.8 MB body, killed once 1 MiB of it has arrived.
        let torn = origin.url("/slow?chunks=200&delay=20&size=65536")
        let received = Mutex(0)
        let fetch = Task {
            try await client.post("fetch", ["url": .string(torn), "responseBody": "binary", "timeout": 30000]) { event in
                if case .body(let bytes, _) = event { received.withLock { $0 += bytes.count } }
            }
        }
        while received.withLock({ $0 }) < 1 << 20 { try await Task.sleep(for: .milliseconds(10)) }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        _ = try? await fetch.value

        let store = SQLiteCacheStore(configuration: SQLiteCacheStoreConfiguration(directory: directory))
        #expect(await store.stats().disabledReason == nil)
        #expect(await store.entries(for: torn).isEmpty)
        let kept = try #require(await store.entries(for: complete).first)
        let body = try #require(await store.body(of: kept))
        var bytes: [UInt8] = []
        while let chunk = try await body.next() { bytes += chunk }
        #expect(bytes == (0..<300_000).map(patternByte))
        // The orphan sweep runs after open.
        try await waitFor { (try? FileManager.default.contentsOfDirectory(atPath: directory + "/bodies").count) == 1 }
    }

    /// Reads the serve banner and returns its WebSocket URL.
    static func readBanner(_ handle: FileHandle) -> String? {
        var text = ""
        while !text.contains("/bridge\n") {
            let data = handle.availableData
            if data.isEmpty { return nil }
            text += String(decoding: data, as: UTF8.self)
        }
        return text.split(separator: "\n").first { $0.contains("WebSocket") }?
            .split(separator: " ").last.map(String.init)
    }
}
