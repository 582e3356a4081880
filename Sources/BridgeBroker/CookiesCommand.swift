import ArgumentParser
import BridgeCore
import BridgeWebSocket
import Foundation

/// `bridge-broker cookies list|set|clear`: the cookie jar of a running broker, over the protocol.
struct CookiesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cookies",
        abstract: "List, set or clear the cookies of a running broker.",
        subcommands: [List.self, Store.self, Clear.self]
    )

    /// Posts `name` with `body` and returns the reply; a refusal is printed and exits with status 1.
    static func post(_ connection: CacheCommand.Connection, _ name: String, _ body: JSONValue) async throws -> JSONValue {
        let client = try await connection.connect(for: "cookies")
        defer { client.close() }
        do {
            return try await client.post(name, body)
        } catch let error as BridgeError {
            StandardOutput.error("bridge-broker cookies: \(error.code): \(error.message)")
            throw ExitCode(1)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the cookies a request to URL would carry (HttpOnly included), or every cookie without URL.")
        @OptionGroup var connection: CacheCommand.Connection
        @Argument(help: "An http(s) URL.") var url: String?
        @Flag(help: "Print the reply as JSON.") var json = false

        func run() async throws {
            var body = JSONObject()
            if let url { body["url"] = .string(url) }
            let reply = try await CookiesCommand.post(connection, "cookies.get", .object(body))
            if json { return StandardOutput.line(reply.jsonString) }
            let cookies = reply["cookies"]?.arrayValue ?? []
            for cookie in cookies { StandardOutput.line(Self.describe(cookie)) }
            if let header = reply["header"]?.stringValue, !header.isEmpty { StandardOutput.line("Cookie: \(header)") }
            if cookies.isEmpty { StandardOutput.line(url.map { "no cookies for \($0)" } ?? "no cookies") }
        }

        static func describe(_ cookie: JSONValue) -> String {
            let name = cookie["name"]?.stringValue ?? "", value = cookie["value"]?.stringValue ?? ""
            var line = name.isEmpty ? value : "\(name)=\(value)"
            let hostOnly = cookie["hostOnly"]?.boolValue ?? true
            line += "  \(hostOnly ? "" : ".")\(cookie["domain"]?.stringValue ?? "")\(cookie["path"]?.stringValue ?? "/")"
            if let expires = cookie["expires"]?.doubleValue { line += "  expires \(HTTPDate.format(expires.rounded(.down)))" } else { line += "  session" }
            if cookie["secure"]?.boolValue == true { line += "  Secure" }
            if cookie["httpOnly"]?.boolValue == true { line += "  HttpOnly" }
            if let sameSite = cookie["sameSite"]?.stringValue, sameSite != "unspecified" { line += "  SameSite=\(sameSite)" }
            if let partition = cookie["partition"]?.stringValue { line += "  Partitioned under \(partition)" }
            return line
        }
    }

    struct Store: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "set", abstract: "Store a Set-Cookie line as if URL had answered it.")
        @OptionGroup var connection: CacheCommand.Connection
        @Argument(help: "The http(s) URL the cookie is set for.") var url: String
        @Argument(help: "The Set-Cookie line, e.g. \"sid=1; Path=/; Max-Age=3600\".") var setCookie: String
        @Flag(help: "Print the reply as JSON.") var json = false

        func run() async throws {
            let reply = try await CookiesCommand.post(connection, "cookies.set", ["url": .string(url), "setCookie": .string(setCookie)])
            if json { return StandardOutput.line(reply.jsonString) }
            StandardOutput.line(reply["stored"]?.boolValue == true ? "stored" : "deleted")
        }
    }

    struct Clear: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete cookies: all, of a domain and its subdomains, or created since a time.")
        @OptionGroup var connection: CacheCommand.Connection
        @Option(help: "Only the cookies of this domain and its subdomains.") var domain: String?
        @Option(help: "Only the cookies created since this time, in seconds since the epoch.") var since: Double?
        @Flag(help: "Print the reply as JSON.") var json = false

        func run() async throws {
            var body = JSONObject()
            if let domain { body["domain"] = .string(domain) }
            if let since { body["since"] = .double(since) }
            let reply = try await CookiesCommand.post(connection, "cookies.clear", .object(body))
            if json { return StandardOutput.line(reply.jsonString) }
            StandardOutput.line("removed \(reply["removed"]?.intValue ?? 0)")
        }
    }
}
