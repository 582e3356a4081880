import BridgeCore
import CLibWebSockets
import Synchronization

/// A server's connections and WebSocket payload bytes since it started.
public struct ServerTraffic: Sendable, Equatable {
    /// Sessions open now.
    public var openConnections: Int
    /// Sessions accepted since start.
    public var connectionsOpened: Int
    /// Payload bytes received from clients.
    public var bytesReceived: Int
    /// Payload bytes sent to clients.
    public var bytesSent: Int
}

/// The counters behind `ServerTraffic`: relaxed atomic additions on the service thread.
final class TrafficCounters: Sendable {
    let opened = Atomic<Int>(0)
    let received = Atomic<Int>(0)
    let sent = Atomic<Int>(0)
}

extension WebSocketServer {
    /// Connections and bytes so far.
    public var traffic: ServerTraffic {
        ServerTraffic(
            openConnections: openSessionCount, connectionsOpened: trafficCounters.opened.load(ordering: .relaxed),
            bytesReceived: trafficCounters.received.load(ordering: .relaxed), bytesSent: trafficCounters.sent.load(ordering: .relaxed))
    }

    /// `GET /metrics`: the Prometheus text, when the request presents the token (if one is set).
    func serveMetrics(_ wsi: OpaquePointer, _ metrics: (ServerTraffic) -> [UInt8]) -> Int32 {
        if let refusal = policy.tokenRefusal(query: query(wsi), authorization: header(wsi, WSI_TOKEN_HTTP_AUTHORIZATION)) {
            logger.warning("refused /metrics to \(peer(wsi)): \(refusal.reason)")
            let body = Array("401 Unauthorized: present the broker's token (?token= or Authorization: Bearer)\n".utf8)
            return respond(wsi, status: 401, type: "text/plain; charset=utf-8", extra: "www-authenticate: Bearer\r\n", body: body)
        }
        return respond(wsi, status: 200, type: "text/plain; version=0.0.4; charset=utf-8", extra: "cache-control: no-store\r\n", body: metrics(traffic))
    }

    private func respond(_ wsi: OpaquePointer, status: UInt32, type: String, extra: String, body: [UInt8]) -> Int32 {
        let failed = body.withUnsafeBufferPointer { bridge_lws_respond(wsi, status, type, extra, $0.baseAddress, $0.count) }
        if failed != 0 { return -1 }
        return lws_http_transaction_completed(wsi) != 0 ? -1 : 0
    }
}
