import ArgumentParser
import BridgeServer

/// How the broker's WebSocket service thread waits, for every command that runs a broker
/// (`serve`, and the WebKit host's `open`): include with `@OptionGroup` and call `apply(to:)`.
struct ServiceOptions: ParsableArguments {
    @Option(
        name: .customLong("idle-poll-us"),
        help: ArgumentHelp(
            "Microseconds the WebSocket service thread keeps polling after its last event before it sleeps (0-\(BrokerServerConfiguration.maxIdlePollMicroseconds); 0: off).",
            discussion: "Trades CPU while requests flow for fewer thread wake-ups per request; an idle broker sleeps either way."))
    var idlePollMicroseconds = BrokerServerConfiguration().idlePollMicroseconds

    @Flag(
        name: .customLong("upstream-any-thread"),
        help: ArgumentHelp(
            "Make every upstream exchange with AsyncHTTPClient on its event loops, and run the posts there.",
            discussion: "By default plain-http exchanges without a proxy run on the WebSocket service thread beside the posts that make them, so a fetch crosses no thread; https, proxies and streamed uploads use AsyncHTTPClient either way. BRIDGE_BROKER_UPSTREAM_ANY_THREAD=1 does the same."))
    var upstreamAnyThread = false

    func validate() throws {
        guard (0...BrokerServerConfiguration.maxIdlePollMicroseconds).contains(idlePollMicroseconds) else {
            throw ValidationError("--idle-poll-us must be between 0 and \(BrokerServerConfiguration.maxIdlePollMicroseconds), not \(idlePollMicroseconds)")
        }
    }

    /// Sets these options on `configuration`.
    func apply(to configuration: inout BrokerServerConfiguration) {
        configuration.idlePollMicroseconds = idlePollMicroseconds
        if upstreamAnyThread { configuration.upstreamOnServiceThread = false }
    }
}
