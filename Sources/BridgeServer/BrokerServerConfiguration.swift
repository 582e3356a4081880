import BridgeCore
import BridgeUpstream
import Foundation

/// Everything a broker process is configured with; the CLI's `serve` options map onto it.
public struct BrokerServerConfiguration: Sendable {
    /// The address to listen on: loopback by default.
    public var host = "127.0.0.1"
    /// The port; 0 lets the OS choose.
    public var port = 8787
    /// Page origins allowed besides the broker's own.
    public var allowedOrigins: [String] = []
    /// The token clients must present, if any.
    public var token: String?
    /// Upstream URL globs that are allowed (and may reach private addresses).
    public var allowURLs: [String] = []
    /// Upstream URL globs that are refused.
    public var denyURLs: [String] = []
    /// Upstream URL globs admitted (private addresses included) without turning the allow list
    /// on: every other public URL stays allowed. `serve --demo-origin` adds the demo origin here.
    public var alsoAllowURLs: [String] = []
    /// The proxy every upstream request goes through (`--upstream-proxy`, `--no-proxy`); nil
    /// connects directly. See `UpstreamProxy` for the forms and what is checked where.
    public var upstreamProxy: UpstreamProxy?
    /// The most HTTP/1.1 connections open to one upstream host at a time
    /// (`--upstream-connections-per-host`, at least 1). A cold page of R resources behind an
    /// origin of latency L loads in about ceil(R / N) * L; a browser uses 6. Default 16.
    public var upstreamConnectionsPerHost = HTTPUpstreamClient.defaultConnectionsPerHost
    /// The directory for the broker's files (its SQLite database).
    public var cacheDirectory = BrokerServerConfiguration.defaultCacheDirectory
    /// Bytes of response bodies the HTTP cache keeps in memory (`--memory-capacity`).
    public var memoryCapacity = 64 * 1024 * 1024
    /// Bytes of response bodies the HTTP cache keeps on disk (`--disk-capacity`); an entry over
    /// 1/8 of it is not stored.
    public var diskCapacity = 1024 * 1024 * 1024
    /// The directory holding `bridge-js/` and `examples/`; nil finds the project's own.
    public var webRoot: String?
    /// Seconds a browser may reuse `/bridge.js` without asking (`--shim-max-age`); 0 revalidates
    /// on every load.
    public var shimMaxAge = 0
    /// Serve the diagnostic `/echo` WebSocket endpoint.
    public var diagnosticEcho = false
    /// Serve `GET /metrics` (Prometheus text, token-protected like the WebSocket) and count
    /// what it reports; off removes even the counting (`--no-metrics`).
    public var metrics = true
    /// What the cookie jar does with a page's third-party cookies (`--third-party-cookies`):
    /// blocked by default, as in headless Chromium; `Partitioned` cookies work either way.
    public var thirdPartyCookies = ThirdPartyCookies.block
    /// The protocol limits.
    public var broker = BrokerConfiguration()
    /// Run each connection's posts on one of the upstream client's event loops (connections
    /// take the loops in turn), so that a fetch's task, its upstream connection and its response
    /// stay on one thread (`EventLoopTaskExecutor`). Off, posts run on the global executor, as
    /// before: `BRIDGE_BROKER_TASKS_ANY_LOOP=1` in the environment turns it off, to compare.
    public var tasksOnUpstreamLoops = ProcessInfo.processInfo.environment["BRIDGE_BROKER_TASKS_ANY_LOOP"] != "1"
    /// Plain-HTTP upstream exchanges, and the broker's tasks, on the WebSocket service thread
    /// (`ServiceThreadUpstream`): a fetch then crosses no thread. Off with
    /// BRIDGE_BROKER_UPSTREAM_ANY_THREAD=1 (AsyncHTTPClient for every exchange, tasks on its loops).
    public var upstreamOnServiceThread = ProcessInfo.processInfo.environment["BRIDGE_BROKER_UPSTREAM_ANY_THREAD"] != "1"

    /// Microseconds libwebsockets' service thread keeps polling after its last event before it
    /// sleeps in `poll()` (`--idle-poll-us`, 0 to `maxIdlePollMicroseconds`; 0 = off; default
    /// `defaultIdlePollMicroseconds`, 200), while the machine has a CPU to spare: while it
    /// polls, a response handed over by an event loop, or the client's next request, reaches it
    /// without waking it (docs/BENCHMARKS.md, "Polling before blocking"). A broker with no
    /// traffic sleeps after one budget: it burns no CPU. `BRIDGE_BROKER_IDLE_POLL_US` in the
    /// environment sets the default, to compare builds' settings without flags.
    public var idlePollMicroseconds = BrokerServerConfiguration.environmentIdlePoll ?? BrokerServerConfiguration.defaultIdlePollMicroseconds

    /// Poll only while the machine has a CPU to spare; tests of the hand-over turn it off.
    var idlePollNeedsSpareCPU = true
    /// How long an early request's lookups may take (`EarlyPosts.deadline`); tests on a loaded
    /// machine give them longer.
    package var earlyDeadline = EarlyPosts.deadline

    /// The built-in `idlePollMicroseconds`.
    public static let defaultIdlePollMicroseconds = 200
    /// The largest `idlePollMicroseconds` accepted: polling is for the gaps inside a request's
    /// round trip, not for waiting for traffic.
    public static let maxIdlePollMicroseconds = 2000

    static var environmentIdlePoll: Int? {
        guard let text = ProcessInfo.processInfo.environment["BRIDGE_BROKER_IDLE_POLL_US"], let value = Int(text),
            (0...maxIdlePollMicroseconds).contains(value)
        else { return nil }
        return value
    }

    /// Creates the default configuration.
    public init() {}

    /// `$XDG_CACHE_HOME/bridge-broker`, or `~/.cache/bridge-broker`.
    public static var defaultCacheDirectory: String {
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") { return xdg + "/bridge-broker" }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return home + "/.cache/bridge-broker"
    }

    /// The first directory, from the working directory or the executable upward, that holds
    /// `bridge-js/bridge.js`.
    public static func findWebRoot() -> String? {
        let starts = [FileManager.default.currentDirectoryPath, (CommandLine.arguments.first.map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().deletingLastPathComponent().path }) ?? ""]
        for start in starts where !start.isEmpty {
            var directory = URL(fileURLWithPath: start)
            for _ in 0..<8 {
                if FileManager.default.fileExists(atPath: directory.appendingPathComponent("bridge-js/bridge.js").path) {
                    return directory.path
                }
                directory.deleteLastPathComponent()
            }
        }
        return nil
    }
}
