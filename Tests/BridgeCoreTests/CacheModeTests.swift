import Testing
@testable import BridgeCore

/// Each Fetch cache mode against an empty cache, a fresh entry and a stale entry.
struct CacheModeTests {
    enum State: String, Sendable { case empty, fresh, stale }

    struct Case: Sendable, CustomTestStringConvertible {
        let mode: CacheMode
        let state: State
        /// "hit", "stale", "revalidate", "fetch" or "fail".
        let kind: String
        let usesNetwork: Bool
        let conditional: Bool
        let writes: Bool
        let upstream: [[String]]
        var testDescription: String { "\(mode.rawValue) / \(state.rawValue)" }
    }

    static let noCacheHeaders = [["pragma", "no-cache"], ["cache-control", "no-cache"]]
    static let maxAge0 = [["cache-control", "max-age=0"]]
    static let validator = [["if-none-match", "\"v1\""]]

    static let cases: [Case] = [
        Case(mode: .default, state: .empty, kind: "fetch", usesNetwork: true, conditional: false,
             writes: true, upstream: []),
        Case(mode: .default, state: .fresh, kind: "hit", usesNetwork: false, conditional: false,
             writes: false, upstream: []),
        Case(mode: .default, state: .stale, kind: "revalidate", usesNetwork: true, conditional: true,
             writes: true, upstream: validator),
        Case(mode: .noStore, state: .empty, kind: "fetch", usesNetwork: true, conditional: false,
             writes: false, upstream: noCacheHeaders),
        Case(mode: .noStore, state: .fresh, kind: "fetch", usesNetwork: true, conditional: false,
             writes: false, upstream: noCacheHeaders),
        Case(mode: .noStore, state: .stale, kind: "fetch", usesNetwork: true, conditional: false,
             writes: false, upstream: noCacheHeaders),
        Case(mode: .reload, state: .empty, kind: "fetch", usesNetwork: true, conditional: false,
             writes: true, upstream: noCacheHeaders),
        Case(mode: .reload, state: .fresh, kind: "fetch", usesNetwork: true, conditional: false,
             writes: true, upstream: noCacheHeaders),
        Case(mode: .reload, state: .stale, kind: "fetch", usesNetwork: true, conditional: false,
             writes: true, upstream: noCacheHeaders),
        Case(mode: .noCache, state: .empty, kind: "fetch", usesNetwork: true, conditional: false,
             writes: true, upstream: maxAge0),
        Case(mode: .noCache, state: .fresh, kind: "revalidate", usesNetwork: true, conditional: true,
             writes: true, upstream: maxAge0 + validator),
        Case(mode: .noCache, state: .stale, kind: "revalidate", usesNetwork: true, conditional: true,
             writes: true, upstream: maxAge0 + validator),
        Case(mode: .forceCache, state: .empty, kind: "fetch", usesNetwork: true, conditional: false,
             writes: true, upstream: []),
        Case(mode: .forceCache, state: .fresh, kind: "hit", usesNetwork: false, conditional: false,
             writes: false, upstream: []),
        Case(mode: .forceCache, state: .stale, kind: "stale", usesNetwork: false, conditional: false,
             writes: false, upstream: []),
        Case(mode: .onlyIfCached, state: .empty, kind: "fail", usesNetwork: false, conditional: false,
             writes: false, upstream: []),
        Case(mode: .onlyIfCached, state: .fresh, kind: "hit", usesNetwork: false, conditional: false,
             writes: false, upstream: []),
        Case(mode: .onlyIfCached, state: .stale, kind: "stale", usesNetwork: false,
             conditional: false, writes: false, upstream: []),
        Case(mode: .freshOnly, state: .empty, kind: "fail", usesNetwork: false, conditional: false,
             writes: false, upstream: []),
        Case(mode: .freshOnly, state: .fresh, kind: "hit", usesNetwork: false, conditional: false,
             writes: false, upstream: []),
        Case(mode: .freshOnly, state: .stale, kind: "fail", usesNetwork: false, conditional: false,
             writes: false, upstream: []),
    ]

    /// Stored at T0 with max-age=600 and an ETag; "fresh" is judged at T0+10, "stale" at T0+900.
    static func scenario(_ state: State) -> (candidates: [CachedResponse], now: Double) {
        let entry = stored(["cache-control": "max-age=600", "etag": "\"v1\""])
        switch state {
        case .empty: return ([], T0 + 10)
        case .fresh: return ([entry], T0 + 10)
        case .stale: return ([entry], T0 + 900)
        }
    }

    @Test(arguments: cases)
    func modeMatrix(testCase: Case) {
        let (candidates, now) = Self.scenario(testCase.state)
        let plan = planFor(candidates, now: now, mode: testCase.mode)
        #expect(plan.kind == testCase.kind)
        #expect(plan.usesNetwork == testCase.usesNetwork)
        #expect(plan.sendsConditionalRequest == testCase.conditional)
        #expect(plan.mayWriteCache == testCase.writes)
        #expect(plan.upstreamHeaders.pairs == testCase.upstream)
        if case .fail(let failure) = plan { #expect(failure == .notCached) }
    }

    @Test func allSevenModesAndThreeStatesAreCovered() {
        #expect(Set(Self.cases.map(\.testDescription)).count == 21)
        #expect(Set(Self.cases.map(\.mode)) == Set(CacheMode.allCases))
    }

    @Test func freshOnlyDoesNotServeWithinStaleWhileRevalidate() {
        let entry = stored(["cache-control": "max-age=600, stale-while-revalidate=600", "etag": "\"v1\""])
        let byDefault = planFor([entry], now: T0 + 900, mode: .default)
        if case .fail = byDefault { Issue.record("default serves within stale-while-revalidate") }
        let freshOnly = planFor([entry], now: T0 + 900, mode: .freshOnly)
        guard case .fail(let failure) = freshOnly else {
            Issue.record("fresh-only served a stale response: \(freshOnly.kind)")
            return
        }
        #expect(failure == .notCached)
    }

    @Test func modesDoNotOverrideHeadersTheClientSet() {
        let (candidates, now) = Self.scenario(.fresh)
        let reload = planFor(
            candidates, now: now, mode: .reload, headers: ["cache-control": "max-age=5"])
        #expect(reload.upstreamHeaders.pairs == [["pragma", "no-cache"]])
        let noCache = planFor(candidates, now: now, mode: .noCache, headers: ["cache-control": "x"])
        #expect(noCache.upstreamHeaders.pairs == Self.validator)
    }

    @Test func defaultModeWithPreconditionsBehavesAsNoStore() {
        let (candidates, now) = Self.scenario(.fresh)
        let plan = planFor(candidates, now: now, headers: ["If-None-Match": "\"v0\""])
        guard case .fetch(let fetch) = plan else {
            Issue.record("expected fetch, got \(plan.kind)")
            return
        }
        #expect(!fetch.mayStore && fetch.forward == .bypass && fetch.reply == .bypass)
        #expect(plan.upstreamHeaders.pairs == Self.noCacheHeaders)
    }

    @Test func onlyIfCachedAndForceCacheUseStaleMustRevalidateEntries() {
        let entry = stored(["cache-control": "max-age=60, must-revalidate, no-cache"])
        for mode in [CacheMode.forceCache, .onlyIfCached] {
            let plan = planFor([entry], now: T0 + 1000, mode: mode)
            #expect(plan.reply?.status == .stale)
            #expect(plan.reply?.cacheStatus.detail == mode.rawValue)
        }
        #expect(planFor([entry], now: T0 + 1000).usesNetwork)
    }
}
