import Testing
@testable import BridgeCore

/// Each cache mode against an empty cache, a fresh entry and a stale entry, end to end through
/// `HTTPCache` with a memory store and a scripted origin.
struct HTTPCacheModeTests {
    enum State: String, Sendable, CaseIterable { case empty, fresh, stale }

    struct Case: Sendable, CustomTestStringConvertible {
        let mode: CacheMode
        let state: State
        /// The reply status, or nil when the fetch must fail with `not_cached`.
        let status: ReplyCacheStatus?
        /// Requests the origin sees for the fetch under test.
        let originRequests: Int
        /// Whether that request is conditional.
        let conditional: Bool
        var testDescription: String { "\(mode.rawValue) / \(state.rawValue)" }
    }

    static let cases: [Case] = [
        Case(mode: .default, state: .empty, status: .miss, originRequests: 1, conditional: false),
        Case(mode: .default, state: .fresh, status: .hit, originRequests: 0, conditional: false),
        Case(mode: .default, state: .stale, status: .revalidated, originRequests: 1, conditional: true),
        Case(mode: .noStore, state: .empty, status: .bypass, originRequests: 1, conditional: false),
        Case(mode: .noStore, state: .fresh, status: .bypass, originRequests: 1, conditional: false),
        Case(mode: .noStore, state: .stale, status: .bypass, originRequests: 1, conditional: false),
        Case(mode: .reload, state: .empty, status: .bypass, originRequests: 1, conditional: false),
        Case(mode: .reload, state: .fresh, status: .bypass, originRequests: 1, conditional: false),
        Case(mode: .reload, state: .stale, status: .bypass, originRequests: 1, conditional: false),
        Case(mode: .noCache, state: .empty, status: .miss, originRequests: 1, conditional: false),
        Case(mode: .noCache, state: .fresh, status: .revalidated, originRequests: 1, conditional: true),
        Case(mode: .noCache, state: .stale, status: .revalidated, originRequests: 1, conditional: true),
        Case(mode: .forceCache, state: .empty, status: .miss, originRequests: 1, conditional: false),
        Case(mode: .forceCache, state: .fresh, status: .hit, originRequests: 0, conditional: false),
        Case(mode: .forceCache, state: .stale, status: .stale, originRequests: 0, conditional: false),
        Case(mode: .onlyIfCached, state: .empty, status: nil, originRequests: 0, conditional: false),
        Case(mode: .onlyIfCached, state: .fresh, status: .hit, originRequests: 0, conditional: false),
        Case(mode: .onlyIfCached, state: .stale, status: .stale, originRequests: 0, conditional: false),
        Case(mode: .freshOnly, state: .empty, status: nil, originRequests: 0, conditional: false),
        Case(mode: .freshOnly, state: .fresh, status: .hit, originRequests: 0, conditional: false),
        Case(mode: .freshOnly, state: .stale, status: nil, originRequests: 0, conditional: false),
    ]

    @Test(arguments: cases)
    func modeAgainstState(_ test: Case) async throws {
        let rig = CacheRig(validatingOrigin(["cache-control": "max-age=60", "etag": "\"v1\""]))
        if test.state != .empty { try await rig.fetch() }
        rig.clock.set(test.state == .stale ? T0 + 100 : T0 + 10)
        let before = rig.upstream.count
        if let expected = test.status {
            let (status, body, exchange) = try await rig.fetch(mode: test.mode)
            #expect(status == expected)
            #expect(body == "hello")
            #expect(exchange.response.headers.first("cache-status")?.hasPrefix("bridge-broker") == true)
        } else {
            await #expect(throws: BridgeError.self) { try await rig.fetch(mode: test.mode) }
        }
        #expect(rig.upstream.count - before == test.originRequests)
        if test.originRequests > 0 {
            #expect(rig.upstream.requests.last?.headers.contains("if-none-match") == test.conditional)
        }
    }

    @Test func noStoreNeverWritesAndReloadDoes() async throws {
        let rig = CacheRig(validatingOrigin(["cache-control": "max-age=60", "etag": "\"v1\""]))
        try await rig.fetch(mode: .noStore)
        #expect(rig.store.count == 0)
        try await rig.fetch(mode: .reload)
        #expect(rig.store.count == 1)
    }

    @Test func onlyIfCachedFailsWithNotCached() async throws {
        let rig = CacheRig(validatingOrigin(["cache-control": "max-age=60"]))
        do {
            try await rig.fetch(mode: .onlyIfCached)
            Issue.record("expected not_cached")
        } catch let error as BridgeError {
            #expect(error.code == .notCached)
        }
    }
}
