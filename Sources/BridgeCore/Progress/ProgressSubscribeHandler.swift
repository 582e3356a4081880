/// The `progress.subscribe` handler: gives the connection the broker-wide progress stream.
///
/// Body: absent, `null` or `{}`. The reply (`{subscribed: true, queueLimit, stats}`) comes at
/// once; the stream's events (no `id`) follow until the connection closes. Subscribing twice
/// on one connection keeps one subscription.
public struct ProgressSubscribeHandler: BridgeHandler {
    /// The hub whose stream the connection receives.
    public let hub: ProgressHub

    /// Creates the handler over `hub` (the broker's `progress`).
    public init(hub: ProgressHub) {
        self.hub = hub
    }

    public func handle(_ call: HandlerCall) async throws -> JSONValue {
        switch call.body {
        case .null: break
        case .object(let object) where object.members.isEmpty: break
        default: throw BridgeError(.badRequest, "progress.subscribe takes no body (null or {}), not \(call.body.jsonString)")
        }
        let connection = call.connection
        _ = hub.subscribe(connection: connection)
        connection.whenClosed { [hub] in hub.unsubscribe(connection: connection) }
        return ["subscribed": true, "queueLimit": .integer(hub.queueLimit), "stats": hub.totals.json]
    }
}
