import BridgeCore
@testable import BridgeServer
import BridgeTestOrigin
import Foundation
import Testing

/// `upstreamConnectionsPerHost` (`--upstream-connections-per-host`): a page's requests to one
/// host go out on that many connections at once, no more and no fewer.
@Suite(.serialized) struct UpstreamConnectionTests {
    /// nil: the configuration's default, which is `HTTPUpstreamClient.defaultConnectionsPerHost` (16).
    @Test(arguments: [3, nil])
    func requestsUseExactlyTheConfiguredConnectionsInParallel(configured: Int?) async throws {
        // Long enough that every one of the first requests reaches the origin before the first
        // answer frees a connection, on a loaded machine too (make test-asan): with 150 ms, the
        // peak could fall short of the limit only because the requests went out slowly.
        let latency = Duration.milliseconds(500)
        let limit = configured ?? 16
        #expect(BrokerServerConfiguration().upstreamConnectionsPerHost == 16)
        let harness = try await BrokerHarness.start(originLatency: latency) { configuration in
            if let configured { configuration.upstreamConnectionsPerHost = configured }
        }
        defer { Task { await harness.stop() } }
        let client = try await harness.client()
        defer { client.close() }
        let requests = 2 * limit + 2
        let started = ContinuousClock.now
        let statuses = try await withThrowingTaskGroup(of: JSONValue?.self) { group in
            for index in 0..<requests {
                let url = harness.origin.url("/bytes/64?n=\(index)")
                group.addTask { try await client.post("fetch", ["url": .string(url)])["status"] }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let elapsed = ContinuousClock.now - started
        #expect(statuses.count == requests && statuses.allSatisfy { $0 == 200 })
        #expect(harness.origin.requestCount("/bytes/64") == requests)
        #expect(harness.origin.peakConnections == limit, "\(requests) requests at once over \(harness.origin.peakConnections) connections")
        // 2N + 2 requests over N connections take three rounds of the origin's latency.
        #expect(elapsed >= latency * 3, "took \(elapsed)")
    }
}

/// A keep-alive connection the origin closed just as the broker reused it: the request is sent
/// again on a new connection, as Chromium does (`HttpNetworkTransaction::ShouldResendRequest`:
/// a reused connection that failed before any response byte), instead of failing the fetch.
@Suite(.serialized) struct StaleConnectionTests {
    @Test(arguments: ["GET", "POST"], [true, false])
    func aRequestOnAConnectionTheOriginClosedIsSentAgain(method: String, onServiceThread: Bool) async throws {
        // One connection, so the second request must reuse the one the origin drops.
        let harness = try await BrokerHarness.start {
            $0.upstreamConnectionsPerHost = 1
            $0.upstreamOnServiceThread = onServiceThread
        }
        defer { Task { await harness.stop() } }
        let client = try await harness.client()
        defer { client.close() }
        #expect(try await client.post("fetch", ["url": .string(harness.origin.url("/drop-next"))])["status"] == 200)
        let url = JSONValue.string(harness.origin.url("/echo"))
        let body: JSONValue = method == "POST" ? ["url": url, "method": "POST", "body": ["text": "payload"]] : ["url": url]
        let reply = try await client.post("fetch", body)
        #expect(reply["status"] == 200)
        // Once on the dropped connection, once on the new one.
        #expect(harness.origin.requestCount("/echo") == 2)
        #expect(harness.origin.requestCount("/drop-next") == 1)
    }

    /// On the service thread (the default) a request whose new connection closes unanswered
    /// fails at once, as in Chromium: only a reused connection's failure is a reason to resend.
    /// AsyncHTTPClient does not say whether it reused one, so through it the request goes out
    /// three times: the first attempt and two more (Chromium's limit for reused connections).
    @Test(arguments: [true, false])
    func aConnectionClosedAgainAndAgainStillFails(onServiceThread: Bool) async throws {
        let harness = try await BrokerHarness.start {
            $0.upstreamConnectionsPerHost = 1
            $0.upstreamOnServiceThread = onServiceThread
        }
        defer { Task { await harness.stop() } }
        let client = try await harness.client()
        defer { client.close() }
        await #expect(throws: BridgeError.self) { try await client.post("fetch", ["url": .string(harness.origin.url("/reset"))]) }
        #expect(harness.origin.requestCount("/reset") == (onServiceThread ? 1 : 3))
    }
}

/// After `shutdown()` the upstream client makes no new HTTP client: a fetch still on its way
/// made one that nothing shut down, and AsyncHTTPClient traps when such a client is released
/// (the ASan test run crashed so, "Client not shut down before the deinit", issue #17).
@Suite struct UpstreamShutdownTests {
    @Test func aRequestAfterShutdownIsRefused() async throws {
        let harness = try await BrokerHarness.start()
        let origin = try await LocalOrigin.start()
        await harness.stop()
        let request = UpstreamRequest(url: origin.url("/bytes/1"), deadline: .now + .seconds(10))
        await #expect(throws: BridgeError.self) { _ = try await harness.server.upstream.send(request) }
        await origin.stop()
    }
}
