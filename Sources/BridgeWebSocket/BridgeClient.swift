import BridgeCore
import Foundation
import Synchronization

/// A headless client of the bridge protocol over WebSocket.
///
/// It connects, waits for `hello`, and matches replies, events and binary body frames to
/// posts by id. The CLI, the tests and the benchmarks use it.
public final class BridgeClient: Sendable {
    /// What a post hears before its reply.
    public enum PostEvent: Sendable {
        /// An `event` frame of the post.
        case event(name: String, body: JSONValue)
        /// A binary body chunk of the post; `isEnd` marks the last.
        case body([UInt8], isEnd: Bool)
    }

    let socket: WebSocketClient
    /// The broker's `hello`.
    public let hello: JSONValue
    private let state: Mutex<State>
    private let closeCode = Mutex<(closed: Bool, code: UInt16?)>((false, nil))

    struct Pending {
        var continuation: CheckedContinuation<JSONValue, Error>
        var onEvent: (@Sendable (PostEvent) -> Void)?
    }

    struct State {
        var nextID = 0
        var pending: [Int: Pending] = [:]
        var unsolicited: [JSONValue] = []
        var listener: (@Sendable (JSONValue) -> Void)?
    }

    private init(socket: WebSocketClient, hello: JSONValue) {
        self.socket = socket
        self.hello = hello
        self.state = Mutex(State())
    }

    /// A client dropped without `close()` starts the closing handshake; its service thread ends
    /// when the broker answers. Not `close()`, which waits for that thread: the last reference
    /// can go on the service thread itself, in a callback.
    deinit { socket.closeWithoutWaiting() }

    /// Connects to `url` (e.g. `ws://127.0.0.1:8787/bridge`) and waits for `hello`.
    public static func connect(url: String, token: String? = nil, origin: String? = nil, timeout: Duration = .seconds(10)) async throws -> BridgeClient {
        let socket = try WebSocketClient(url: url, origin: origin, bearerToken: token)
        let hello = AsyncStream<JSONValue>.makeStream()
        let box = ClientBox()
        socket.onMessage = { message in
            switch box.state {
            case .client(let client): client.receive(message)
            case .dropped: break
            case .waitingForHello:
                if case .text(let bytes) = message, let value = try? JSONParser.parse(bytes) { hello.continuation.yield(value) }
            }
        }
        socket.onClose = { code in
            if case .client(let client) = box.state { client.closed(code: code) }
            hello.continuation.finish()
        }
        try await socket.connect()
        let first = try await withDeadline(timeout, message: "the broker sent no hello within \(timeout)") {
            var iterator = hello.stream.makeAsyncIterator()
            return await iterator.next()
        }
        guard let first, first["type"]?.stringValue == "hello" else {
            socket.close()
            throw WebSocketClientError(description: "the broker sent no hello")
        }
        let client = BridgeClient(socket: socket, hello: first)
        box.set(client)
        return client
    }

