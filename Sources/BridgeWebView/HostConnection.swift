import BridgeCore
import Synchronization

/// The host's own connection to the broker: posts made on behalf of the page's native message
/// handlers (`window.webkit.messageHandlers.NAME.postMessage`) and of the view itself (reading a
/// stored document), answered through continuations instead of a page.
///
/// Posts go through `BrokerConnection.receive(text:)` as envelopes, so they get the same
/// dispatch, limits and metrics as a page's posts.
final class HostConnection: ConnectionSink, @unchecked Sendable {
    private let state = Mutex(State())
    private var connection: BrokerConnection!
    /// Called from any thread with each event that belongs to no post (a subscription's).
    let onEvent: @Sendable (String, JSONValue) -> Void

    struct State {
        var nextID = 1
        var waiting: [Int: CheckedContinuation<Result<JSONValue, BridgeError>, Never>] = [:]
    }

    init(broker: Broker, info: ConnectionInfo, onEvent: @escaping @Sendable (String, JSONValue) -> Void) {
        self.onEvent = onEvent
        connection = broker.connect(sink: self, info: info)
    }

    /// Posts `body` to the handler `name` and returns its reply body or error.
    func post(_ name: String, _ body: JSONValue) async -> Result<JSONValue, BridgeError> {
        await withCheckedContinuation { continuation in
            let id = state.locked { state in
                let id = state.nextID
                state.nextID += 1
                state.waiting[id] = continuation
                return id
            }
            let envelope: JSONValue = ["type": "post", "name": .string(name), "id": .integer(id), "body": body]
            connection.receive(text: envelope.jsonBytes)
        }
    }

    func send(_ bytes: [UInt8], binary: Bool) {
        // Replies, and subscription events; a post's own events and body frames have nowhere to go.
        guard !binary, let message = try? JSONParser.parse(bytes) else { return }
        if message["type"]?.stringValue == "event", message["id"] == nil, let name = message["name"]?.stringValue {
            return onEvent(name, message["body"] ?? .null)
        }
        guard message["type"]?.stringValue == "reply", let id = message["id"]?.intValue else { return }
        guard let waiter = state.locked({ $0.waiting.removeValue(forKey: id) }) else { return }
        if message["ok"]?.boolValue == true {
            waiter.resume(returning: .success(message["body"] ?? .null))
        } else {
            let error = message["error"]
            let code = ErrorCode(error?["code"]?.stringValue ?? "internal")
            waiter.resume(returning: .failure(BridgeError(code, error?["message"]?.stringValue ?? "the post failed")))
        }
    }

    func waitUntilWritable() async {}
    func close(code: UInt16, reason: String) {}
    func pauseReading(_ paused: Bool) {}

    /// Ends the connection: posts in flight are cancelled.
    func close() {
        connection.closed()
        let waiters = state.locked { state in
            defer { state.waiting = [:] }
            return state.waiting.values
        }
        for waiter in waiters { waiter.resume(returning: .failure(BridgeError(.cancelled, "the web view closed"))) }
    }
}
