import Testing
@testable import BridgeCore

struct FreshnessTests {
    func freshness(_ entry: CachedResponse, at now: Double) -> Freshness {
        entry.freshness(at: now)
    }

    @Test func maxAgeWinsOverExpires() {
        let entry = stored(["cache-control": "max-age=100", "expires": httpDate(T0 + 5000)])
        let f = freshness(entry, at: T0 + 10)
        #expect(f.lifetime == 100 && f.source == .maxAge && f.currentAge == 10 && f.isFresh)
        #expect(f.timeToLive == 90 && f.staleness == 0)
        #expect(!freshness(entry, at: T0 + 100).isFresh)  // fresh only while lifetime > age
        #expect(freshness(entry, at: T0 + 130).staleness == 30)
    }

    @Test func ageLargerThanMaxAgeIsStaleOnArrival() {
        let entry = stored(["cache-control": "max-age=60", "age": "120"])
        let f = freshness(entry, at: T0)
        #expect(f.currentAge == 120 && !f.isFresh)
    }

    @Test func pastDateCountsTowardAge() {
        let entry = stored(["cache-control": "max-age=3600", "date": httpDate(T0 - 7200)])
        let f = freshness(entry, at: T0)
        #expect(f.currentAge == 7200 && !f.isFresh)
    }

    @Test func ageFollowsRFC9111Section423() {
        // Date 100 s before receipt, Age 30, 2 s request/response delay, resident 50 s.
        let entry = stored(["date": httpDate(T0 - 100), "age": "30"], delay: 2)
        #expect(freshness(entry, at: T0 + 50).currentAge == 150)  // max(100, 30+2) + 50
        // When Age + delay exceeds the apparent age, it wins.
        let aged = stored(["date": httpDate(T0 - 10), "age": "30"], delay: 2)
        #expect(freshness(aged, at: T0 + 50).currentAge == 82)  // max(10, 32) + 50
        // A Date in the future (clock skew) gives no negative apparent age.
        let future = stored(["date": httpDate(T0 + 500)])
        #expect(freshness(future, at: T0).currentAge == 0)
        #expect(Freshness(response: future, now: T0 - 10, options: .init()).ageHeaderValue == 0)
    }

    @Test(arguments: [
        ("-10", 0.0), ("abc", 0), ("1.5", 0), ("", 0), ("30, 60", 30), (" 45 ", 45),
        ("99999999999", 2_147_483_648),
    ])
    func ageHeaderParsing(value: String, expected: Double) {
        #expect(Freshness.ageValue(headers: ["age": value]) == expected)
    }

    @Test func expiresMinusDate() {
        let entry = stored(["date": httpDate(T0 - 100), "expires": httpDate(T0 + 500)])
        let f = freshness(entry, at: T0)
        #expect(f.lifetime == 600 && f.source == .expires && f.currentAge == 100)
    }

    @Test func invalidOrConflictingExpiresIsAlreadyStale() {
        for expires in ["0", "-1", "garbage", httpDate(T0 - 60)] {
            let f = freshness(stored(["expires": expires]), at: T0)
            #expect(f.lifetime == 0 && f.source == .expires && !f.isFresh)
        }
        var two = HeaderList([("expires", httpDate(T0 + 100)), ("expires", httpDate(T0 + 900))])
        two.add("date", httpDate(T0))
        #expect(freshness(stored(two), at: T0).lifetime == 0)
    }

    @Test func expiresWithoutDateUsesResponseTime() {
        let entry = stored(["expires": httpDate(T0 + 300)], addDate: false)
        #expect(freshness(entry, at: T0 + 10).lifetime == 300)
        let badDate = stored(["expires": httpDate(T0 + 300), "date": "nonsense"])
        #expect(freshness(badDate, at: T0).lifetime == 300)
    }

    @Test(arguments: [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501])
    func heuristicFreshnessForCacheableStatuses(status: Int) {
        let entry = stored(["last-modified": httpDate(T0 - 100_000)], status: status)
        let f = freshness(entry, at: T0 + 10)
        #expect(f.source == .heuristic && f.lifetime == 10_000 && f.isFresh)
    }

    @Test(arguments: [500, 502, 503, 504, 302, 307, 400, 403])
    func noHeuristicFreshnessForOtherStatuses(status: Int) {
        let entry = stored(["last-modified": httpDate(T0 - 100_000)], status: status)
        let f = freshness(entry, at: T0)
        #expect(f.source == .none && f.lifetime == 0 && !f.isFresh)
        #expect(!Storability.evaluate(request: get(), status: status, headers: entry.headers).isStorable)
    }

    @Test func publicAllowsHeuristicForAnyStatus() {
        let entry = stored(
            ["last-modified": httpDate(T0 - 100_000), "cache-control": "public"], status: 503)
        #expect(freshness(entry, at: T0).lifetime == 10_000)
    }

    @Test func heuristicIsCappedAndNeedsAValidPastLastModified() {
        let old = stored(["last-modified": httpDate(T0 - 100 * 86_400)])
        #expect(freshness(old, at: T0).lifetime == 604_800)
        let uncapped = CachePolicyOptions(heuristicCap: .infinity)
        #expect(old.freshness(at: T0, options: uncapped).lifetime == 864_000)
        #expect(freshness(stored(["last-modified": httpDate(T0 + 50)]), at: T0).lifetime == 0)
        #expect(freshness(stored(["last-modified": "yesterday"]), at: T0).lifetime == 0)
        #expect(freshness(stored([:]), at: T0).source == .none)
    }

    @Test func invalidOrConflictingMaxAgeIsStaleEvenWithExpires() {
        let entry = stored(["cache-control": "max-age=oops", "expires": httpDate(T0 + 900)])
        #expect(freshness(entry, at: T0).lifetime == 0 && !freshness(entry, at: T0).isFresh)
        let conflict = stored(["cache-control": "max-age=900", "Cache-Control": "max-age=5"])
        #expect(!freshness(conflict, at: T0 + 1).isFresh)
    }

    @Test func sMaxAgeIsIgnoredByAPrivateCache() {
        let entry = stored(["cache-control": "s-maxage=3600, max-age=10"])
        #expect(freshness(entry, at: T0 + 20).isFresh == false)
        let only = stored(["cache-control": "s-maxage=3600"])
        #expect(freshness(only, at: T0 + 1).lifetime == 0)
    }
}