    /// Posts to `name` and waits for the reply body; a failed reply throws its `BridgeError`.
    ///
    /// `onEvent` hears the post's events and binary chunks, in order, before the reply.
    public func post(_ name: String, _ body: JSONValue = .null, onEvent: (@Sendable (PostEvent) -> Void)? = nil, requestBody: [UInt8]? = nil) async throws -> JSONValue {
        let id = state.locked { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        return try await post(name, body, id: id, onEvent: onEvent, requestBody: requestBody)
    }

    /// Posts with an explicit id (tests use it to provoke `duplicate_id`).
    public func post(_ name: String, _ body: JSONValue, id: Int, onEvent: (@Sendable (PostEvent) -> Void)? = nil, requestBody: [UInt8]? = nil) async throws -> JSONValue {
        try await send(["type": "post", "name": .string(name), "id": .integer(id), "body": body], awaitingReplyTo: id, onEvent: onEvent) {
            if let requestBody { self.sendBody(id: id, requestBody) }
        }
    }

    /// Sends any frame and waits for the reply with `id`: tests use it for malformed posts.
    ///
    /// `afterSending` runs once the frame is queued (to stream a request body, say).
    public func send(_ frame: JSONValue, awaitingReplyTo id: Int, onEvent: (@Sendable (PostEvent) -> Void)? = nil,
                     afterSending: @Sendable () -> Void = {}) async throws -> JSONValue {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let closed = closeCode.locked { $0.closed }
                if closed {
                    continuation.resume(throwing: BridgeError(.network, "the connection is closed"))
                    return
                }
                state.locked { $0.pending[id] = Pending(continuation: continuation, onEvent: onEvent) }
                sendJSON(frame)
                afterSending()
            }
        } onCancel: {
            self.cancel(id: id)
        }
    }

    /// Sends a fire-and-forget post.
    public func postWithoutReply(_ name: String, _ body: JSONValue = .null) {
        sendJSON(["type": "post", "name": .string(name), "body": body])
    }

    /// Sends `cancel` for a post.
    public func cancel(id: Int) {
        sendJSON(["type": "cancel", "id": .integer(id)])
    }

    /// Streams `bytes` as the request body of post `id`, in 256 KiB binary frames.
    public func sendBody(id: Int, _ bytes: [UInt8], chunk: Int = 256 * 1024) {
        var start = 0
        repeat {
            let end = min(bytes.count, start + chunk)
            socket.send(binary: BinaryFrameHeader(id: id, isEnd: end == bytes.count).frame(payload: bytes[start..<end]))
            start = end
        } while start < bytes.count
    }

    /// Sends a raw text frame (tests use it for malformed input).
    public func sendRaw(_ text: String) { socket.send(text: Array(text.utf8)) }
    /// Sends a raw binary frame.
    public func sendRaw(binary: [UInt8]) { socket.send(binary: binary) }

    /// Frames that belonged to no pending post (`error` frames, subscription events), oldest first.
    public func takeUnsolicited() -> [JSONValue] {
        state.locked { state in
            defer { state.unsolicited = [] }
            return state.unsolicited
        }
    }

    /// Calls `listener` with every frame that belongs to no pending post, from now on.
    public func onUnsolicited(_ listener: @escaping @Sendable (JSONValue) -> Void) {
        state.locked { $0.listener = listener }
    }

    /// Whether the connection closed, and the close code the broker sent.
    public var closeStatus: (closed: Bool, code: UInt16?) { closeCode.locked { $0 } }

    /// Closes the connection.
    public func close() { socket.close() }

    private func sendJSON(_ value: JSONValue) { socket.send(text: value.jsonBytes) }

    fileprivate func receive(_ message: WebSocketMessage) {
        switch message {
        case .binary(let bytes):
            guard let header = try? bytes.withUnsafeBytes({ raw throws(BridgeError) in try BinaryFrameHeader.parse(raw) }) else { return }
            let listener = state.locked { $0.pending[header.id]?.onEvent }
            listener?(.body(Array(bytes[BinaryFrameHeader.size...]), isEnd: header.isEnd))
        case .text(let bytes):
            guard let frame = try? JSONParser.parse(bytes) else { return }
            let id = frame["id"]?.intValue
            switch frame["type"]?.stringValue {
            case "reply":
                guard let id, let pending = state.locked({ $0.pending.removeValue(forKey: id) }) else { return record(frame) }
                if frame["ok"]?.boolValue == true {
                    pending.continuation.resume(returning: frame["body"] ?? .null)
                } else {
                    let code = frame["error"]?["code"]?.stringValue ?? "internal"
                    let text = frame["error"]?["message"]?.stringValue ?? ""
                    pending.continuation.resume(throwing: BridgeError(ErrorCode(code), text))
                }
            case "event" where id != nil:
                let listener = state.locked { $0.pending[id!]?.onEvent }
                listener?(.event(name: frame["name"]?.stringValue ?? "", body: frame["body"] ?? .null))
            default:
                record(frame)
            }
        }
    }

    private func record(_ frame: JSONValue) {
        let listener = state.locked { state -> (@Sendable (JSONValue) -> Void)? in
            if state.listener == nil { state.unsolicited.append(frame) }
            return state.listener
        }
        listener?(frame)
    }

    fileprivate func closed(code: UInt16?) {
        closeCode.locked { $0 = (true, code) }
        let pending = state.locked { state -> [Pending] in
            defer { state.pending = [:] }
            return Array(state.pending.values)
        }
        for entry in pending {
            entry.continuation.resume(throwing: BridgeError(.network, "the connection closed (code \(code.map(String.init) ?? "none"))"))
        }
    }
}

/// Lets the socket's callbacks reach the client once it exists.
///
/// The reference is weak: the client holds the socket, the socket holds its callbacks, and the
/// callbacks hold this box, so a strong one was a cycle that kept every client, its socket,
/// session, service loop and streams alive after `close()` (LeakSanitizer found 64 such sets in
/// one run of the tests, issue #17).
private final class ClientBox: @unchecked Sendable {
    enum State {
        case waitingForHello
        case client(BridgeClient)
        /// The client was set and is gone: its frames have no one to go to.
        case dropped
    }

    private let value = Mutex<(set: Bool, client: Weak)>((false, Weak()))

    struct Weak { weak var client: BridgeClient? }

    var state: State {
        value.locked { value in
            guard value.set else { return .waitingForHello }
            return value.client.client.map(State.client) ?? .dropped
        }
    }

    func set(_ client: BridgeClient) { value.locked { $0 = (true, Weak(client: client)) } }
}
