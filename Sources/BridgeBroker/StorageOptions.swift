import ArgumentParser
import BridgeCore
import BridgeServer

/// The broker's own files and the cookie policy they keep, shared by every command that runs a
/// broker (`serve`, and the WebKit host's `open`): include with `@OptionGroup` and call
/// `apply(to:)`, so both parse, check and apply them one way.
struct StorageOptions: ParsableArguments {
    @Option(name: .customLong("cache-dir"), help: "Directory for the broker's files (default: $XDG_CACHE_HOME/bridge-broker).")
    var cacheDirectory: String?
    @Option(name: .customLong("memory-capacity"), help: "Bytes of response bodies the HTTP cache keeps in memory.")
    var memoryCapacity = 64 * 1024 * 1024
    @Option(name: .customLong("disk-capacity"), help: "Bytes of response bodies the HTTP cache keeps on disk; an entry over 1/8 of it is not stored.")
    var diskCapacity = 1024 * 1024 * 1024
    @Option(name: .customLong("third-party-cookies"),
            help: "block (as headless Chromium) or allow (Chrome's older default): whether a page's cross-site requests store and send cookies.")
    var thirdPartyCookies = ThirdPartyCookies.block

    func validate() throws {
        guard memoryCapacity >= 0, diskCapacity >= 0 else { throw ValidationError("capacities must not be negative") }
    }

    /// Sets these options on `configuration`.
    func apply(to configuration: inout BrokerServerConfiguration) {
        if let cacheDirectory { configuration.cacheDirectory = cacheDirectory }
        configuration.memoryCapacity = memoryCapacity
        configuration.diskCapacity = diskCapacity
        configuration.thirdPartyCookies = thirdPartyCookies
    }
}
