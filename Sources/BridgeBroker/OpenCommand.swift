import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import BridgeCore
import BridgeServer
import BridgeWebView
import CWebKitGTK
import Foundation
import Logging

/// `bridge-broker open URL`: a WebKit window whose page talks to this process's broker through
/// WebKit's script message handlers (BridgeWebView), with a loading bar.
struct OpenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open",
        abstract: "Open a page in a WebKit window whose requests and posts go to this broker.",
        discussion: """
            The page gets the shim at document start and talks to the broker through WebKit's script message handlers, \
            with no WebSocket; the broker also listens on --port for WebSocket clients. Needs a display: run it under \
            xvfb-run for tests and benchmarks. As root in a container, WebKit's sandbox needs user namespaces; see \
            README.md ("The WebKit host").
            """
    )

    @Argument(help: "The page to open (http or https).") var url: String
    @Option(help: "Port for WebSocket clients and the shim; 0 picks a free one.") var port = 0
    @Option(name: .customLong("allow-origin"), help: "Allow WebSocket connections from this page origin (repeatable; * allows any).")
    var allowOrigins: [String] = []
    @Flag(name: .customLong("no-shim"), help: "Inject no shim: plain WebKit (a page may still include the shim and use the WebSocket).")
    var noShim = false
    @Option(name: .customLong("inject-into"), help: "Inject the shim only into frames whose document matches this WebKit URL pattern (http://host/*; repeatable; default: every frame).")
    var injectInto: [String] = []
    @Option(name: .customLong("never-inject-into"), help: "Never inject the shim into frames whose document matches this WebKit URL pattern (repeatable).")
    var neverInjectInto: [String] = []
    @Option(name: .customLong("webkit-data-dir"), help: "Keep WebKit's own data and HTTP cache in this directory (default: an ephemeral session, in memory).")
    var webKitDataDirectory: String?
    @Option(name: .customLong("warm-with"), help: "First load this page in a hidden view sharing the window's network session (WebKit's own cache), and wait for its resources.")
    var warmWith: String?
    @OptionGroup var upstream: UpstreamOptions
    @OptionGroup var storage: StorageOptions
    @OptionGroup var service: ServiceOptions
    @Option(name: .customLong("web-root"), help: "Directory holding bridge-js/ (default: found from the working directory).")
    var webRoot: String?
    @Option(name: .customLong("max-message-bytes"), help: "Largest message a page may send.") var maxMessageBytes = 16 * 1024 * 1024
    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning or error.") var logLevel = "warning"
    @Option(name: .customLong("preload-manifest"), help: "Preload the resources this JSON manifest URL lists before opening the page.")
    var preloadManifest: String?
    @Option(name: .customLong("preload-page"), help: "Preload this page's <link rel=preload> resources before opening the page.")
    var preloadPage: String?
    @Option(name: .customLong("preload"), help: "Preload this resource URL before opening the page (repeatable).")
    var preloadURLs: [String] = []
    @Flag(name: .customLong("include-page"), help: "Preload the document being opened too, so it opens from the broker's cache with no network.")
    var includePage = false
    @Flag(name: .customLong("no-stored-document"), help: "Always load the document from the network, even when the broker has it.")
    var noStoredDocument = false
    @Flag(name: .customLong("exit-after-load"), help: "Exit once the page's load event fired and its bridged requests ended.")
    var exitAfterLoad = false
    @Option(name: .customLong("wait-for"), help: "With --exit-after-load: also wait until this JavaScript expression is truthy; its JSON value is printed as \"result\".")
    var waitFor: String?
    @Option(help: "With --exit-after-load: seconds before giving up (exit 1).") var timeout = 60.0
    @Flag(help: "With --exit-after-load: print one JSON line with the load's timing and counts.") var json = false

    func validate() throws {
        guard (try? FetchRequest.normalize(url: url)) != nil else { throw ValidationError("the URL must be an absolute http(s) URL") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
        guard maxMessageBytes >= 1024 else { throw ValidationError("--max-message-bytes must be at least 1024") }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
        for resource in preloadURLs where (try? FetchRequest.normalize(url: resource)) == nil {
            throw ValidationError("--preload \(resource): not an absolute http(s) URL")
        }
        if let warmWith, (try? FetchRequest.normalize(url: warmWith)) == nil { throw ValidationError("--warm-with must be an absolute http(s) URL") }
        if waitFor != nil || json, !exitAfterLoad { throw ValidationError("--wait-for and --json need --exit-after-load") }
    }

    func run() async throws {
        var logger = Logger(label: "bridge-broker")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .warning
        var configuration = BrokerServerConfiguration()
        configuration.port = port
        configuration.allowedOrigins = allowOrigins
        try upstream.apply(to: &configuration)
        storage.apply(to: &configuration)
        service.apply(to: &configuration)
        configuration.webRoot = webRoot
        configuration.broker.maxMessageBytes = maxMessageBytes
        guard let root = webRoot ?? BrokerServerConfiguration.findWebRoot(),
            let shim = try? String(contentsOfFile: root + "/bridge-js/bridge.js", encoding: .utf8)
        else { throw ValidationError("no bridge-js/bridge.js found (use --web-root)") }
        let server = BrokerServer(configuration: configuration, logger: logger)
        do {
            try server.start()
        } catch {
            throw ValidationError("\(error)")
        }
        let session = OpenSession(command: self, server: server, shim: shim)
        let opened = await MainLoop.runApplication { session.start() }
        await server.shutdown()
        guard opened else { throw ValidationError("cannot open a display; run under xvfb-run (Debian's xvfb) or set DISPLAY") }
        // Leave without running static destructors: WebKit's and GTK's, run by exit() while
        // their own threads still work, aborted the process now and then (1 exit in about 25).
        // Everything of ours is done: the report is written (unbuffered) and the broker shut down.
        _exit(session.exitCode)
    }
}
