import ArgumentParser
import BridgeCore
import BridgeServer
import BridgeTestOrigin
import BridgeUpstream
import BridgeWebSocket
import Foundation

/// `bridge-broker bench`: side-by-side benchmarks, printed as Markdown tables (docs/BENCHMARKS.md).
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Run the benchmarks and print figures.",
        discussion: "Everything runs in this process on loopback: the broker, a bare libwebsockets echo, a local origin and the clients. Runs alternate between the two sides of each comparison; the tables give medians over the rounds."
    )

    @Option(help: "Messages per echo run.") var messages = 20_000
    @Option(help: "Rounds per comparison (medians are reported).") var rounds = 5
    @Option(help: "Requests per fetch run for 1 KiB bodies (1 MiB runs use a tenth).") var requests = 2_000
    @Option(help: "Which benchmarks: echo, fetch, cache (repeatable; default all).") var only: [String] = []
    @Option(name: .customLong("fetch-kib"), help: "Fetch body sizes in KiB (repeatable; default 1 and 1024).") var fetchKiB: [Int] = []
    @Option(name: .customLong("cache-mode"), help: "Fetch cache modes: no-store, default (repeatable; default both).") var cacheModes: [String] = []
    @Option(help: ArgumentHelp("Fetch side to run alone (direct or broker), for profiling one side.", visibility: .hidden)) var side: String?
    @Option(name: .customLong("in-flight"), help: "Fetch requests in flight (repeatable; default 1 and 8).") var inFlight: [Int] = []
    @Flag(name: .customLong("no-metrics"), help: "Run the broker without /metrics and its counting, to measure what they cost.")
    var noMetrics = false
    /// `--idle-poll-us`, as `serve` takes it (its default and bounds).
    @OptionGroup var service: ServiceOptions

    func validate() throws {
        for name in only where !["echo", "fetch", "cache"].contains(name) {
            throw ValidationError("unknown benchmark \(name); use echo, fetch or cache")
        }
        for mode in cacheModes where !["no-store", "default"].contains(mode) {
            throw ValidationError("unknown cache mode \(mode); use no-store or default")
        }
        if let side, !["direct", "broker"].contains(side) { throw ValidationError("--side is direct or broker") }
        for count in inFlight where !(1...256).contains(count) {
            throw ValidationError("--in-flight must be between 1 and 256")
        }
    }

    func wants(_ name: String) -> Bool { only.isEmpty || only.contains(name) }

    // Output goes through StandardOutput (unbuffered), so every finished table is out even if a
    // later section fails.
    func run() async throws {
        let cacheDirectory = NSTemporaryDirectory() + "bridge-bench-\(getpid())"
        let idlePollMicroseconds = service.idlePollMicroseconds
        let server = try startBenchServer(cacheDirectory: cacheDirectory, metrics: !noMetrics, service: service)
        let bare = BareEchoServer()
        try bare.start()
        let origin = try await LocalOrigin.start()
        StandardOutput.line("# bridge-broker bench\n")
        StandardOutput.line("bridge-broker \(BrokerConfiguration.version), \(ProcessInfo.processInfo.activeProcessorCount) cores, \(rounds) rounds per comparison, medians; metrics \(noMetrics ? "off" : "on"); the broker's idle poll \(idlePollMicroseconds) µs\(idlePollMicroseconds == BrokerServerConfiguration.defaultIdlePollMicroseconds ? " (the default)" : " (not the default, \(BrokerServerConfiguration.defaultIdlePollMicroseconds) µs)"); upstream exchanges \(server.configuration.upstreamOnServiceThread ? "on the WebSocket service thread (the default)" : "on AsyncHTTPClient's event loops (`--upstream-any-thread`)").\n")
        if wants("echo") { try await echo(server: server, bare: bare) }
        if wants("fetch") { try await fetch(server: server, origin: origin) }
        if wants("cache") {
            try await cacheHits(server: server, bare: bare, origin: origin)
            StandardOutput.line(try await CacheBench.run(service: service))
        }
        bare.stop()
        await server.shutdown()
        await origin.stop()
        try? FileManager.default.removeItem(atPath: cacheDirectory)
    }

    func echo(server: BrokerServer, bare: BareEchoServer) async throws {
        let body = String(repeating: "x", count: 100)
        let brokerURL = "ws://127.0.0.1:\(server.port)/bridge"
        let bareURL = "ws://127.0.0.1:\(bare.listeningPort)/"
        StandardOutput.line("## Echo: broker `echo` handler vs bare libwebsockets echo (100-byte bodies)\n")
        StandardOutput.line("| in flight | bare msg/s | broker msg/s | ratio | bare p50 / p99 µs | broker p50 / p99 µs |")
        StandardOutput.line("|---|---|---|---|---|---|")
        for inFlight in [1, 64] {
            var bareRuns: [RoundTripBench.Figures] = []
            var brokerRuns: [RoundTripBench.Figures] = []
            for _ in 0..<rounds {
                bareRuns.append(try await RoundTripBench.bare(url: bareURL, size: 100, count: messages, inFlight: inFlight))
                brokerRuns.append(try await RoundTripBench.run(
                    url: brokerURL, subprotocol: "bridge.v1", count: messages, warmup: 1000, inFlight: inFlight,
                    message: { seq in Array("{\"type\":\"post\",\"name\":\"echo\",\"id\":\(seq),\"body\":\"\(body)\"}".utf8) },
                    sequence: replyID))
            }
            let b = median(bareRuns), k = median(brokerRuns)
            StandardOutput.line("| \(inFlight) | \(Int(b.messagesPerSecond)) | \(Int(k.messagesPerSecond)) | \(percent(k.messagesPerSecond / b.messagesPerSecond)) | \(Int(b.p50Microseconds)) / \(Int(b.p99Microseconds)) | \(Int(k.p50Microseconds)) / \(Int(k.p99Microseconds)) |")
        }
        StandardOutput.line("\nTarget: broker ≥ 70% of the bare echo's throughput.\n")
    }

    func fetch(server: BrokerServer, origin: LocalOrigin) async throws {
        StandardOutput.line("## Fetch from a local origin: through the broker vs direct (AsyncHTTPClient)\n")
        StandardOutput.line("The broker side uses a SwiftNIO WebSocket client (`NIOBridgeClient.swift`); `no-store` is the proxy path alone, `default` also writes every response into the cache.\n")
        StandardOutput.line("| body | cache mode | concurrency | direct req/s | broker req/s | ratio | direct MB/s | broker MB/s | direct p50 ms | broker p50 ms |")
        StandardOutput.line("|---|---|---|---|---|---|---|---|---|---|")
        let client = try await NIOBridgeClient.connect(port: server.port)
        let direct = HTTPUpstreamClient()
        let sizes = (fetchKiB.isEmpty ? [1, 1024] : fetchKiB).map { kib in
            (kib * 1024, kib >= 1024 && kib % 1024 == 0 ? "\(kib / 1024) MiB" : "\(kib) KiB", kib >= 1024 ? max(20, requests / 10) : requests)
        }
        for (size, label, count) in sizes {
            for mode in cacheModes.isEmpty ? ["no-store", "default"] : cacheModes {
                for concurrency in inFlight.isEmpty ? [1, 8] : inFlight {
                    // Each side fetches `url`, a fresh one per run: in default mode every response
                    // is stored, and a stored one must not turn the run into cache hits.
                    let viaDirect: @Sendable (String) -> @Sendable (Int) async throws -> Void = { url in { _ in
                        let response = try await direct.send(UpstreamRequest(url: url, deadline: .now + .seconds(60)))
                        var total = 0
                        while let chunk = try await response.body.next() { total += chunk.count }
                        guard total == size else { throw BridgeError(.internal, "short body") }
                    } }
                    let viaBroker: @Sendable (String) -> @Sendable (Int) async throws -> Void = { url in { index in
                        let body: JSONValue = ["url": .string(url + "&i=\(index)"), "responseBody": "binary", "progress": false, "cache": .string(mode)]
                        try await client.fetch(body, expecting: size)
                    } }
                    let base = origin.url("/bytes/\(size)?mode=\(mode)&c=\(concurrency)")
                    // One run of each side that --side leaves in, over `url`.
                    func runSides(_ requests: Int, _ url: String) async throws -> (direct: FetchFigures?, broker: FetchFigures?) {
                        var figures: (direct: FetchFigures?, broker: FetchFigures?) = (nil, nil)
                        if side != "broker" { figures.direct = try await FetchFigures.measure(count: requests, concurrency: concurrency, size: size, request: viaDirect(url)) }
                        if side != "direct" { figures.broker = try await FetchFigures.measure(count: requests, concurrency: concurrency, size: size, request: viaBroker(url)) }
                        return figures
                    }
                    // A warm-up run per side, not counted, as the echo bench has: the first
                    // requests of a row pay for connections, lazy set-up and memory first touched.
                    _ = try await runSides(max(concurrency * 2, count / 10), base + "&r=warmup")
                    var runs: [(direct: FetchFigures?, broker: FetchFigures?)] = []
                    for round in 0..<rounds { runs.append(try await runSides(count, base + "&r=\(round)")) }
                    let d = FetchFigures.median(runs.compactMap(\.direct)), b = FetchFigures.median(runs.compactMap(\.broker))
                    StandardOutput.line("| \(label) | \(mode) | \(concurrency) | \(Int(d.requestsPerSecond)) | \(Int(b.requestsPerSecond)) | \(percent(b.requestsPerSecond / d.requestsPerSecond)) | \(format(d.megabytesPerSecond)) | \(format(b.megabytesPerSecond)) | \(format(d.p50Milliseconds)) | \(format(b.p50Milliseconds)) |")
                }
            }
        }
        StandardOutput.line("\nTarget: 1 MiB fetch throughput through the broker ≥ 50% of direct.\n")
        await client.close()
        await direct.shutdown()
    }

    /// Cache hits of a 1 KiB resource with 64 fetches in flight, against the bare echo of 1 KiB
    /// messages with 64 in flight, for two request shapes: a headless client's (text body, no
    /// progress) and the shim's (`fetch()` in a page: binary body frames, no progress events).
    func cacheHits(server: BrokerServer, bare: BareEchoServer, origin: LocalOrigin) async throws {
        let url = origin.url("/cached?cc=max-age%3D3600&size=1024")
        let warm = try await BridgeClient.connect(url: "ws://127.0.0.1:\(server.port)/bridge")
        _ = try await warm.post("fetch", ["url": .string(url), "responseBody": "text"])
        warm.close()
        let before = origin.requestCount("/cached")
        let shapes: [(label: String, body: String)] = [
            ("text body, progress off", "{\"url\":\"\(url)\",\"responseBody\":\"text\",\"progress\":false}"),
            // What bridge.js sends for a page's fetch(url) (FetchRun.start).
            ("as the shim sends it: binary body, progress off",
             "{\"url\":\"\(url)\",\"method\":\"GET\",\"headers\":[],\"redirect\":\"follow\",\"responseBody\":\"binary\",\"progress\":false,\"timeout\":60000}"),
        ]
        var bareRuns: [RoundTripBench.Figures] = []
        var hitRuns = [[RoundTripBench.Figures]](repeating: [], count: shapes.count)
        for _ in 0..<rounds {
            bareRuns.append(try await RoundTripBench.bare(url: "ws://127.0.0.1:\(bare.listeningPort)/", size: 1024, count: messages, inFlight: 64))
            for (index, shape) in shapes.enumerated() {
                hitRuns[index].append(try await RoundTripBench.run(
                    url: "ws://127.0.0.1:\(server.port)/bridge", subprotocol: "bridge.v1", count: messages, warmup: 1000, inFlight: 64,
                    message: { seq in Array("{\"type\":\"post\",\"name\":\"fetch\",\"id\":\(seq),\"body\":\(shape.body)}".utf8) },
                    sequence: replyID))
            }
        }
        let b = median(bareRuns)
        StandardOutput.line("## Cache hits: 1 KiB fetch served from the cache vs bare libwebsockets echo of 1 KiB, 64 in flight\n")
        StandardOutput.line("| fetch request | bare echo msg/s | cache-hit fetch/s | ratio | bare p50 / p99 µs | hit p50 / p99 µs |")
        StandardOutput.line("|---|---|---|---|---|---|")
        for (index, shape) in shapes.enumerated() {
            let h = median(hitRuns[index])
            StandardOutput.line("| \(shape.label) | \(Int(b.messagesPerSecond)) | \(Int(h.messagesPerSecond)) | \(percent(h.messagesPerSecond / b.messagesPerSecond)) | \(Int(b.p50Microseconds)) / \(Int(b.p99Microseconds)) | \(Int(h.p50Microseconds)) / \(Int(h.p99Microseconds)) |")
        }
        StandardOutput.line("\nOrigin requests during the runs: \(origin.requestCount("/cached") - before).")
        StandardOutput.line("\nTarget: cache-hit 1 KiB throughput ≥ 50% of the bare echo with 64 in flight.\n")
    }

    func median(_ runs: [RoundTripBench.Figures]) -> RoundTripBench.Figures {
        return RoundTripBench.Figures(messagesPerSecond: middle(runs.map(\.messagesPerSecond)), p50Microseconds: middle(runs.map(\.p50Microseconds)),
                                      p99Microseconds: middle(runs.map(\.p99Microseconds)))
    }
}

