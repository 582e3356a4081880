import BridgeCore
import CLibWebSockets
import Foundation

/// The lws callback of the server's one protocol: bridge sessions, echo sessions and HTTP.
func serverCallback(
    _ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?, _ input: UnsafeMutableRawPointer?, _ length: Int
) -> Int32 {
    guard let wsi, let server = contextOwner(of: wsi, as: WebSocketServer.self) else { return 0 }
    return server.handle(wsi: wsi, reason: reason, user: user, input: input, length: length)
}

/// The lws callback of the upstream protocol's raw connections (`ServiceThreadUpstream`).
func upstreamCallback(
    _ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?, _ input: UnsafeMutableRawPointer?, _ length: Int
) -> Int32 {
    guard let wsi, let server = contextOwner(of: wsi, as: WebSocketServer.self), let upstream = server.configuration.upstream else { return 0 }
    server.loop.noteEvent()
    let result = upstream.handle(wsi: wsi, reason: reason, input: input, length: length)
    server.configuration.jobs?.runJobs()
    return result
}

extension WebSocketServer {
    func handle(wsi: OpaquePointer, reason: lws_callback_reasons, user: UnsafeMutableRawPointer?, input: UnsafeMutableRawPointer?, length: Int) -> Int32 {
        // The jobs this callback gave the service thread's executor run before lws goes on: a
        // task a frame started, or one a written frame let go on.
        defer { configuration.jobs?.runJobs() }
        switch reason {
        case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
            loop.noteEvent()
            drainPending()
            return 0
        case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
            return filterHandshake(wsi)
        case LWS_CALLBACK_ESTABLISHED:
            loop.noteEvent()
            return established(wsi, user: user)
        case LWS_CALLBACK_RECEIVE:
            loop.noteEvent()
            guard let session = session(for: user) else { return -1 }
            return receive(session, wsi: wsi, input: input, length: length)
        case LWS_CALLBACK_SERVER_WRITEABLE:
            loop.noteEvent()
            guard let session = session(for: user) else { return -1 }
            return session.writable()
        case LWS_CALLBACK_CLOSED:
            if let session = session(for: user) {
                sessions[session.id] = nil
                session.closed()
                sessionClosed()
                user!.storeBytes(of: UInt64(0), as: UInt64.self)
            }
            return 0
        case LWS_CALLBACK_HTTP:
            loop.noteEvent()
            return serveHTTP(wsi, input: input, length: length)
        case LWS_CALLBACK_HTTP_BODY:
            loop.noteEvent()
            if let result = earlyBody(wsi, input: input, length: length) { return result }
        case LWS_CALLBACK_HTTP_BODY_COMPLETION:
            loop.noteEvent()
            if let result = earlyBodyComplete(wsi) { return result }
        case LWS_CALLBACK_HTTP_WRITEABLE:
            if let result = earlyWritable(wsi) { return result }
        case LWS_CALLBACK_CLOSED_HTTP:
            earlyClosed(wsi)
        default:
            break
        }
        return lws_callback_http_dummy(wsi, reason, user, input, length)
    }

    private func session(for user: UnsafeMutableRawPointer?) -> WebSocketSession? {
        guard let user else { return nil }
        let id = user.load(as: UInt64.self)
        return id == 0 ? nil : sessions[id]
    }

    private func filterHandshake(_ wsi: OpaquePointer) -> Int32 {
        switch checkHandshake(wsi) {
        case .success: return 0
        case .failure(let refusal):
            logger.warning("refused a WebSocket handshake from \(peer(wsi)): \(refusal.reason)")
            return -1
        }
    }

    /// The handshake policy's verdict on the request: for the WebSocket's own path, or for
    /// `path` when another request (an early one) is judged as the bridge's handshake would be.
    func checkHandshake(_ wsi: OpaquePointer, path: String? = nil) -> Result<HandshakePolicy.Endpoint, HandshakeRefusal> {
        policy.check(
            path: path ?? header(wsi, WSI_TOKEN_GET_URI) ?? "",
            origin: header(wsi, WSI_TOKEN_ORIGIN),
            query: query(wsi),
            authorization: header(wsi, WSI_TOKEN_HTTP_AUTHORIZATION)
        )
    }

    private func established(_ wsi: OpaquePointer, user: UnsafeMutableRawPointer?) -> Int32 {
        guard let user, case .success(let endpoint) = checkHandshake(wsi) else { return -1 }
        if shuttingDown { return -1 }
        nextSessionID += 1
        let session = WebSocketSession(id: nextSessionID, owner: self, fragmentBytes: configuration.fragmentBytes, traffic: trafficCounters)
        session.wsi = wsi
        user.storeBytes(of: session.id, as: UInt64.self)
        sessions[session.id] = session
        sessionOpened()
        trafficCounters.opened.add(1, ordering: .relaxed)
        switch endpoint {
        case .echo:
            session.isEcho = true
        case .bridge:
            let info = ConnectionInfo(
                origin: header(wsi, WSI_TOKEN_ORIGIN), peer: peer(wsi), userAgent: header(wsi, WSI_TOKEN_HTTP_USER_AGENT),
                acceptLanguage: header(wsi, WSI_TOKEN_HTTP_ACCEPT_LANGUAGE))
            session.connection = broker.connect(sink: session, info: info)
        }
        return 0
    }

    private func receive(_ session: WebSocketSession, wsi: OpaquePointer, input: UnsafeMutableRawPointer?, length: Int) -> Int32 {
        trafficCounters.received.add(length, ordering: .relaxed)
        let limit = broker.configuration.maxMessageBytes
        let accepted = session.receiveFragment(wsi, input, length, maxBytes: limit) { bytes, binary in
            if session.isEcho {
                session.send(framed: FrameBuffer(headroom: bridge_lws_pre(), copying: bytes), binary: binary)
            } else if binary {
                session.connection?.receive(binary: bytes)
            } else {
                session.connection?.receive(text: bytes)
            }
        }
        guard accepted else {
            logger.warning("closing session \(session.id): a message passed maxMessageBytes (\(limit))")
            bridge_lws_close_reason(wsi, 1009, "message larger than \(limit) bytes")
            return -1
        }
        return 0
    }

    func peer(_ wsi: OpaquePointer) -> String {
        var name = [CChar](repeating: 0, count: 128)
        return lws_get_peer_simple(wsi, &name, 128).map { String(cString: $0) } ?? "unknown"
    }
}
