import Testing
@testable import BridgeCore

/// Response and request directive behaviour through the planner.
struct DirectiveTests {
    @Test func mustRevalidateServesFreshButNeverStale() {
        let entry = stored([
            "cache-control": "max-age=60, must-revalidate, stale-while-revalidate=1000, stale-if-error=1000",
            "etag": "\"v1\"",
        ])
        #expect(planFor([entry], now: T0 + 30).kind == "hit")
        #expect(planFor([entry], now: T0 + 100).kind == "revalidate")
        #expect(planFor([entry], now: T0 + 100, headers: ["cache-control": "max-stale"]).kind == "revalidate")
        let plan = planFor([entry], now: T0 + 100)
        let failure = planner.decide(
            plan: plan, request: get(), outcome: .failure, requestTime: T0 + 100, responseTime: T0 + 101)
        #expect(failure.source == .networkError)
        let error = planner.decide(
            plan: plan, request: get(), outcome: .response(status: 503, headers: HeaderList()),
            requestTime: T0 + 100, responseTime: T0 + 101)
        #expect(error.source == .network)
        // Control: without must-revalidate the same windows serve stale.
        let relaxed = stored([
            "cache-control": "max-age=60, stale-while-revalidate=1000", "etag": "\"v1\"",
        ])
        #expect(planFor([relaxed], now: T0 + 100).kind == "stale")
    }

    @Test func noCacheResponseRevalidatesEveryTimeAndA304ServesTheStoredBody() {
        var entry = stored([
            "cache-control": "no-cache, max-age=3600", "etag": "\"v1\"", "content-length": "5",
        ])
        for step in 1...3 {
            let now = T0 + Double(step) * 10
            let plan = planFor([entry], now: now)
            #expect(plan.kind == "revalidate")
            #expect(plan.upstreamHeaders.first("if-none-match") == "\"v1\"")
            let decision = planner.decide(
                plan: plan, request: get(),
                outcome: .response(status: 304, headers: ["etag": "\"v1\"", "date": httpDate(now)]),
                requestTime: now, responseTime: now)
            guard case .stored(let served) = decision.source else {
                Issue.record("a 304 must serve the stored response")
                return
            }
            #expect(served.id == "e1" && served.responseTime == now)
            #expect(decision.status == .revalidated)
            guard case .update(let updated) = decision.write else {
                Issue.record("a 304 must update the entry")
                return
            }
            #expect(updated.id == "e1" && updated.headers.first("content-length") == "5")
            entry = updated
        }
        // Qualified no-cache only withholds its fields (CacheRulesTests).
        let qualified = stored(["cache-control": "no-cache=\"set-cookie\", max-age=3600", "etag": "\"q\""])
        #expect(planFor([qualified], now: T0 + 1).kind == "hit")
    }