func percent(_ ratio: Double) -> String { ratio.isFinite ? "\(Int((ratio * 100).rounded()))%" : "-" }
func format(_ value: Double) -> String { String(format: value < 10 ? "%.2f" : "%.0f", value) }

/// Figures of one fetch run.
struct FetchFigures {
    var requestsPerSecond: Double
    var megabytesPerSecond: Double
    var p50Milliseconds: Double

    /// Runs `count` requests with `concurrency` workers.
    static func measure(count: Int, concurrency: Int, size: Int, request: @escaping @Sendable (Int) async throws -> Void) async throws -> FetchFigures {
        let next = Counter()
        let started = ContinuousClock.now
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    var mine: [Double] = []
                    while case let index = next.take(), index < count {
                        let begin = ContinuousClock.now
                        try await request(index)
                        let elapsed = ContinuousClock.now - begin
                        mine.append(Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)
                    }
                    return mine
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return FetchFigures(requestsPerSecond: Double(count) / seconds, megabytesPerSecond: Double(count * size) / seconds / 1e6,
                            p50Milliseconds: middle(latencies))
    }

    static func median(_ runs: [FetchFigures]) -> FetchFigures {
        guard !runs.isEmpty else { return FetchFigures(requestsPerSecond: 0, megabytesPerSecond: 0, p50Milliseconds: 0) }
        return FetchFigures(requestsPerSecond: middle(runs.map(\.requestsPerSecond)), megabytesPerSecond: middle(runs.map(\.megabytesPerSecond)),
                            p50Milliseconds: middle(runs.map(\.p50Milliseconds)))
    }
}

/// A shared counter that hands out request numbers.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func take() -> Int { lock.withLock { defer { value += 1 }; return value } }
}
