import ArgumentParser
import BridgeCore
import BridgeServer
import BridgeTestOrigin
import Foundation
import Logging

extension ThirdPartyCookies: ExpressibleByArgument {}

/// `bridge-broker serve`: run the broker.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the broker (the default).",
        discussion: "Listens on loopback only. The same port serves the WebSocket endpoint /bridge, the shim at /bridge.js and the examples under /examples/."
    )

    @Option(help: "Address to listen on (loopback only).") var host = "127.0.0.1"
    @Option(help: "Port to listen on; 0 picks a free one.") var port = 8787
    @Option(name: .customLong("allow-origin"), help: "Allow WebSocket connections from this page origin (repeatable; * allows any).")
    var allowOrigins: [String] = []
    @Option(help: "Require this token (query ?token= or Authorization: Bearer).") var token: String?
    @OptionGroup var upstream: UpstreamOptions
    @OptionGroup var storage: StorageOptions
    @OptionGroup var service: ServiceOptions
    @Option(name: .customLong("web-root"), help: "Directory holding bridge-js/ and examples/ (default: found from the working directory).")
    var webRoot: String?
    @Option(name: .customLong("shim-max-age"), help: "Seconds a browser may reuse /bridge.js without asking again (0: revalidate on every page load).")
    var shimMaxAge = 0
    @Option(name: .customLong("max-message-bytes"), help: "Largest message a client may send.") var maxMessageBytes = 16 * 1024 * 1024
    @Option(name: .customLong("max-in-flight"), help: "Most posts one connection may have in flight.") var maxInFlight = 256
    @Flag(name: .customLong("diagnostic-echo"), help: "Serve the raw echo endpoint /echo (for WebSocket conformance tests).")
    var diagnosticEcho = false
    @Flag(name: .customLong("no-metrics"), help: "Serve no /metrics and count nothing for it.") var noMetrics = false
    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning or error.") var logLevel = "info"
    @Option(name: .customLong("demo-origin"), help: "Also run the demo origin (a local test server for the examples) on this port, and allow it.")
    var demoOrigin: Int?
    @Option(name: .customLong("demo-latency"), help: "Milliseconds the demo origin waits before each response.") var demoLatency = 0
    @Option(name: .customLong("preload-manifest"), help: "Preload the resources this JSON manifest URL lists, once started.")
    var preloadManifest: String?
    @Option(name: .customLong("preload-interval"), help: "Seconds between preloads of --preload-manifest; 0 preloads once.")
    var preloadInterval = 0

    func validate() throws {
        guard maxMessageBytes >= 1024 else { throw ValidationError("--max-message-bytes must be at least 1024") }
        guard maxInFlight >= 1 else { throw ValidationError("--max-in-flight must be at least 1") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
        guard demoOrigin.map({ (1...65535).contains($0) }) ?? true else { throw ValidationError("--demo-origin must be 1 to 65535") }
        guard demoLatency >= 0 else { throw ValidationError("--demo-latency must not be negative") }
        guard shimMaxAge >= 0 else { throw ValidationError("--shim-max-age must not be negative") }
        guard preloadInterval >= 0 else { throw ValidationError("--preload-interval must not be negative") }
        if let preloadManifest, (try? FetchRequest.normalize(url: preloadManifest)) == nil {
            throw ValidationError("--preload-manifest must be an absolute http(s) URL")
        }
    }

    func run() async throws {
        var logger = Logger(label: "bridge-broker")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        var configuration = BrokerServerConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.allowedOrigins = allowOrigins
        configuration.token = token
        try upstream.apply(to: &configuration)
        storage.apply(to: &configuration)
        service.apply(to: &configuration)
        configuration.webRoot = webRoot
        configuration.diagnosticEcho = diagnosticEcho
        configuration.shimMaxAge = shimMaxAge
        configuration.metrics = !noMetrics
        configuration.broker.maxMessageBytes = maxMessageBytes
        configuration.broker.maxInFlight = maxInFlight
        var origin: LocalOrigin?
        if let demoOrigin {
            do {
                // The page-load benchmark's page with the shim's bootstrap snippet inlines this file.
                let snippet = (webRoot ?? BrokerServerConfiguration.findWebRoot()).flatMap {
                    try? String(contentsOfFile: $0 + "/bridge-js/bridge-snippet.js", encoding: .utf8)
                }
                origin = try await LocalOrigin.start(port: demoOrigin, latency: .milliseconds(demoLatency), pageSnippet: snippet)
            } catch {
                throw ValidationError("cannot start the demo origin on port \(demoOrigin): \(error)")
            }
            // Admitted beside the rules: an allow pattern would refuse every public URL.
            configuration.alsoAllowURLs.append("http://127.0.0.1:\(demoOrigin)/*")
            // The demo origin's own pages (the preload demo) talk to the broker too.
            configuration.allowedOrigins.append("http://127.0.0.1:\(demoOrigin)")
        }
        let server = BrokerServer(configuration: configuration, logger: logger)
        do {
            try server.start()
        } catch {
            throw ValidationError("\(error)")
        }
        var lines = [
            "bridge-broker \(BrokerConfiguration.version) listening on http://\(host):\(server.port)",
            "  WebSocket  \(server.bridgeURL)",
            "  shim       http://\(host):\(server.port)/bridge.js",
            "  examples   http://\(host):\(server.port)/examples/",
        ]
        if !noMetrics { lines.append("  metrics    http://\(host):\(server.port)/metrics") }
        lines.append("  cache dir  \(configuration.cacheDirectory)")
        if let proxy = configuration.upstreamProxy {
            lines.append("  upstream   via \(proxy)" + (proxy.noProxy.isEmpty ? "" : " (not for \(proxy.noProxy.joined(separator: ", ")))"))
        }
        if let origin { lines.append("  demo origin http://127.0.0.1:\(origin.port)/ (latency \(demoLatency) ms)") }
        let banner = lines.joined(separator: "\n") + "\n"
        // Written unbuffered so that scripts waiting for the banner see it at once.
        FileHandle.standardOutput.write(Data(banner.utf8))
        if let preloadManifest {
            server.preloadPeriodically(manifest: preloadManifest, every: preloadInterval > 0 ? .seconds(preloadInterval) : nil)
        }
        await BrokerServer.waitForTerminationSignal()
        logger.info("shutting down")
        await server.shutdown()
        await origin?.stop()
    }
}