    @Test func staleWhileRevalidateInsideAndOutsideItsWindow() {
        let entry = stored([
            "cache-control": "max-age=60, stale-while-revalidate=120", "etag": "\"v1\"",
        ])
        let inside = planFor([entry], now: T0 + 100)
        #expect(inside.reply?.status == .stale && inside.reply?.backgroundRevalidation == true)
        #expect(inside.reply?.cacheStatus.headerValue
            == "bridge-broker; hit; ttl=-40; detail=\"stale-while-revalidate\"")
        #expect(planFor([entry], now: T0 + 181).kind == "revalidate")  // 121 s stale
        #expect(planFor([entry], now: T0 + 100, mode: .noCache).kind == "revalidate")  // default only
        // The background request: no-cache mode without the max-age=0 header.
        let background = planner.plan(
            request: get(), mode: .noCache, storedCandidates: [entry], now: T0 + 100,
            isBackgroundRevalidation: true)
        #expect(background.upstreamHeaders.pairs == [["if-none-match", "\"v1\""]])
        #expect(planFor([entry], now: T0 + 30).reply?.backgroundRevalidation == false)
    }

    static let errorEntry = stored([
        "cache-control": "max-age=60, stale-if-error=300", "etag": "\"v1\"",
    ])

    @Test(arguments: [500, 502, 503, 504])
    func staleIfErrorServesStaleOn5xx(status: Int) {
        let plan = planFor([Self.errorEntry], now: T0 + 100)
        let decision = planner.decide(
            plan: plan, request: get(), outcome: .response(status: status, headers: HeaderList()),
            requestTime: T0 + 100, responseTime: T0 + 100)
        #expect(decision.source == .stored(Self.errorEntry) && decision.status == .stale)
        #expect(decision.write == .none)
        #expect(decision.cacheStatus.headerValue
            == "bridge-broker; fwd=stale; fwd-status=\(status); ttl=-40; detail=\"stale-if-error\"")
        #expect(decision.headers.first("age") == "100")
    }

    @Test func staleIfErrorOnNetworkErrorAndLimits() {
        let plan = planFor([Self.errorEntry], now: T0 + 100)
        let reset = planner.decide(
            plan: plan, request: get(), outcome: .failure, requestTime: T0 + 100, responseTime: T0 + 100)
        #expect(reset.source == .stored(Self.errorEntry) && reset.status == .stale)
        // Outside the window (361 s stale): the error goes through.
        let late = planFor([Self.errorEntry], now: T0 + 421)
        let lateReset = planner.decide(
            plan: late, request: get(), outcome: .failure, requestTime: T0 + 421, responseTime: T0 + 421)
        #expect(lateReset.source == .networkError)
        // Other errors are not covered.
        let notFound = planner.decide(
            plan: plan, request: get(), outcome: .response(status: 404, headers: HeaderList()),
            requestTime: T0 + 100, responseTime: T0 + 100)
        #expect(notFound.source == .network)
        // The request's own stale-if-error also allows it.
        let plain = stored(["cache-control": "max-age=60", "etag": "\"v1\""])
        let request = get(["cache-control": "stale-if-error=600"])
        let plainPlan = planner.plan(request: request, mode: .default, storedCandidates: [plain], now: T0 + 100)
        #expect(planner.decide(
            plan: plainPlan, request: request, outcome: .response(status: 502, headers: HeaderList()),
            requestTime: T0 + 100, responseTime: T0 + 100).status == .stale)
        #expect(planner.decide(
            plan: plainPlan, request: get(), outcome: .failure,
            requestTime: T0 + 100, responseTime: T0 + 100).status == .miss)
    }

    @Test func immutableSendsNoConditionalRequestWhileFresh() {
        let entry = stored(["cache-control": "max-age=3600, immutable", "etag": "\"v1\""])
        #expect(planFor([entry], now: T0 + 10, headers: ["cache-control": "max-age=0"]).kind == "hit")
        let noCacheMode = planFor([entry], now: T0 + 10, mode: .noCache)
        #expect(noCacheMode.kind == "hit" && !noCacheMode.sendsConditionalRequest)
        #expect(planFor([entry], now: T0 + 10, mode: .reload).kind == "fetch")
        #expect(planFor([entry], now: T0 + 10, headers: ["cache-control": "no-cache"]).kind == "revalidate")
        #expect(planFor([entry], now: T0 + 4000).kind == "revalidate")  // stale: normal rules
        // Control: the same response without immutable is revalidated.
        let mutable = stored(["cache-control": "max-age=3600", "etag": "\"v1\""])
        #expect(planFor([mutable], now: T0 + 10, mode: .noCache).kind == "revalidate")
        #expect(planFor([mutable], now: T0 + 10, headers: ["cache-control": "max-age=0"]).kind
            == "revalidate")
    }

    struct RequestCase: Sendable, CustomTestStringConvertible {
        let headers: HeaderList
        let now: Double
        let kind: String
        var testDescription: String { "\(headers.pairs) at +\(Int(now - T0))" }
    }

    /// Entry: max-age=3600 (fresh at +100) or judged at +3640 (40 s stale).
    @Test(arguments: [
        RequestCase(headers: ["cache-control": "max-age=50"], now: T0 + 100, kind: "revalidate"),
        RequestCase(headers: ["cache-control": "max-age=200"], now: T0 + 100, kind: "hit"),
        RequestCase(headers: ["cache-control": "max-age=0"], now: T0 + 100, kind: "revalidate"),
        RequestCase(headers: ["cache-control": "max-age=bad"], now: T0 + 100, kind: "revalidate"),
        RequestCase(headers: ["cache-control": "max-stale"], now: T0 + 3640, kind: "stale"),
        RequestCase(headers: ["cache-control": "max-stale=60"], now: T0 + 3640, kind: "stale"),
        RequestCase(headers: ["cache-control": "max-stale=30"], now: T0 + 3640, kind: "revalidate"),
        RequestCase(headers: ["cache-control": "max-stale=abc"], now: T0 + 3640, kind: "revalidate"),
        RequestCase(headers: ["cache-control": "max-age=10, max-stale"], now: T0 + 3640, kind: "revalidate"),
        RequestCase(headers: ["cache-control": "min-fresh=4000"], now: T0 + 100, kind: "revalidate"),
        RequestCase(headers: ["cache-control": "min-fresh=100"], now: T0 + 100, kind: "hit"),
        RequestCase(headers: ["cache-control": "no-cache"], now: T0 + 100, kind: "revalidate"),
        RequestCase(headers: ["pragma": "no-cache"], now: T0 + 100, kind: "revalidate"),
        RequestCase(headers: ["pragma": "no-cache", "cache-control": "max-age=9999"], now: T0 + 100,
                    kind: "hit"),
        RequestCase(headers: ["cache-control": "no-store"], now: T0 + 100, kind: "hit"),
        RequestCase(headers: ["cache-control": "only-if-cached"], now: T0 + 100, kind: "hit"),
        RequestCase(headers: ["cache-control": "only-if-cached"], now: T0 + 3640, kind: "fail"),
        RequestCase(headers: ["cache-control": "only-if-cached, max-stale"], now: T0 + 3640,
                    kind: "stale"),
        RequestCase(headers: HeaderList(), now: T0 + 3640, kind: "revalidate"),
    ])
    func requestDirectives(testCase: RequestCase) {
        let entry = stored(["cache-control": "max-age=3600", "etag": "\"v1\""])
        #expect(planFor([entry], now: testCase.now, headers: testCase.headers).kind == testCase.kind)
    }

    @Test func requestNoStoreNeverWritesAndOnlyIfCachedNeverFetches() {
        let noStore = planFor([], now: T0, headers: ["cache-control": "no-store"])
        #expect(noStore.usesNetwork && !noStore.mayWriteCache)
        let onlyCached = planFor([], now: T0, headers: ["cache-control": "only-if-cached"])
        #expect(onlyCached == .fail(.notCached))
    }

    @Test func forwardReasonDistinguishesRequestFromStale() {
        let entry = stored(["cache-control": "max-age=3600", "etag": "\"v1\""])
        guard case .revalidate(let forced) = planFor([entry], now: T0 + 1, mode: .noCache),
              case .revalidate(let expired) = planFor([entry], now: T0 + 4000)
        else {
            Issue.record("expected two revalidations")
            return
        }
        #expect(forced.forward == .request && expired.forward == .stale)
    }
}
