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
        let memory = MemoryCacheStore()
        let watched = WatchedStore(memory)
        let rig = CacheRig(store: memory, storeOverride: watched) { _ in
            await gate.wait()
            return response(200, ["cache-control": "max-age=60"], body: "shared")
        }
        let results = try await withThrowingTaskGroup(of: (ReplyCacheStatus, String).self) { group in
            for _ in 0..<5 { group.addTask { let (s, b, _) = try await rig.fetch(); return (s, b) } }
            // The followers wait inside the cache, where nothing counts them: wait until all five
            // looked in the store (a fixed sleep from here was outlasted by a loaded machine's
            // tasks that had not started yet), then a little for the few steps from there.
            try await waitUntil { rig.upstream.count == 1 && watched.lookups == 5 }
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
        let memory = MemoryCacheStore()
        let watched = WatchedStore(memory)
        let rig = CacheRig(store: memory, storeOverride: watched) { _ in
            await gate.wait()
            return response(200, ["cache-control": "no-store"], body: "private")
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<3 { group.addTask { try await rig.fetch() } }
            // All three in flight together (they looked in the store), not merely 100 ms later.
            try await waitUntil { rig.upstream.count == 1 && watched.lookups == 3 }
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

    /// A write that does not end until the test lets it: the hit is served while it is in
    /// flight. (It was a 3 s write and a hit in under 1 s, after a 50 ms sleep for the write to
    /// begin: a loaded machine can outlast both.)
    @Test func aSlowWriteDoesNotHoldUpHits() async throws {
        let memory = MemoryCacheStore()
        let watched = WatchedStore(memory)
        let rig = CacheRig(store: memory, storeOverride: watched) { request in
            response(200, ["cache-control": "max-age=60"], body: request.url)
        }
        let other = url + "?other"
        try await rig.fetch()
        watched.holdCommits()
        let slow = Task { try await rig.fetch(request(other)) }
        try await waitUntil { watched.commitsWaiting == 1 }
        let hit = try await rig.cache.send(request(), mode: .default)
        #expect(try await readBody(hit) == url && hit.status == .hit)
        #expect(watched.commitsWaiting == 1, "the hit came while the write was still in flight")
        watched.releaseCommits()
        _ = try await slow.value
        #expect(memory.count == 2)
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

/// A store that counts lookups (`entries(for:)`) and can hold commits until released, so that
/// tests wait for the state they need instead of sleeping a fixed time for it.
final class WatchedStore: CacheStore {
    let base: MemoryCacheStore
    private let state = Mutex<(lookups: Int, hold: Bool, waiting: Int)>((0, false, 0))
    private let release = Gate()
    init(_ base: MemoryCacheStore) { self.base = base }

    var lookups: Int { state.withLock { $0.lookups } }
    /// Commits that began and wait for `releaseCommits()`.
    var commitsWaiting: Int { state.withLock { $0.waiting } }
    /// Commits that begin from now on wait for `releaseCommits()`.
    func holdCommits() { state.withLock { $0.hold = true } }
    func releaseCommits() {
        state.withLock { $0.hold = false }
        release.open()
    }

    func entries(for key: String) async -> [CachedResponse] {
        state.withLock { $0.lookups += 1 }
        return await base.entries(for: key)
    }
    func body(of entry: CachedResponse) async -> CacheBody? { await base.body(of: entry) }
    func makeWriter(for entry: CachedResponse, expectedLength: Int?) async -> (any CacheEntryWriter)? {
        guard let writer = await base.makeWriter(for: entry, expectedLength: expectedLength) else { return nil }
        return Writer(base: writer, store: self)
    }
    func update(_ entry: CachedResponse) async { await base.update(entry) }
    func remove(_ entry: CachedResponse) async { await base.remove(entry) }
    func removeAll(for key: String) async { await base.removeAll(for: key) }
    func clear(_ scope: CacheClearScope) async -> Int { await base.clear(scope) }
    func stats() async -> CacheStoreStats { await base.stats() }

    fileprivate func beforeCommit() async {
        let held = state.withLock { state -> Bool in
            if state.hold { state.waiting += 1 }
            return state.hold
        }
        guard held else { return }
        await release.wait()
        state.withLock { $0.waiting -= 1 }
    }

    struct Writer: CacheEntryWriter {
        let base: any CacheEntryWriter
        let store: WatchedStore
        func write(_ chunk: [UInt8]) async -> Bool { await base.write(chunk) }
        func write(frame: FrameBuffer) async -> Bool { await base.write(frame: frame) }
        func commit() async -> Bool {
            await store.beforeCommit()
            return await base.commit()
        }
        func discard() async { await base.discard() }
    }
}
