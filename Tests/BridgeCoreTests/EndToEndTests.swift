import Testing
@testable import BridgeCore

/// Full plan → network → decide cycles with a test clock.
struct EndToEndTests {
    let origin: HeaderList = [
        "cache-control": "max-age=60", "etag": "\"v1\"", "content-type": "text/html",
        "set-cookie": "session=1", "date": httpDate(T0),
    ]

    func storedEntry(_ decision: ResponseDecision) -> CachedResponse? {
        if case .store(let entry) = decision.write { return entry }
        return nil
    }

    @Test func missStoresThenHitsWithAgeAndWithoutServingCookies() throws {
        let miss = planFor([], now: T0)
        let decision = planner.decide(
            plan: miss, request: get(), outcome: .response(status: 200, headers: origin),
            requestTime: T0, responseTime: T0)
        #expect(decision.status == .miss && decision.source == .network)
        #expect(decision.headers.first("set-cookie") == "session=1")  // live response keeps it
        #expect(decision.headers.first("cache-status")
            == "bridge-broker; fwd=uri-miss; fwd-status=200; ttl=60; stored")
        let entry = try #require(storedEntry(decision))
        #expect(entry.headers.first("set-cookie") == "session=1")  // stored intact, never served
        let hit = try #require(planFor([entry], now: T0 + 10.7).reply)
        #expect(hit.status == .hit && hit.age == 10)
        #expect(hit.headers.first("age") == "10" && !hit.headers.contains("set-cookie"))
        #expect(hit.headers.first("cache-status") == "bridge-broker; hit; ttl=49")
    }

    @Test func revalidationWith304KeepsStoredContentType() throws {
        let entry = stored(["cache-control": "max-age=60", "etag": "\"v1\"", "content-type": "text/html"])
        let plan = planFor([entry], now: T0 + 100)
        #expect(plan.upstreamHeaders.pairs == [["if-none-match", "\"v1\""]])
        let decision = planner.decide(
            plan: plan, request: get(),
            outcome: .response(status: 304, headers: [
                "content-type": "text/plain", "etag": "\"v1\"", "cache-control": "max-age=300",
                "date": httpDate(T0 + 100), "set-cookie": "fresh=1",
            ]),
            requestTime: T0 + 100, responseTime: T0 + 100)
        #expect(decision.status == .revalidated)
        #expect(decision.headers.first("content-type") == "text/html")
        #expect(decision.headers.first("set-cookie") == "fresh=1")  // from the live 304 only
        #expect(decision.headers.first("cache-status") == "bridge-broker; fwd=stale; fwd-status=304; ttl=300")
        guard case .update(let updated) = decision.write else {
            Issue.record("expected an update")
            return
        }
        #expect(updated.headers.first("content-type") == "text/html" && updated.headers.values("set-cookie") == ["fresh=1"])
        #expect(planFor([updated], now: T0 + 350).kind == "hit")
        #expect(planFor([updated], now: T0 + 401).kind == "revalidate")
    }

    @Test func mismatched304AsksForAnUnconditionalRetry() {
        let entry = stored(["cache-control": "max-age=60", "etag": "\"v1\""])
        let plan = planFor([entry], now: T0 + 100)
        let decision = planner.decide(
            plan: plan, request: get(), outcome: .response(status: 304, headers: ["etag": "\"v2\""]),
            requestTime: T0 + 100, responseTime: T0 + 100)
        #expect(decision.source == .retryUnconditionally && decision.write == .none)
    }

    @Test func a200ReplacesAndANonStorableResponseRemovesTheOldEntry() throws {
        let entry = stored(["cache-control": "max-age=60", "etag": "\"v1\""])
        let plan = planFor([entry], now: T0 + 100)
        let fresh = planner.decide(
            plan: plan, request: get(),
            outcome: .response(status: 200, headers: ["cache-control": "max-age=30", "etag": "\"v2\""]),
            requestTime: T0 + 100, responseTime: T0 + 101)
        let replacement = try #require(storedEntry(fresh))
        #expect(replacement.replaces(entry) && replacement.responseTime == T0 + 101)
        #expect(fresh.cacheStatus.headerValue == "bridge-broker; fwd=stale; fwd-status=200; ttl=29; stored")  // 1 s delay
        let gone = planner.decide(
            plan: plan, request: get(), outcome: .response(status: 200, headers: ["cache-control": "no-store"]),
            requestTime: T0 + 100, responseTime: T0 + 101)
        #expect(gone.write == .remove(entry))
        let serverError = planner.decide(
            plan: plan, request: get(), outcome: .response(status: 500, headers: HeaderList()),
            requestTime: T0 + 100, responseTime: T0 + 101)
        #expect(serverError.write == .none)
    }

    @Test func reloadStoresNoStoreModeDoesNot() throws {
        let entry = stored(["cache-control": "max-age=600"])
        let response = NetworkOutcome.response(status: 200, headers: ["cache-control": "max-age=600"])
        let reload = planFor([entry], now: T0 + 1, mode: .reload)
        let reloaded = planner.decide(
            plan: reload, request: get(), outcome: response, requestTime: T0 + 1, responseTime: T0 + 1)
        #expect(storedEntry(reloaded) != nil && reloaded.status == .bypass)
        #expect(reloaded.cacheStatus.forward == .request)
        let noStore = planFor([entry], now: T0 + 1, mode: .noStore)
        let bypassed = planner.decide(
            plan: noStore, request: get(), outcome: response, requestTime: T0 + 1, responseTime: T0 + 1)
        #expect(bypassed.write == .none && bypassed.status == .bypass)
        #expect(bypassed.cacheStatus.headerValue == "bridge-broker; fwd=bypass; fwd-status=200")
    }

    @Test func staleEntryWithoutValidatorsIsRefetchedAndKeptForStaleIfError() {
        let entry = stored(["cache-control": "max-age=60, stale-if-error=600"])
        let plan = planFor([entry], now: T0 + 100)
        guard case .fetch(let fetch) = plan else {
            Issue.record("expected an unconditional fetch")
            return
        }
        #expect(fetch.fallback == entry && fetch.forward == .stale && fetch.mayStore)
        let decision = planner.decide(
            plan: plan, request: get(), outcome: .failure, requestTime: T0 + 100, responseTime: T0 + 100)
        #expect(decision.source == .stored(entry))
    }

    @Test func varyStarResponsesAreNotStored() {
        let decision = planner.decide(
            plan: planFor([], now: T0), request: get(),
            outcome: .response(status: 200, headers: ["cache-control": "max-age=60", "vary": "*"]),
            requestTime: T0, responseTime: T0)
        #expect(decision.write == .none && !decision.cacheStatus.stored)
    }

    @Test func a206IsNeverStoredAsAFullResponse() {
        let decision = planner.decide(
            plan: planFor([], now: T0), request: get(["range": "bytes=0-9"]),
            outcome: .response(status: 206, headers: ["cache-control": "max-age=60"]),
            requestTime: T0, responseTime: T0)
        #expect(decision.write == .none)
    }
}
