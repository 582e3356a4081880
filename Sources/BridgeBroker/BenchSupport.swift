import BridgeServer

/// A broker on an OS-chosen loopback port that may fetch from local origins, for the benchmarks.
func startBenchServer(cacheDirectory: String, metrics: Bool = true, service: ServiceOptions? = nil) throws -> BrokerServer {
    var configuration = BrokerServerConfiguration()
    configuration.metrics = metrics
    service?.apply(to: &configuration)
    configuration.port = 0
    configuration.allowURLs = ["http://127.0.0.1:*"]
    configuration.cacheDirectory = cacheDirectory
    let server = BrokerServer(configuration: configuration)
    try server.start()
    return server
}

/// The middle value of a non-empty list (the upper middle for an even count).
func middle<Value: Comparable>(_ values: [Value]) -> Value {
    values.sorted()[values.count / 2]
}
