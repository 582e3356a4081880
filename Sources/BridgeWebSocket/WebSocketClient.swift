import BridgeCore
import CLibWebSockets
import Foundation
import Synchronization

/// A whole WebSocket message.
public enum WebSocketMessage: Sendable, Equatable {
    case text([UInt8])
    case binary([UInt8])
}

/// Errors of the WebSocket client.
public struct WebSocketClientError: Error, CustomStringConvertible, Sendable {
    /// What went wrong.
    public let description: String
}

/// A libwebsockets client for one connection, on a service thread of its own.
///
/// Set `onMessage` and `onClose` before `connect()`; they run on the service thread and must
/// not block.
public final class WebSocketClient: SessionOwner, @unchecked Sendable {
    let loop = ServiceLoop(name: "bridge-websocket-client")
    let url: URL
    let origin: String?
    let bearerToken: String?
    let subprotocol: String?
    let maxMessageBytes: Int
    let fragmentBytes: Int
    private var retained: [CString] = []
    private var protocols: UnsafeMutablePointer<lws_protocols>?
    private let pending = Mutex<[WebSocketSession]>([])
    private let connectResult = Mutex<CheckedContinuation<Void, Error>?>(nil)
    private let closeCode = Mutex<UInt16?>(nil)
    var session: WebSocketSession!

    /// Called with every whole message received.
    public var onMessage: @Sendable (WebSocketMessage) -> Void = { _ in }
    /// Called once when the connection ends, with the close code the server sent, if any.
    public var onClose: @Sendable (UInt16?) -> Void = { _ in }

    /// Creates a client for a `ws://` URL.
    public init(url: String, origin: String? = nil, bearerToken: String? = nil, subprotocol: String? = "bridge.v1",
                maxMessageBytes: Int = 256 * 1024 * 1024, fragmentBytes: Int = 128 * 1024) throws {
        guard let parsed = URL(string: url), parsed.scheme == "ws", parsed.host != nil else {
            throw WebSocketClientError(description: "\(url) is not a ws:// URL")
        }
        self.url = parsed
        self.origin = origin
        self.bearerToken = bearerToken
        self.subprotocol = subprotocol
        self.maxMessageBytes = maxMessageBytes
        self.fragmentBytes = fragmentBytes
    }

    deinit { protocols?.deallocate() }

