import BridgeCore
import Synchronization

/// The upstream client with every exchange it starts counted: the origin requests the broker
/// made, which `open --json` reports for a page load.
final class CountingUpstreamClient: UpstreamClient {
    let base: any UpstreamClient
    private let sent = Atomic<Int>(0)

    init(base: any UpstreamClient) { self.base = base }

    /// Exchanges started so far.
    var count: Int { sent.load(ordering: .relaxed) }

    func send(_ request: UpstreamRequest) async throws -> UpstreamResponse {
        sent.add(1, ordering: .relaxed)
        return try await base.send(request)
    }
}
