import ArgumentParser
import BridgeCore
import BridgeWebSocket
import Synchronization

/// `bridge-broker preload URL...`: fill a running broker's cache ahead of use, over the protocol.
struct PreloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "preload",
        abstract: "Fetch resources into a running broker's cache before a page needs them.",
        discussion: "Resources come from the URLs given, a page's <link rel=preload|modulepreload|prefetch> (--page) and a JSON manifest (--manifest). Each resource is printed as it ends, with its status, cache result and size."
    )

    @Argument(help: "URLs to preload.") var urls: [String] = []
    @Option(help: "A page whose preload, modulepreload and prefetch links are preloaded.") var page: String?
    @Option(help: "A JSON manifest URL listing resources.") var manifest: String?
    @Option(name: .customLong("for-page"), help: "The page the resources are for, which gets them when it opens (default: --page).") var forPage: String?
    @Option(help: "Most resources in flight at once.") var concurrency: Int?
    @Option(name: .customLong("per-host"), help: "Most resources in flight at once per origin.") var perHost: Int?
    @Option(name: .customLong("max-bytes"), help: "Start no more resources once this many bytes were loaded.") var maxBytes: Int?
    @Option(name: .customLong("max-count"), help: "Fetch at most this many resources.") var maxCount: Int?
    @Option(help: "Order: priority (highest first) or listed.") var priority: String?
    @Flag(name: .customLong("include-page"), help: "Store the page itself in the cache too.") var includePage = false
    @Option(help: "The page load the resources count towards (group progress).") var group: String?
    @OptionGroup var connection: CacheCommand.Connection
    @Flag(help: "Print the events and the reply as JSON lines.") var json = false

    func validate() throws {
        guard !urls.isEmpty || page != nil || manifest != nil else { throw ValidationError("give URLs, --page or --manifest") }
    }

    /// The `preload` post body the options describe.
    var body: JSONValue {
        var object = JSONObject()
        if !urls.isEmpty { object["urls"] = .array(urls.map { .string($0) }) }
        if let page { object["page"] = .string(page) }
        if let forPage { object["forPage"] = .string(forPage) }
        if let manifest { object["manifest"] = .string(manifest) }
        if let concurrency { object["concurrency"] = .integer(concurrency) }
        if let perHost { object["perHost"] = .integer(perHost) }
        if let maxBytes { object["maxBytes"] = .integer(maxBytes) }
        if let maxCount { object["maxCount"] = .integer(maxCount) }
        if let priority { object["priority"] = .string(priority) }
        if includePage { object["includePage"] = true }
        if let group { object["group"] = .string(group) }
        return .object(object)
    }

    func run() async throws {
        let client = try await connection.connect(for: "preload")
        defer { client.close() }
        let display = PreloadDisplay(json: json, terminal: TerminalText.isTerminal)
        let reply: JSONValue
        do {
            reply = try await client.post("preload", body) { event in
                if case .event(let name, let body) = event { display.event(name, body) }
            }
        } catch let error as BridgeError {
            if json { StandardOutput.line(JSONValue.object(JSONObject([("error", error.json)])).jsonString) }
            StandardOutput.error("bridge-broker preload: \(error.code): \(error.message)")
            throw ExitCode(1)
        }
        display.finish(reply)
    }
}

/// What `preload` prints: a line per resource as it ends and, on a terminal, a progress line
/// kept at the bottom.
final class PreloadDisplay: Sendable {
    let json: Bool
    let terminal: Bool
    private let progressLine = Mutex("")

    init(json: Bool, terminal: Bool) {
        self.json = json
        self.terminal = terminal
    }

    func event(_ name: String, _ body: JSONValue) {
        if json {
            StandardOutput.line(JSONValue.object(JSONObject([("event", .string(name)), ("body", body)])).jsonString)
            return
        }
        switch name {
        case "preload.resource" where body["state"]?.stringValue != "started":
            write(Self.describe(body))
        case "preload.progress" where terminal:
            let done = body["done"]?.intValue ?? 0
            let total = body["resources"]?.intValue ?? 0
            let line = "\(TerminalText.bar(body["progress"]?.doubleValue, width: 30)) \(done)/\(total)  \(TerminalText.bytes(body["bytes"]?.intValue ?? 0))"
            progressLine.locked { $0 = line }
            StandardOutput.write(Array("\r\u{1B}[K\(line)".utf8))
        default:
            break
        }
    }

    func finish(_ reply: JSONValue) {
        if json {
            StandardOutput.line(JSONValue.object(JSONObject([("reply", reply)])).jsonString)
            return
        }
        let totals = reply["totals"] ?? .null
        let counts = ["stored", "cached", "uncacheable", "failed", "skipped"].map { "\(totals[$0]?.intValue ?? 0) \($0)" }
        write("\(totals["resources"]?.intValue ?? 0) resources: \(counts.joined(separator: ", ")); \(TerminalText.bytes(totals["bytes"]?.intValue ?? 0)) in \(reply["elapsedMs"]?.intValue ?? 0) ms")
        if terminal { StandardOutput.write(Array("\r\u{1B}[K".utf8)) }
    }

    /// A resource line above the progress line.
    private func write(_ text: String) {
        guard terminal else { return StandardOutput.line(text) }
        let progress = progressLine.locked { $0 }
        StandardOutput.write(Array("\r\u{1B}[K\(text)\n\(progress)".utf8))
    }

    /// `stored       200 miss     4.1 KB  http://...` or `skipped  max_bytes  http://...`.
    static func describe(_ resource: JSONValue) -> String {
        let result = resource["result"]?.stringValue ?? "?"
        let url = resource["url"]?.stringValue ?? ""
        switch result {
        case "skipped":
            return "\(TerminalText.pad(result, 12)) \(TerminalText.pad(resource["reason"]?.stringValue ?? "", 21))  \(url)"
        case "failed":
            return "\(TerminalText.pad(result, 12)) \(TerminalText.pad(resource["error"]?["code"]?.stringValue ?? "", 21))  \(url)"
        default:
            let status = resource["status"]?.intValue.map(String.init) ?? "-"
            let detail = "\(status) \(TerminalText.pad(resource["cache"]?.stringValue ?? "", 11)) \(TerminalText.pad(TerminalText.bytes(resource["bytes"]?.intValue ?? 0), 8))"
            return "\(TerminalText.pad(result, 12)) \(detail)  \(url)"
        }
    }
}
