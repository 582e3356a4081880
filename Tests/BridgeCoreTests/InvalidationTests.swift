import Testing
@testable import BridgeCore

struct InvalidationTests {
    let headers: HeaderList = [
        "location": "/b#frag", "content-location": "https://EXAMPLE.com:443/c",
    ]

    @Test(arguments: [
        ("POST", 200, true), ("POST", 201, true), ("POST", 303, true), ("PUT", 204, true),
        ("DELETE", 200, true), ("PATCH", 200, true), ("PURGE", 200, true), ("post", 200, true),
        ("POST", 500, false), ("POST", 404, false), ("POST", 100, false), ("GET", 200, false),
        ("HEAD", 200, false), ("OPTIONS", 200, false),
    ])
    func invalidatesOnlyAfterSuccessfulUnsafeMethods(method: String, status: Int, invalidates: Bool) {
        let request = CacheRequest(method: method, url: url + "#top", headers: HeaderList())
        let urls = Invalidation.urlsToInvalidate(request: request, status: status, responseHeaders: headers)
        #expect(urls == (invalidates ? [url, "https://example.com/b", "https://EXAMPLE.com:443/c"] : []))
    }

    @Test func crossOriginLocationsAreNotInvalidated() {
        let request = CacheRequest(method: "POST", url: url)
        for location in ["http://example.com/x", "https://other.com/x", "https://example.com:8443/x"] {
            let urls = Invalidation.urlsToInvalidate(
                request: request, status: 201, responseHeaders: ["location": location])
            #expect(urls == [url])
        }
        #expect(Invalidation.sameOrigin("https://a.com/x", "https://A.com:443/y"))
        #expect(!Invalidation.sameOrigin("https://a.com/x", "http://a.com/x"))
    }

    @Test func postThroughThePlannerInvalidatesOn2xxButNotOn500() {
        let request = CacheRequest(method: "POST", url: url)
        let plan = planner.plan(
            request: request, mode: .default,
            storedCandidates: [stored(["cache-control": "max-age=60"])], now: T0)
        guard case .fetch(let fetch) = plan else {
            Issue.record("POST must go to the network")
            return
        }
        #expect(fetch.forward == .method && !fetch.mayStore)
        let ok = planner.decide(
            plan: plan, request: request, outcome: .response(status: 200, headers: ["cache-control": "max-age=60"]),
            requestTime: T0, responseTime: T0)
        #expect(ok.invalidate == [url] && ok.write == .none && ok.status == .bypass)
        #expect(ok.cacheStatus.headerValue == "bridge-broker; fwd=method; fwd-status=200")
        let failed = planner.decide(
            plan: plan, request: request, outcome: .response(status: 500, headers: HeaderList()),
            requestTime: T0, responseTime: T0)
        #expect(failed.invalidate.isEmpty)
    }
}
