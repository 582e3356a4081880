import Foundation
import BridgeCore

/// What `monitor` knows of the broker's progress stream, and how it draws it.
///
/// Fed one subscription event at a time; `screen` renders the live view: a line per active
/// request (recently finished ones linger a moment), a bar per page group, and a footer with
/// totals, hit ratio and throughput.
struct MonitorModel {
    struct Request {
        var url: String
        var method: String
        var source: String
        var phase: String
        var status: Int?
        var cache: String?
        var loaded = 0
        var total: Int?
        var elapsedMs = 0
        var endedAt: Double?
    }

    struct Group {
        var name: String
        var requests = 0
        var finished = 0
        var progress = 0.0
        var endedAt: Double?
    }

    var requests: [Int: Request] = [:]
    var groups: [String: Group] = [:]
    var stats: JSONValue = .null
    var dropped = 0
    var status = "connecting"
    private var window: [(time: Double, bytes: Int)] = []

    /// How long finished requests and groups stay on screen, in seconds.
    static let linger = 1.0
    /// The span throughput is averaged over, in seconds.
    static let throughputWindow = 2.0

    /// Applies one `event` frame of the stream at time `now` (seconds).
    mutating func apply(_ frame: JSONValue, now: Double) {
        let body = frame["body"] ?? .null
        switch frame["name"]?.stringValue {
        case "progress.request":
            guard let id = body["request"]?.intValue else { return }
            var request = requests[id] ?? Request(
                url: body["url"]?.stringValue ?? "", method: body["method"]?.stringValue ?? "GET",
                source: body["source"]?.stringValue ?? "", phase: "")
            let loaded = body["loaded"]?.intValue ?? request.loaded
            window.append((now, max(0, loaded - request.loaded)))
            request.url = body["url"]?.stringValue ?? request.url
            request.phase = body["phase"]?.stringValue ?? request.phase
            request.status = body["status"]?.intValue ?? request.status
            request.cache = body["cache"]?.stringValue ?? request.cache
            request.loaded = loaded
            request.total = body["total"]?.intValue ?? request.total
            request.elapsedMs = body["elapsedMs"]?.intValue ?? request.elapsedMs
            if request.phase == "finished" || request.phase == "failed" { request.endedAt = now }
            requests[id] = request
        case "progress.group":
            let key = "\(body["connection"]?.intValue ?? 0)/\(body["group"]?.stringValue ?? "")"
            var group = groups[key] ?? Group(name: body["group"]?.stringValue ?? "")
            group.requests = body["requests"]?.intValue ?? group.requests
            group.finished = body["finished"]?.intValue ?? group.finished
            group.progress = body["progress"]?.doubleValue ?? group.progress
            // A group that a later request joined is loading again: it stays on screen.
            group.endedAt = group.progress >= 1 ? (group.endedAt ?? now) : nil
            groups[key] = group
        case "progress.stats":
            stats = body
        case "progress.dropped":
            dropped = body["total"]?.intValue ?? dropped + (body["count"]?.intValue ?? 0)
        default:
            break
        }
    }

    /// Forgets what ended more than `linger` ago and old throughput samples.
    mutating func prune(now: Double) {
        requests = requests.filter { $0.value.endedAt.map { now - $0 < Self.linger } ?? true }
        groups = groups.filter { $0.value.endedAt.map { now - $0 < Self.linger } ?? true }
        window.removeAll { now - $0.time > Self.throughputWindow }
    }

    /// Bytes per second over the last `throughputWindow`.
    var throughput: Double { Double(window.map(\.bytes).reduce(0, +)) / Self.throughputWindow }

    /// Hits (fresh or stale from the cache) over requests that consulted the cache.
    var hitRatio: Double? {
        let cache = stats["cache"]
        let hits = (cache?["hit"]?.intValue ?? 0) + (cache?["stale"]?.intValue ?? 0)
        let lookups = hits + (cache?["miss"]?.intValue ?? 0) + (cache?["revalidated"]?.intValue ?? 0)
        return lookups == 0 ? nil : Double(hits) / Double(lookups)
    }

    /// The screen: at most `rows` lines of at most `columns` characters.
    func screen(columns: Int, rows: Int, title: String) -> [String] {
        let width = max(40, columns) - 1
        var lines = [TerminalText.fit("bridge-broker monitor · \(title) · \(status)", width)]
        let barWidth = 20
        for (_, request) in requests.sorted(by: { $0.key < $1.key }) {
            let fraction = request.endedAt != nil ? 1 : request.total.map { $0 > 0 ? Double(request.loaded) / Double($0) : 1 }
            let size = request.total.map { "\(TerminalText.bytes(request.loaded)) / \(TerminalText.bytes($0))" } ?? TerminalText.bytes(request.loaded)
            let speed = request.elapsedMs > 0 ? Double(request.loaded) * 1000 / Double(request.elapsedMs) : 0
            let mark = request.phase == "failed" ? "✗" : request.endedAt != nil ? "✓" : "↓"
            let head = "\(mark) \(TerminalText.pad(request.phase, 10)) \(TerminalText.bar(fraction, width: barWidth)) \(TerminalText.pad(size, 21)) \(TerminalText.pad(TerminalText.bytes(Int(speed)) + "/s", 11)) \(TerminalText.pad(request.cache ?? "", 5)) "
            lines.append(TerminalText.fit(head + "\(request.method) \(request.url)", width))
        }
        for (_, group) in groups.sorted(by: { $0.key < $1.key }) {
            let head = "▣ group      \(TerminalText.bar(group.progress, width: barWidth)) \(group.finished)/\(group.requests) requests  \(Int(group.progress * 100))%  "
            lines.append(TerminalText.fit(head + group.name, width))
        }
        let ratio = hitRatio.map { "\(Int(($0 * 100).rounded()))%" } ?? "-"
        let footer = "\(stats["active"]?.intValue ?? 0) active · \(stats["finished"]?.intValue ?? 0) done · \(stats["failed"]?.intValue ?? 0) failed · hit ratio \(ratio) · \(TerminalText.bytes(stats["bytes"]?.intValue ?? 0)) total · \(TerminalText.bytes(Int(throughput)))/s" + (dropped > 0 ? " · \(dropped) events dropped" : "")
        let body = lines.dropFirst().prefix(max(0, rows - 3))
        return [lines[0]] + body + [String(repeating: "─", count: min(width, 100)), TerminalText.fit(footer, width)]
    }

    /// One plain line for an event, for output that is not a terminal.
    static func plainLine(_ frame: JSONValue) -> String {
        let body = frame["body"] ?? .null
        let name = frame["name"]?.stringValue ?? ""
        switch name {
        case "progress.request":
            let fields: [String?] = [
                "request \(body["request"]?.intValue ?? 0)", body["phase"]?.stringValue, body["source"]?.stringValue,
                body["status"]?.intValue.map(String.init), body["cache"]?.stringValue,
                "\(body["loaded"]?.intValue ?? 0)/\(body["total"]?.intValue.map(String.init) ?? "?") bytes",
                "\(body["elapsedMs"]?.intValue ?? 0) ms", body["error"]?["code"]?.stringValue,
                body["method"]?.stringValue, body["url"]?.stringValue,
            ]
            return fields.compactMap { $0 }.joined(separator: " ")
        case "progress.group":
            return "group \(body["group"]?.stringValue ?? "") \(body["finished"]?.intValue ?? 0)/\(body["requests"]?.intValue ?? 0) progress \(TerminalText.fixed(body["progress"]?.doubleValue ?? 0, 2))"
        default:
            return "\(name.replacingOccurrences(of: "progress.", with: "")) \(body.jsonString)"
        }
    }
}