    /// Connects and completes the handshake; throws if the server refuses or is unreachable.
    public func connect() async throws {
        session = WebSocketSession(id: 1, owner: self, fragmentBytes: fragmentBytes, masksFrames: true)
        let name = CString(subprotocol ?? "bridge-client")
        var entry = lws_protocols()
        entry.name = UnsafePointer(name.pointer)
        entry.callback = clientCallback
        entry.rx_buffer_size = 64 * 1024
        entry.tx_packet_size = fragmentBytes + Int(bridge_lws_pre())
        protocols = .table([entry])
        var info = lws_context_creation_info()
        info.port = -1  // CONTEXT_PORT_NO_LISTEN
        info.protocols = UnsafePointer(protocols)
        info.gid = -1
        info.uid = -1
        info.pt_serv_buf_size = UInt32(fragmentBytes + 4096)
        info.user = Unmanaged.passUnretained(self).toOpaque()
        guard let context = ServiceLoop.createContext(&info) else { throw WebSocketClientError(description: "cannot create a libwebsockets context") }

        let host = CString(url.host!)
        var path = url.path.isEmpty ? "/" : url.path
        if let query = url.query { path += "?" + query }
        let pathString = CString(path)
        let hostHeader = CString("\(url.host!):\(url.port ?? 80)")
        let protocolString = subprotocol.map(CString.init)
        retained = [name, host, pathString, hostHeader] + [protocolString].compactMap { $0 }

        var connectInfo = lws_client_connect_info()
        connectInfo.context = context
        connectInfo.address = UnsafePointer(host.pointer)
        connectInfo.port = Int32(url.port ?? 80)
        connectInfo.path = UnsafePointer(pathString.pointer)
        connectInfo.host = UnsafePointer(hostHeader.pointer)
        // lws would write "Origin: http://" + origin itself; the header is added whole in
        // LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER instead, so https origins work too.
        connectInfo.protocol = protocolString.map { UnsafePointer($0.pointer) }
        connectInfo.ietf_version_or_minus_one = -1
        connectInfo.local_protocol_name = UnsafePointer(name.pointer)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            connectResult.locked { $0 = continuation }
            if lws_client_connect_via_info(&connectInfo) == nil {
                finishConnect(WebSocketClientError(description: "cannot connect to \(url)"))
            }
            // The loop keeps the client alive: lws calls back with an unretained pointer to it.
            loop.start(context: context) { [self] in _ = self }
        }
    }

    /// Queues a text message.
    public func send(text: [UInt8]) { session.send(text, binary: false) }
    /// Queues a binary message.
    public func send(binary: [UInt8]) { session.send(binary, binary: true) }
    /// Suspends while the send queue is over its high-water mark.
    public func waitUntilWritable() async { await session.waitUntilWritable() }

    /// Closes with 1000 and stops the service thread.
    public func close() {
        guard loop.context != nil else { return }
        if !loop.isStopping {
            // The loop stops at LWS_CALLBACK_CLIENT_CLOSED, or a second from now if the server
            // never answers the close.
            session.close(code: 1000, reason: "bye")
            loop.requestStop(after: .seconds(1))
        }
        // Also when the server closed first: on return the context is gone, always.
        loop.waitUntilFinished()
    }

    /// Starts the closing handshake (1000) and returns: the service thread stops once the server
    /// answers (or lws times the close out). Safe on any thread, the service thread included.
    func closeWithoutWaiting() {
        guard loop.context != nil, !loop.isStopping, let session else { return }
        session.close(code: 1000, reason: "bye")
    }

    func scheduleService(of session: WebSocketSession) {
        pending.locked { $0.append(session) }
        loop.wake()
    }

    func finishConnect(_ error: Error?) {
        guard let continuation = connectResult.locked({ value -> CheckedContinuation<Void, Error>? in
            defer { value = nil }
            return value
        }) else { return }
        if let error {
            continuation.resume(throwing: error)
            loop.requestStop()
        } else {
            continuation.resume()
        }
    }

    func handle(wsi: OpaquePointer, reason: lws_callback_reasons, input: UnsafeMutableRawPointer?, length: Int) -> Int32 {
        switch reason {
        case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
            let due = pending.locked { list -> [WebSocketSession] in
                defer { list = [] }
                return list
            }
            due.forEach { $0.service() }
        case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
            if let bearerToken, let input {
                if bridge_lws_append_handshake_header(wsi, input, length, "authorization:", "Bearer \(bearerToken)") != 0 { return -1 }
            }
            if let origin, let input {
                if bridge_lws_append_handshake_header(wsi, input, length, "origin:", origin) != 0 { return -1 }
            }
        case LWS_CALLBACK_CLIENT_ESTABLISHED:
            session.wsi = wsi
            finishConnect(nil)
            session.service()
        case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
            let message = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "connection failed"
            finishConnect(WebSocketClientError(description: "cannot connect to \(url): \(message)"))
        case LWS_CALLBACK_CLIENT_RECEIVE:
            let accepted = session.receiveFragment(wsi, input, length, maxBytes: maxMessageBytes) { bytes, binary in
                onMessage(binary ? .binary(Array(bytes)) : .text(Array(bytes)))
            }
            if !accepted {
                bridge_lws_close_reason(wsi, 1009, "message too large")
                return -1
            }
        case LWS_CALLBACK_CLIENT_WRITEABLE:
            return session.writable()
        case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
            if let input, length >= 2 {
                let bytes = input.assumingMemoryBound(to: UInt8.self)
                closeCode.locked { $0 = UInt16(bytes[0]) << 8 | UInt16(bytes[1]) }
            }
        case LWS_CALLBACK_CLIENT_CLOSED:
            session.closed()
            onClose(closeCode.locked { $0 })
            loop.requestStop()
        default:
            break
        }
        return 0
    }
}

func clientCallback(
    _ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?, _ input: UnsafeMutableRawPointer?, _ length: Int
) -> Int32 {
    guard let wsi, let client = contextOwner(of: wsi, as: WebSocketClient.self) else { return 0 }
    return client.handle(wsi: wsi, reason: reason, input: input, length: length)
}
