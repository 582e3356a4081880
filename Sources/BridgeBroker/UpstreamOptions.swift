import ArgumentParser
import BridgeCore
import BridgeServer

/// The upstream options of every command that runs a broker (`serve`, and the WebKit host's
/// `open`): the URL rules, the upstream proxy and the connections per host. Include with `@OptionGroup` and call
/// `apply(to:)`, so every such command parses them one way.
struct UpstreamOptions: ParsableArguments {
    @Option(name: .customLong("allow-url"), help: "Allow upstream URLs matching this glob, private addresses included (repeatable).")
    var allowURLs: [String] = []
    @Option(name: .customLong("deny-url"), help: "Refuse upstream URLs matching this glob (repeatable).")
    var denyURLs: [String] = []
    @Option(
        name: .customLong("upstream-proxy"),
        help: "Send upstream requests through this proxy: http://[user:password@]host[:port], socks5://host[:port] or socks5h://host[:port].")
    var upstreamProxy: String?
    @Option(
        name: .customLong("no-proxy"),
        help: "Reach these hosts without the proxy: host (and its subdomains), .domain, IP or *, optionally :port (comma-separated or repeated).")
    var noProxy: [String] = []
    @Option(
        name: .customLong("upstream-connections-per-host"),
        help: "Open at most N HTTP/1.1 connections to one upstream host at a time (1-256, default 16; a browser uses 6).")
    var upstreamConnectionsPerHost = BrokerServerConfiguration().upstreamConnectionsPerHost

    func validate() throws {
        guard (1...256).contains(upstreamConnectionsPerHost) else {
            throw ValidationError("--upstream-connections-per-host must be between 1 and 256, not \(upstreamConnectionsPerHost)")
        }
        _ = try proxy()
        if upstreamProxy == nil, !noProxy.isEmpty { throw ValidationError("--no-proxy needs --upstream-proxy") }
    }

    /// The parsed proxy, nil without `--upstream-proxy`.
    func proxy() throws -> UpstreamProxy? {
        guard let upstreamProxy else { return nil }
        do {
            return try UpstreamProxy(url: upstreamProxy, noProxy: noProxy)
        } catch let error as BridgeError {
            throw ValidationError("--upstream-proxy: \(error.message)")
        }
    }

    /// Sets the URL rules and the proxy of `configuration`.
    func apply(to configuration: inout BrokerServerConfiguration) throws {
        configuration.allowURLs += allowURLs
        configuration.denyURLs += denyURLs
        configuration.upstreamProxy = try proxy()
        configuration.upstreamConnectionsPerHost = upstreamConnectionsPerHost
    }
}
