import AsyncHTTPClient
import BridgeCore

/// Upstream requests through a proxy, and what the broker checks where.
///
/// The URL rules (allow, deny, also-allow) are applied to every hop's URL before this point, as
/// without a proxy. The address rule needs the target's addresses, which a proxy would
/// otherwise resolve on its own, so:
/// - An IP-literal target is checked against the address rule.
/// - A host name is resolved by the broker first and every address it returns must pass the
///   address rule (all of them: the proxy may connect to any); otherwise `forbidden`. A URL an
///   allow pattern names may reach any address, so its name is not resolved by the broker
///   (the proxy resolves it: this works where only the proxy has DNS).
/// - `socks5://`: the broker resolves, checks and asks the proxy for the checked address, so
///   the address it checked is the one connected to, as without a proxy. `socks5h://` and
///   `http://` send the name and the proxy resolves it again; a name whose DNS answer changes
///   between the two lookups is outside the broker's control there, so a proxy shared with
///   untrusted pages should deny private destinations itself (docs/FLEET.md).
/// - The proxy's own address is not checked against the rules: the operator configured it.
/// - `--no-proxy` hosts are fetched directly, with the address pinned as usual.
extension HTTPUpstreamClient {
    func sendThroughProxy(
        _ request: UpstreamRequest, proxy: UpstreamProxy, host: String, port: Int?, secure: Bool
    ) async throws -> UpstreamResponse {
        let server = "\(proxy.host):\(proxy.port)"
        switch proxy.kind {
        case .http:
            _ = try await checkTarget(host, request: request, pin: false)
            if !secure, let forwarder { return try await forwarder.send(request, host: host, port: port) }
            let authorization = proxy.username.map {
                HTTPClient.Authorization.basic(username: $0, password: proxy.password ?? "")
            }
            let client = try client(
                key: "connect|\(server)", dnsOverride: [:],
                proxy: .server(host: proxy.host, port: proxy.port, authorization: authorization))
            return try await execute(request, on: client)
        case .socks5:
            let address = try await checkTarget(host, request: request, pin: true) ?? host
            let override = address == host ? [:] : [host: address]
            let client = try client(
                key: "socks5|\(server)|\(host)|\(address)", dnsOverride: override,
                proxy: .socksServer(host: proxy.host, port: proxy.port))
            return try await execute(request, on: client)
        case .socks5h:
            _ = try await checkTarget(host, request: request, pin: false)
            let client = try client(
                key: "socks5h|\(server)", dnsOverride: [:], proxy: .socksServer(host: proxy.host, port: proxy.port))
            return try await execute(request, on: client)
        }
    }

    /// Applies the address rule to a target reached through a proxy; returns the address to
    /// pin when `pin` (nil when the name is left to the proxy).
    func checkTarget(_ host: String, request: UpstreamRequest, pin: Bool) async throws -> String? {
        if IPAddress(host) != nil {
            guard request.addressAllowed(host) else { throw HTTPUpstreamClient.refusal(host: host, addresses: [host]) }
            return host
        }
        if request.anyAddressAllowed && !pin { return nil }
        let addresses = try await resolver.resolve(host)
        if pin {
            guard let address = addresses.first(where: request.addressAllowed) else {
                throw HTTPUpstreamClient.refusal(host: host, addresses: addresses)
            }
            return address
        }
        let refused = addresses.filter { !request.addressAllowed($0) }
        guard refused.isEmpty else { throw HTTPUpstreamClient.refusal(host: host, addresses: refused) }
        return nil
    }
}
