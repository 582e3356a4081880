import BridgeCore
import BridgeServer
import BridgeSQLite
import BridgeTestOrigin
import BridgeWebSocket
import Foundation

/// The HTTP cache benchmarks: hit latency and throughput against uncached fetches, cold start
/// with many entries, eviction cost, and inline blobs against body files.
///
/// Every figure of one table is measured side by side in the same run.
struct CacheBench {
    /// Runs every benchmark and returns the figures as Markdown tables.
    static func run(iterations: Int = 300, coldStartEntries: Int = 100_000, service: ServiceOptions? = nil) async throws -> String {
        var report = "## HTTP cache\n\n"
        report += try await fetches(iterations: iterations, service: service)
        report += try await coldStart(entries: coldStartEntries)
        report += try await eviction(count: 2000)
        report += try await inlineVersusFile()
        return report
    }

    static func temporaryDirectory() -> String {
        let path = NSTemporaryDirectory() + "cache-bench-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Median latency and requests per second of a hit and of a `no-store` fetch (origin every time).
    static func fetches(iterations: Int, service: ServiceOptions? = nil) async throws -> String {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try startBenchServer(cacheDirectory: directory, service: service)
        let origin = try await LocalOrigin.start()
        // SwiftNIO's WebSocket client, as in the fetch benchmark: the libwebsockets client parses
        // what it receives a byte at a time, so a 1 MiB row would measure the client.
        let client = try await NIOBridgeClient.connect(port: server.port)
        var table = "| body | mode | median latency | fetches/s | origin requests |\n|---|---|---|---|---|\n"
        for size in [1024, 1 << 20] {
            let url = origin.url("/cached?cc=max-age%3D3600&size=\(size)")
            for mode in ["no-store", "default"] {
                try await client.fetch(["url": .string(url), "cache": "default", "responseBody": "binary"], expecting: size)
                origin.resetCounts()
                let count = size > 1024 ? iterations / 4 : iterations
                var samples: [Duration] = []
                let start = ContinuousClock.now
                for _ in 0..<count {
                    let begin = ContinuousClock.now
                    try await client.fetch(["url": .string(url), "cache": .string(mode), "responseBody": "binary", "progress": false], expecting: size)
                    samples.append(ContinuousClock.now - begin)
                }
                let elapsed = ContinuousClock.now - start
                let label = mode == "default" ? "cache hit" : "no-store (origin)"
                table += "| \(size == 1024 ? "1 KiB" : "1 MiB") | \(label) | \(format(median(samples))) | "
                table += "\(Int(Double(count) / seconds(elapsed))) | \(origin.requestCount("/cached")) |\n"
            }
        }
        await client.close()
        await server.shutdown()
        await origin.stop()
        return "Fetch through the broker over one WebSocket connection (SwiftNIO's client), sequential, binary body:\n\n" + table + "\n"
    }

    /// Time to open a store holding `entries` entries and answer the first lookup.
    static func coldStart(entries: Int) async throws -> String {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = SQLiteCacheStoreConfiguration(directory: directory)
        let fillStart = ContinuousClock.now
        do {
            let store = SQLiteCacheStore(configuration: configuration)
            let body = [UInt8](repeating: 7, count: 512)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<8 {
                    group.addTask {
                        for index in stride(from: worker, to: entries, by: 8) {
                            let entry = CachedResponse(
                                url: "https://bench.test/\(index)", status: 200, headers: ["cache-control": "max-age=600"],
                                requestHeaders: HeaderList(), requestTime: 0, responseTime: 0)
                            guard let writer = await store.makeWriter(for: entry, expectedLength: body.count) else { continue }
                            _ = await writer.write(body)
                            _ = await writer.commit()
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        let fill = ContinuousClock.now - fillStart
        let start = ContinuousClock.now
        let store = SQLiteCacheStore(configuration: configuration)
        let found = await store.entries(for: "https://bench.test/\(entries / 2)")
        let opened = ContinuousClock.now - start
        let stats = await store.stats()
        return """
            Cold start: open a store holding \(stats.diskEntries) entries (512-byte bodies) and answer the first \
            lookup (\(found.count) found): **\(format(opened))** (target < 200 ms). Filling it took \(format(fill)).


            """
    }

    /// Time per stored entry with and without an eviction on each insert.
    static func eviction(count: Int) async throws -> String {
        var table = "| store | per insert (median) |\n|---|---|\n"
        for evicting in [false, true] {
            let directory = temporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            var configuration = SQLiteCacheStoreConfiguration(directory: directory)
            configuration.diskCapacity = evicting ? 100 * 4096 : 1 << 30
            let store = SQLiteCacheStore(configuration: configuration)
            let body = [UInt8](repeating: 1, count: 4096)
            var samples: [Duration] = []
            for index in 0..<count {
                let entry = CachedResponse(url: "https://bench.test/\(index)", status: 200, headers: [:], requestHeaders: HeaderList(), requestTime: 0, responseTime: 0)
                let begin = ContinuousClock.now
                guard let writer = await store.makeWriter(for: entry, expectedLength: body.count) else { continue }
                _ = await writer.write(body)
                _ = await writer.commit()
                samples.append(ContinuousClock.now - begin)
            }
            let stats = await store.stats()
            table += "| \(evicting ? "full (one LRU eviction per insert)" : "not full") | \(format(median(samples))) (\(stats.evictions) evictions) |\n"
        }
        return "Eviction cost, \(count) inserts of 4 KiB bodies:\n\n" + table + "\n"
    }

    /// Write+read time of one body stored inline (blob) and as a file, by size.
    static func inlineVersusFile() async throws -> String {
        var table = "| body | inline blob write+read | file write+read |\n|---|---|---|\n"
        for size in [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20] {
            var cells: [String] = []
            for threshold in [Int.max / 2, 0] {
                let directory = temporaryDirectory()
                defer { try? FileManager.default.removeItem(atPath: directory) }
                var configuration = SQLiteCacheStoreConfiguration(directory: directory)
                configuration.inlineThreshold = threshold
                configuration.memoryCapacity = 0  // Measure the disk path, not the memory tier.
                let store = SQLiteCacheStore(configuration: configuration)
                let body = [UInt8](repeating: 3, count: size)
                var samples: [Duration] = []
                for index in 0..<40 {
                    let url = "https://bench.test/\(index)"
                    let entry = CachedResponse(url: url, status: 200, headers: [:], requestHeaders: HeaderList(), requestTime: 0, responseTime: 0)
                    let begin = ContinuousClock.now
                    guard let writer = await store.makeWriter(for: entry, expectedLength: size) else { continue }
                    _ = await writer.write(body)
                    _ = await writer.commit()
                    if let stored = await store.entries(for: url).first, let reader = await store.body(of: stored) {
                        while try await reader.next() != nil {}
                    }
                    samples.append(ContinuousClock.now - begin)
                }
                cells.append(format(median(samples)))
            }
            table += "| \(size >> 10) KiB | \(cells[0]) | \(cells[1]) |\n"
        }
        return "Inline blob against body file (median of 40, memory tier off):\n\n" + table + "\n"
    }

    static func median(_ samples: [Duration]) -> Duration {
        samples.isEmpty ? .zero : middle(samples)
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func format(_ duration: Duration) -> String {
        let value = seconds(duration)
        return value >= 0.001 ? String(format: "%.2f ms", value * 1000) : String(format: "%.0f µs", value * 1e6)
    }
}
