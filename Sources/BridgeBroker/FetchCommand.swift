import ArgumentParser
import BridgeCore
import BridgeWebSocket
import Foundation

/// `bridge-broker fetch URL`: one fetch through a running broker, over the protocol.
struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Fetch a URL through a running broker and print the body."
    )

    @Argument(help: "The http(s) URL to fetch.") var url: String
    @Option(help: "The broker's WebSocket URL.") var broker = "ws://127.0.0.1:8787/bridge"
    @Option(help: "The broker's token, if it requires one.") var token: String?
    @Option(name: [.customShort("X"), .long], help: "The request method.") var method = "GET"
    @Option(name: [.customShort("H"), .customLong("header")], help: "A request header, \"Name: value\" (repeatable).") var headers: [String] = []
    @Option(name: [.customShort("d"), .long], help: "A request body (text).") var data: String?
    @Option(help: "Cache mode: default, no-store, reload, no-cache, force-cache, only-if-cached.") var cache = "default"
    @Option(help: "Redirect mode: follow, manual or error.") var redirect = "follow"
    @Option(help: "Timeout in milliseconds.") var timeout = 60_000
    @Flag(name: [.customShort("i"), .long], help: "Print the status line and headers before the body.") var include = false
    @Flag(help: "Print the events and the reply as JSON lines instead of the body.") var json = false
    @Flag(help: "Exit with status 22 when the HTTP status is 400 or more.") var fail = false

    func run() async throws {
        var headerPairs: [JSONValue] = []
        for header in headers {
            guard let colon = header.firstIndex(of: ":") else { throw ValidationError("header \"\(header)\" has no colon") }
            let name = header[..<colon].trimmingCharacters(in: .whitespaces)
            let value = header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headerPairs.append([.string(name), .string(value)])
        }
        var body: [(key: String, value: JSONValue)] = [
            ("url", .string(url)), ("method", .string(method)), ("headers", .array(headerPairs)), ("cache", .string(cache)),
            ("redirect", .string(redirect)), ("timeout", .integer(timeout)), ("responseBody", .string("binary")),
        ]
        if let data { body.append(("body", ["text": .string(data)])) }

        let client: BridgeClient
        do {
            client = try await BridgeClient.connect(url: broker, token: token)
        } catch {
            throw FetchFailure(message: "cannot reach the broker at \(broker): \(error)", code: 7)
        }
        defer { client.close() }
        let printJSON = json
        let printHead = include
        let reply: JSONValue
        do {
            reply = try await client.post("fetch", .object(JSONObject(body))) { event in
                switch event {
                case .event(let name, let eventBody):
                    if printJSON {
                        StandardOutput.line(JSONValue.object(JSONObject([("event", .string(name)), ("body", eventBody)])).jsonString)
                    } else if printHead, name == "response" {
                        FetchCommand.printHead(eventBody)
                    }
                case .body(let bytes, _):
                    if !printJSON { StandardOutput.write(bytes) }
                }
            }
        } catch let error as BridgeError {
            if printJSON { StandardOutput.line(JSONValue.object(JSONObject([("error", error.json)])).jsonString) }
            throw FetchFailure(message: "\(error.code): \(error.message)", code: 1)
        }
        if printJSON { StandardOutput.line(JSONValue.object(JSONObject([("reply", reply)])).jsonString) }
        if fail, let status = reply["status"]?.intValue, status >= 400 {
            throw FetchFailure(message: "HTTP status \(status)", code: 22)
        }
    }

    static func printHead(_ response: JSONValue) {
        let status = response["status"]?.intValue ?? 0
        var text = "HTTP \(status) \(response["statusText"]?.stringValue ?? "")\r\n"
        for pair in response["headers"]?.arrayValue ?? [] {
            text += "\(pair.arrayValue?.first?.stringValue ?? ""): \(pair.arrayValue?.last?.stringValue ?? "")\r\n"
        }
        StandardOutput.write(Array((text + "\r\n").utf8))
    }
}

/// A fetch that failed: its message goes to standard error and its code is the exit status.
func FetchFailure(message: String, code: Int32) -> ExitCode {
    StandardOutput.error("bridge-broker fetch: \(message)")
    return ExitCode(code)
}
