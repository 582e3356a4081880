import Testing
@testable import BridgeCore

struct StorabilityTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        var method = "GET"
        var requestHeaders: HeaderList = HeaderList()
        var status = 200
        let headers: HeaderList
        let expected: Storability.Decision
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "GET 200 max-age", headers: ["cache-control": "max-age=60"], expected: .store),
        Case(name: "HEAD never stored", method: "HEAD", headers: ["cache-control": "max-age=60"],
             expected: .doNotStore(.method)),
        Case(name: "POST never stored", method: "POST", headers: ["cache-control": "max-age=60"],
             expected: .doNotStore(.method)),
        Case(name: "1xx", status: 103, headers: ["cache-control": "max-age=60"],
             expected: .doNotStore(.statusNotFinal)),
        Case(name: "206", status: 206, headers: ["cache-control": "max-age=60"],
             expected: .doNotStore(.partialContent)),
        Case(name: "304", status: 304, headers: ["cache-control": "max-age=60"],
             expected: .doNotStore(.notModified)),
        Case(name: "response no-store", headers: ["cache-control": "max-age=60, No-Store"],
             expected: .doNotStore(.responseNoStore)),
        Case(name: "request no-store", requestHeaders: ["cache-control": "no-store"],
             headers: ["cache-control": "max-age=60"], expected: .doNotStore(.requestNoStore)),
        Case(name: "must-understand overrides no-store for 200",
             headers: ["cache-control": "must-understand, no-store, max-age=60"], expected: .store),
        Case(name: "must-understand with unknown status", status: 299,
             headers: ["cache-control": "must-understand, no-store, max-age=60"],
             expected: .doNotStore(.statusNotUnderstood)),
        Case(name: "Vary: *", headers: ["cache-control": "max-age=60", "vary": "Accept, *"],
             expected: .doNotStore(.varyStar)),
        Case(name: "Authorization + max-age", requestHeaders: ["authorization": "Basic x"],
             headers: ["cache-control": "max-age=60"], expected: .doNotStore(.authorization)),
        Case(name: "Authorization + public", requestHeaders: ["authorization": "Basic x"],
             headers: ["cache-control": "public, max-age=60"], expected: .store),
        Case(name: "Authorization + must-revalidate", requestHeaders: ["authorization": "B"],
             headers: ["cache-control": "must-revalidate, max-age=60"], expected: .store),
        Case(name: "Authorization + s-maxage", requestHeaders: ["authorization": "B"],
             headers: ["cache-control": "s-maxage=60"], expected: .store),
        Case(name: "500 without freshness", status: 500, headers: [:],
             expected: .doNotStore(.notCacheable)),
        Case(name: "500 with max-age", status: 500, headers: ["cache-control": "max-age=5"],
             expected: .store),
        Case(name: "500 with public", status: 500, headers: ["cache-control": "public"],
             expected: .store),
        Case(name: "503 with invalid Expires", status: 503, headers: ["expires": "0"],
             expected: .store),
        Case(name: "200 without anything (heuristic status)", headers: [:], expected: .store),
        Case(name: "404 without anything", status: 404, headers: [:], expected: .store),
        Case(name: "302 without freshness", status: 302, headers: [:],
             expected: .doNotStore(.notCacheable)),
        Case(name: "302 private", status: 302, headers: ["cache-control": "private"],
             expected: .store),
        Case(name: "private max-age", headers: ["cache-control": "private, max-age=60"],
             expected: .store),
        Case(name: "no-cache response still storable", headers: ["cache-control": "no-cache"],
             expected: .store),
    ]

    @Test(arguments: cases)
    func storability(testCase: Case) {
        let request = CacheRequest(method: testCase.method, url: url, headers: testCase.requestHeaders)
        let decision = Storability.evaluate(
            request: request, status: testCase.status, headers: testCase.headers)
        #expect(decision == testCase.expected)
    }

    @Test func authorizationRuleCanBeDisabledForStrictlyPrivateUse() {
        let request = get(["authorization": "Bearer t"])
        let options = CachePolicyOptions(restrictAuthorizedResponses: false)
        #expect(Storability.evaluate(
            request: request, status: 200, headers: ["cache-control": "max-age=60"],
            options: options) == .store)
    }

    @Test func storageDropsHopByHopFieldsAndKeepsCookies() {
        let headers: HeaderList = [
            "Set-Cookie": "a=1", "set-cookie2": "b=2", "Connection": "close, X-Hop",
            "x-hop": "1", "keep-alive": "timeout=5", "transfer-encoding": "chunked",
            "content-type": "text/plain", "etag": "\"v\"",
        ]
        let kept = Storability.headersForStorage(headers)
        // Cookies stay in storage (a client may ask for them) and are withheld when serving.
        #expect(kept.pairs == [["set-cookie", "a=1"], ["set-cookie2", "b=2"], ["content-type", "text/plain"], ["etag", "\"v\""]])
    }

    @Test func servingNeverReplaysCookiesAndSetsAge() {
        let served = Storability.headersForServing(
            ["set-cookie": "a=1", "Age": "3", "x": "y", "SET-COOKIE2": "c"], age: 42)
        #expect(served.pairs == [["age", "42"], ["x", "y"]])
    }
}
