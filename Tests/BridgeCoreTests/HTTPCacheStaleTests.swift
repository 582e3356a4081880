import Synchronization
import Testing
@testable import BridgeCore

/// stale-while-revalidate, stale-if-error, immutable, request collapsing and the body tee.
struct HTTPCacheStaleTests {
    @Test func staleWhileRevalidateInsideTheWindowRevalidatesExactlyOnceInTheBackground() async throws {
        let gate = Gate()
        let rig = CacheRig { request in
            if request.headers.contains("if-none-match") {
                await gate.wait()
                return response(304, ["etag": "\"v1\"", "cache-control": "max-age=60, stale-while-revalidate=30"], body: "")
            }
            return response(200, ["cache-control": "max-age=60, stale-while-revalidate=30", "etag": "\"v1\""])
        }
        try await rig.fetch()
        rig.clock.set(T0 + 70)
        for _ in 0..<3 {
            let (status, body, exchange) = try await rig.fetch()
            #expect(status == .stale && body == "hello")
            #expect(exchange.response.headers.first("cache-status")?.contains("stale-while-revalidate") == true)
        }
        gate.open()
        await rig.cache.waitForBackgroundWork()
        let conditional = rig.upstream.requests.filter { $0.headers.contains("if-none-match") }
        #expect(conditional.count == 1)
        // The background request adds no Cache-Control of its own.
        #expect(conditional.first?.headers.contains("cache-control") == false)
        #expect(try await rig.fetch().0 == .hit)
    }

    @Test func staleOutsideTheWindowRevalidatesInTheForeground() async throws {
        let rig = CacheRig(validatingOrigin(["cache-control": "max-age=60, stale-while-revalidate=30", "etag": "\"v1\""]))
        try await rig.fetch()
        rig.clock.set(T0 + 100)
        #expect(try await rig.fetch().0 == .revalidated)
        await rig.cache.waitForBackgroundWork()
        #expect(rig.upstream.count == 2)
    }

    @Test(arguments: [true, false])
    func staleIfErrorServesTheStoredResponse(networkError: Bool) async throws {
        let rig = CacheRig { request in
            if request.headers.contains("if-none-match") {
                if networkError { throw BridgeError(.network, "refused") }
                return response(503, [:], body: "down")
            }
            return response(200, ["cache-control": "max-age=60, stale-if-error=600", "etag": "\"v1\""])
        }
        try await rig.fetch()
        rig.clock.set(T0 + 100)
        let (status, body, exchange) = try await rig.fetch()
        #expect(status == .stale && body == "hello" && exchange.response.status == 200)
        #expect(exchange.response.headers.first("cache-status")?.contains("stale-if-error") == true)
        rig.clock.set(T0 + 1000)
        if networkError {
            await #expect(throws: BridgeError.self) { try await rig.fetch() }
        } else {
            #expect(try await rig.fetch().2.response.status == 503)
        }
    }

    @Test func freshImmutableIsServedEvenInNoCacheMode() async throws {
        let rig = CacheRig(validatingOrigin(["cache-control": "max-age=600, immutable", "etag": "\"v1\""]))
        try await rig.fetch()
        rig.clock.set(T0 + 10)
        #expect(try await rig.fetch(mode: .noCache).0 == .hit)
        #expect(try await rig.fetch(mode: .reload).0 == .bypass)
        #expect(rig.upstream.count == 2)
    }

    @Test func identicalRequestsInFlightShareOneOriginRequest() async throws {
        let gate = Gate()
        let rig = CacheRig { _ in
            await gate.wait()
            return response(200, ["cache-control": "max-age=60"], body: "shared")
        }
        let results = try await withThrowingTaskGroup(of: (ReplyCacheStatus, String).self) { group in
            for _ in 0..<5 { group.addTask { let (s, b, _) = try await rig.fetch(); return (s, b) } }
            // The followers wait inside the cache, where nothing counts them; give them time to get there.
            try await waitUntil { rig.upstream.count == 1 }
            try await Task.sleep(for: .milliseconds(300))
            gate.open()
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(rig.upstream.count == 1)
        #expect(results.allSatisfy { $0.1 == "shared" })
        #expect(results.filter { $0.0 == .miss }.count == 1 && results.filter { $0.0 == .hit }.count == 4)
        #expect(rig.cache.statistics.collapsed == 4)
    }

    @Test func identicalRequestsForANonStorableResponseEachGoUpstream() async throws {
        let gate = Gate()
        let rig = CacheRig { _ in
            await gate.wait()
            return response(200, ["cache-control": "no-store"], body: "private")
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<3 { group.addTask { try await rig.fetch() } }
            try await Task.sleep(for: .milliseconds(100))
            gate.open()
            try await group.waitForAll()
        }
        #expect(rig.upstream.count == 3)
    }

    @Test func aTransferThatFailsMidwayIsNotStored() async throws {
        let rig = CacheRig { _ in
            UpstreamResponse(status: 200, statusText: "", headers: ["cache-control": "max-age=60"],
                             body: bodyStream(Array(repeating: 1, count: 100), chunk: 10, failAfter: 50))
        }
        await #expect(throws: BridgeError.self) { try await rig.fetch() }
        try await Task.sleep(for: .milliseconds(50))
        #expect(rig.store.count == 0)
    }

    @Test func aReaderThatStopsEarlyLeavesNoEntry() async throws {
        let rig = CacheRig { _ in response(200, ["cache-control": "max-age=60"], body: "0123456789", chunk: 2) }
        do {
            let exchange = try await rig.cache.send(request(), mode: .default)
            _ = try await exchange.response.body.next()
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(rig.store.count == 0)
        try await rig.fetch()
        #expect(rig.store.count == 1)
    }

    @Test func anEntryOverTheStoreLimitIsServedButNotStored() async throws {
        let rig = CacheRig(store: MemoryCacheStore(maximumEntryBytes: 4)) { _ in
            response(200, ["cache-control": "max-age=60"], body: "too long")
        }
        #expect(try await rig.fetch().1 == "too long")
        #expect(rig.store.count == 0)
    }

    @Test func aSlowWriteDoesNotHoldUpHits() async throws {
        let rig = CacheRig(store: MemoryCacheStore(writeDelay: .seconds(3))) { request in
            response(200, ["cache-control": "max-age=60"], body: request.url)
        }
        let other = url + "?other"
        try await rig.fetch()
        let slow = Task { try await rig.fetch(request(other)) }
        try await Task.sleep(for: .milliseconds(50))
        let start = ContinuousClock.now
        let hit = try await rig.cache.send(request(), mode: .default)
        #expect(try await readBody(hit) == url && hit.status == .hit)
        #expect(ContinuousClock.now - start < .seconds(1))
        _ = try await slow.value
    }

    @Test func aRequestAfterTheReplySeesWhatTheReplyStored() async throws {
        let rig = CacheRig(store: MemoryCacheStore(writeDelay: .milliseconds(300))) { _ in
            response(200, ["cache-control": "max-age=60"], body: "stored")
        }
        // The reply's body is read whole; its commit is still in flight when the next request comes.
        let first = try await rig.cache.send(request(), mode: .reload)
        #expect(try await readBody(first) == "stored")
        let next = try await rig.cache.send(request(), mode: .onlyIfCached)
        #expect(next.status == .hit)
        #expect(try await readBody(next) == "stored")
        #expect(rig.upstream.count == 1)
    }
}
