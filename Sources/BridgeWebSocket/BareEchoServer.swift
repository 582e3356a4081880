import CLibWebSockets
import Foundation

/// A bare libwebsockets echo server: the baseline the broker's echo is measured against.
///
/// It does only what any lws echo must: reassemble a message, queue it, and write it back one
/// `lws_write` per writable callback. No protocol, no JSON, no tasks, no locks (everything runs
/// on the service thread). It uses the same buffer sizes as the broker's server.
public final class BareEchoServer: @unchecked Sendable {
    let loop = ServiceLoop(name: "bare-echo")
    private var protocols: UnsafeMutablePointer<lws_protocols>?
    private var retained: [CString] = []
    private var port = 0
    // Service-thread state: per connection, the message being received and those to send back.
    var sessions: [UInt64: (receiving: [UInt8], outbox: [(bytes: [UInt8], binary: Bool)])] = [:]
    var nextID: UInt64 = 0

    /// Creates the server; call `start()` to listen on an OS-chosen loopback port.
    public init() {}

    deinit { protocols?.deallocate() }

    /// The port it listens on.
    public var listeningPort: Int { port }

    /// Binds 127.0.0.1 on an OS-chosen port and starts the service thread.
    public func start(fragmentBytes: Int = 128 * 1024) throws {
        let name = CString("echo")
        let host = CString("127.0.0.1")
        retained = [name, host]
        var entry = lws_protocols()
        entry.name = UnsafePointer(name.pointer)
        entry.callback = bareEchoCallback
        entry.per_session_data_size = MemoryLayout<UInt64>.size
        entry.rx_buffer_size = 64 * 1024
        entry.tx_packet_size = fragmentBytes + Int(bridge_lws_pre())
        protocols = .table([entry])
        var info = lws_context_creation_info()
        info.port = 0
        info.iface = UnsafePointer(host.pointer)
        info.protocols = UnsafePointer(protocols)
        info.gid = -1
        info.uid = -1
        info.options = bridge_lws_option_disable_ipv6()
        info.pt_serv_buf_size = UInt32(fragmentBytes + 4096)
        info.user = Unmanaged.passUnretained(self).toOpaque()
        guard let context = ServiceLoop.createContext(&info) else { throw WebSocketServerError(description: "bare echo: cannot listen") }
        port = Int(lws_get_vhost_listen_port(lws_get_vhost_by_name(context, "default")))
        loop.start(context: context) { [self] in _ = self }
    }

    /// Stops the service thread.
    public func stop() {
        loop.requestStop()
        loop.waitUntilFinished()
    }

    func handle(wsi: OpaquePointer, reason: lws_callback_reasons, user: UnsafeMutableRawPointer?, input: UnsafeMutableRawPointer?, length: Int) -> Int32 {
        switch reason {
        case LWS_CALLBACK_ESTABLISHED:
            nextID += 1
            user?.storeBytes(of: nextID, as: UInt64.self)
            sessions[nextID] = ([], [])
        case LWS_CALLBACK_RECEIVE:
            guard let id = user?.load(as: UInt64.self), var session = sessions[id] else { return -1 }
            session.receiving.append(contentsOf: UnsafeRawBufferPointer(start: input, count: input == nil ? 0 : length))
            if lws_is_final_fragment(wsi) != 0 {
                var message = [UInt8](repeating: 0, count: bridge_lws_pre())
                message += session.receiving
                session.receiving = []
                session.outbox.append((message, lws_frame_is_binary(wsi) != 0))
                lws_callback_on_writable(wsi)
            }
            sessions[id] = session
        case LWS_CALLBACK_SERVER_WRITEABLE:
            guard let id = user?.load(as: UInt64.self), var session = sessions[id], !session.outbox.isEmpty else { return 0 }
            var message = session.outbox.removeFirst()
            let count = message.bytes.count - bridge_lws_pre()
            let written = message.bytes.withUnsafeMutableBufferPointer {
                bridge_lws_write(wsi, $0.baseAddress! + bridge_lws_pre(), count, message.binary ? 1 : 0, 1, 1)
            }
            sessions[id] = session
            if written < 0 { return -1 }
            if !session.outbox.isEmpty { lws_callback_on_writable(wsi) }
        case LWS_CALLBACK_CLOSED:
            if let id = user?.load(as: UInt64.self) { sessions[id] = nil }
        default:
            break
        }
        return 0
    }
}

func bareEchoCallback(
    _ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?, _ input: UnsafeMutableRawPointer?, _ length: Int
) -> Int32 {
    guard let wsi, let server = contextOwner(of: wsi, as: BareEchoServer.self) else { return 0 }
    return server.handle(wsi: wsi, reason: reason, user: user, input: input, length: length)
}
