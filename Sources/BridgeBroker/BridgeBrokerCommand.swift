import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif

/// The `bridge-broker` command: serve by default, and the client tools.
@main
struct BridgeBrokerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bridge-broker",
        abstract: "A request broker for web pages: fetch, XHR and postMessage over a WebSocket.",
        subcommands: [ServeCommand.self, FetchCommand.self, PreloadCommand.self, MonitorCommand.self, CacheCommand.self, BenchCommand.self, BareEchoCommand.self],
        defaultSubcommand: ServeCommand.self
    )

    static func main() async {
        // A peer that goes away must give EPIPE, not kill the process.
        signal(SIGPIPE, SIG_IGN)
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}
