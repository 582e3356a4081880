import BridgeCore
import BridgeWebSocket
import Logging

extension BrokerServer {
    /// Preloads the resources `manifest` lists now and then every `interval` (nil: once), as a
    /// client of the broker's own `preload` handler, so the work shows in the progress stream
    /// and goes through the same URL rules and cache as any page's.
    ///
    /// Call after `start()`. The returned task runs until cancelled; each round's totals, or why
    /// it failed, go to the log.
    @discardableResult
    public func preloadPeriodically(manifest: String, every interval: Duration?) -> Task<Void, Never> {
        let (url, token, logger) = (bridgeURL, configuration.token, logger)
        return Task {
            while !Task.isCancelled {
                do {
                    let client = try await BridgeClient.connect(url: url, token: token)
                    defer { client.close() }
                    let reply = try await client.post("preload", ["manifest": .string(manifest)])
                    logger.info("preloaded \(manifest): \(reply["totals"]?.jsonString ?? "{}")")
                } catch {
                    logger.warning("preloading \(manifest) failed: \(error)")
                }
                guard let interval else { return }
                try? await Task.sleep(for: interval)
            }
        }
    }
}
