import ArgumentParser
import BridgeCore
import BridgeWebSocket
import Foundation
import Synchronization

/// `bridge-broker monitor`: watch a running broker's requests and page loads live.
struct MonitorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "monitor",
        abstract: "Watch a running broker's requests, page loads and cache hits live.",
        discussion: "On a terminal, a multi-progress view redrawn ten times a second. When the output is not a terminal, one plain line per event; with --json, one JSON line per event. Reconnects when the broker restarts."
    )

    @Option(name: [.customLong("url"), .customLong("broker")], help: "The broker's WebSocket URL.")
    var url = "ws://127.0.0.1:8787/bridge"
    @Option(help: "The broker's token, if it requires one.") var token: String?
    @Flag(help: "Print one JSON line per event instead of the live view.") var json = false

    /// The longest wait between reconnection attempts.
    static let maxBackoff: Duration = .seconds(5)

    func run() async throws {
        let mode: MonitorOutput.Mode = json ? .json : TerminalText.isTerminal ? .screen : .plain
        let output = MonitorOutput(mode: mode, title: url)
        let renderer = mode == .screen ? Task { await output.redrawForever() } : nil
        defer { renderer?.cancel() }
        var backoff: Duration = .milliseconds(250)
        while !Task.isCancelled {
            do {
                let client = try await BridgeClient.connect(url: url, token: token, timeout: .seconds(5))
                let frames = AsyncStream<JSONValue>.makeStream()
                client.onUnsolicited { frames.continuation.yield($0) }
                _ = try await client.post("progress.subscribe")
                output.status("connected")
                backoff = .milliseconds(250)
                // The client has no close callback of its own: poll it and end the stream.
                let watcher = Task {
                    while !client.closeStatus.closed, !Task.isCancelled { try? await Task.sleep(for: .milliseconds(100)) }
                    frames.continuation.finish()
                }
                for await frame in frames.stream where frame["type"]?.stringValue == "event" {
                    output.event(frame)
                }
                watcher.cancel()
                client.close()
                output.status("broker gone; reconnecting")
            } catch {
                output.status("cannot reach the broker (\(error)); retrying in \(backoff)")
            }
            try? await Task.sleep(for: backoff)
            backoff = min(backoff * 2, Self.maxBackoff)
        }
    }
}

/// Where `monitor` writes: the live screen, plain lines, or JSON lines.
final class MonitorOutput: Sendable {
    enum Mode { case screen, plain, json }

    let mode: Mode
    let title: String
    private let model = Mutex(MonitorModel())
    private let drawnLines = Mutex(0)
    let start = ContinuousClock.now

    init(mode: Mode, title: String) {
        self.mode = mode
        self.title = title
    }

    private var now: Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    func event(_ frame: JSONValue) {
        switch mode {
        case .json:
            StandardOutput.line(JSONValue.object(JSONObject([("event", frame["name"] ?? .null), ("body", frame["body"] ?? .null)])).jsonString)
        case .plain:
            StandardOutput.line(MonitorModel.plainLine(frame))
        case .screen:
            let time = now
            model.locked { $0.apply(frame, now: time) }
        }
    }

    /// Shows the connection state: on the screen's title line, or as a line of its own (on
    /// standard error with `--json`, so the JSON stays clean).
    func status(_ text: String) {
        switch mode {
        case .screen: model.locked { $0.status = text }
        case .plain: StandardOutput.line("monitor: \(text)")
        case .json: StandardOutput.error("bridge-broker monitor: \(text)")
        }
    }

    /// Redraws the screen in place ten times a second until cancelled.
    func redrawForever() async {
        while !Task.isCancelled {
            redraw()
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    private func redraw() {
        let (columns, rows) = TerminalText.size
        let time = now
        let lines = model.locked { model in
            model.prune(now: time)
            return model.screen(columns: columns, rows: rows, title: title)
        }
        let previous = drawnLines.locked { count in
            defer { count = lines.count }
            return count
        }
        // Back to the first line drawn last time, clear below, draw again.
        var text = previous > 0 ? "\u{1B}[\(previous)F\u{1B}[J" : ""
        for line in lines { text += line + "\n" }
        StandardOutput.write(Array(text.utf8))
    }
}
