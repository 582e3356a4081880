import ArgumentParser
import BridgeCore
import BridgeWebSocket
import Foundation

/// `bridge-broker cache stats|clear`: the HTTP cache of a running broker, over the protocol.
struct CacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "Show or clear the HTTP cache of a running broker.",
        subcommands: [Stats.self, Clear.self]
    )

    /// Where the broker is.
    struct Connection: ParsableArguments {
        @Option(help: "The broker's WebSocket URL.") var broker = "ws://127.0.0.1:8787/bridge"
        @Option(help: "The broker's token, if it requires one.") var token: String?

        /// Connects to the broker; on failure, says so for `command` and exits with status 7.
        func connect(for command: String) async throws -> BridgeClient {
            do {
                return try await BridgeClient.connect(url: broker, token: token)
            } catch {
                StandardOutput.error("bridge-broker \(command): cannot reach the broker at \(broker): \(error)")
                throw ExitCode(7)
            }
        }

        /// Posts `name` with `body` and prints the reply as JSON.
        func post(_ name: String, _ body: JSONValue) async throws {
            let client = try await connect(for: "cache")
            defer { client.close() }
            do {
                StandardOutput.line(try await client.post(name, body).jsonString)
            } catch let error as BridgeError {
                StandardOutput.error("bridge-broker cache: \(error.code): \(error.message)")
                throw ExitCode(1)
            }
        }
    }

    struct Stats: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print entries and bytes per tier, hits, misses, revalidations and evictions as JSON.")
        @OptionGroup var connection: Connection

        func run() async throws { try await connection.post("cache.stats", .null) }
    }

    struct Clear: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete cached responses: all, by URL prefix, or stored since a time.")
        @OptionGroup var connection: Connection
        @Option(help: "Only the entries whose URL starts with this.") var prefix: String?
        @Option(help: "Only the entries stored or revalidated since this time, in milliseconds since the epoch.") var since: Int?

        func validate() throws {
            if prefix != nil, since != nil { throw ValidationError("give --prefix or --since, not both") }
        }

        func run() async throws {
            var body = JSONObject()
            if let prefix { body["prefix"] = .string(prefix) }
            if let since { body["since"] = .integer(since) }
            try await connection.post("cache.clear", .object(body))
        }
    }
}
