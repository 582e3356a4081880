import Testing
@testable import BridgeCore

/// The rules a browser cache follows beyond the basics: invalid `Expires`, 204, qualified
/// `no-cache`/`private`, directive syntax and duplicates, Vary-matched validators, stored cookies.
struct CacheRulesTests {
    struct ExpiresCase: Sendable, CustomTestStringConvertible {
        let expires: String
        let fresh: Bool
        var testDescription: String { expires }
    }

    /// `Date: T0`; a valid `Expires` one hour later keeps the response fresh at T0 + 10.
    @Test(arguments: [
        ExpiresCase(expires: "Tue, 14 Nov 2023 23:13:20 GMT", fresh: true),  // IMF-fixdate, T0 + 3600
        ExpiresCase(expires: "Tuesday, 14-Nov-23 23:13:20 GMT", fresh: true),  // RFC 850
        ExpiresCase(expires: "Tue Nov 14 23:13:20 2023", fresh: true),  // asctime
        ExpiresCase(expires: "Tue, 14 Nov 2023 23:13:20 UTC", fresh: false),  // bad zone
        ExpiresCase(expires: "Tue, 14 Nov 2023 23:13:20 +0000", fresh: false),
        ExpiresCase(expires: "Tue, 14 Nov 2023 23:13:20 AEST", fresh: false),
        ExpiresCase(expires: "Tue, 14 Nov 2023 23:13:20", fresh: false),  // no zone
        ExpiresCase(expires: "Tue,  14 Nov 2023 23:13:20 GMT", fresh: false),  // extra spaces
        ExpiresCase(expires: "Tue, 14 Nov 2023  23:13:20 GMT", fresh: false),
        ExpiresCase(expires: "Tue, 14-Nov-2023 23:13:20 GMT", fresh: false),  // dashes in IMF-fixdate
        ExpiresCase(expires: "Tue, 14 Nov 23 23:13:20 GMT", fresh: false),  // two-digit year in IMF-fixdate
        ExpiresCase(expires: "Tuesday, 14-Nov-2023 23:13:20 GMT", fresh: false),  // four digits in RFC 850
        ExpiresCase(expires: "Tuesday, 14-Nov-123 23:13:20 GMT", fresh: false),
        ExpiresCase(expires: "tue, 14 nov 2023 23:13:20 gmt", fresh: false),  // case-sensitive names
        ExpiresCase(expires: "Tue, 14 Nov 2023 23:13 GMT", fresh: false),
        ExpiresCase(expires: "Tue, 14 Nov 2023 3:13:20 GMT", fresh: false),  // one-digit hour
        ExpiresCase(expires: "0", fresh: false),
        ExpiresCase(expires: "-1", fresh: false),
        ExpiresCase(expires: "2023-11-14T23:13:20Z", fresh: false),
    ])
    func invalidExpiresMeansAlreadyExpired(testCase: ExpiresCase) {
        let entry = stored(["expires": testCase.expires])
        #expect(planFor([entry], now: T0 + 10).kind == (testCase.fresh ? "hit" : "fetch"))
        #expect(Storability.evaluate(request: get(), status: 200, headers: ["expires": testCase.expires]) == .store)
    }

    @Test func duplicateExpiresThatDisagreeMeanStale() {
        let same = stored(["expires": httpDate(T0 + 3600)])
        var twice = same
        twice.headers.add("expires", httpDate(T0 + 3600))
        #expect(planFor([twice], now: T0 + 10).kind == "hit")
        twice.headers.add("expires", httpDate(T0 + 7200))
        #expect(planFor([twice], now: T0 + 10).kind == "fetch")
    }

    struct StatusCase: Sendable, CustomTestStringConvertible {
        let status: Int
        let headers: HeaderList
        let kind: String
        var testDescription: String { "\(status) \(headers.pairs)" }
    }

    /// 204 is cacheable by default, like 200: explicitly and heuristically (RFC 9110 §15.1).
    @Test(arguments: [
        StatusCase(status: 204, headers: ["cache-control": "max-age=60"], kind: "hit"),
        StatusCase(status: 204, headers: ["expires": httpDate(T0 + 60)], kind: "hit"),
        StatusCase(status: 204, headers: ["last-modified": httpDate(T0 - 100_000)], kind: "hit"),  // heuristic
        StatusCase(status: 200, headers: ["last-modified": httpDate(T0 - 100_000)], kind: "hit"),
        StatusCase(status: 204, headers: [:], kind: "fetch"),  // stored, but stale on arrival
        StatusCase(status: 302, headers: ["last-modified": httpDate(T0 - 100_000)], kind: "revalidate"),  // not heuristic
    ])
    func noContentIsCacheableLikeOK(testCase: StatusCase) {
        #expect(Storability.evaluate(request: get(), status: testCase.status, headers: testCase.headers).isStorable
            == (testCase.status != 302))
        let entry = stored(testCase.headers, status: testCase.status)
        #expect(planFor([entry], now: T0 + 10).kind == testCase.kind)
    }

    @Test func a204IsServedFromTheCache() async throws {
        let rig = CacheRig { _ in response(204, ["cache-control": "max-age=60", "x-kind": "empty"], body: "") }
        try await rig.fetch()
        rig.clock.set(T0 + 5)
        let (status, body, exchange) = try await rig.fetch()
        #expect(status == .hit && body.isEmpty && exchange.response.status == 204)
        #expect(exchange.response.headers.first("x-kind") == "empty" && rig.upstream.count == 1)
    }

    struct QualifiedCase: Sendable, CustomTestStringConvertible {
        let cacheControl: String
        let kind: String
        let served: [String]
        var testDescription: String { cacheControl }
    }

    /// Stored: `x-a`, `x-b`, `set-cookie`, `etag`; which fields a fresh hit serves.
    @Test(arguments: [
        QualifiedCase(cacheControl: "max-age=60, no-cache=\"x-a\"", kind: "hit", served: ["x-b"]),
        QualifiedCase(cacheControl: "max-age=60, no-cache=\"X-A, x-b\"", kind: "hit", served: []),
        QualifiedCase(cacheControl: "max-age=60, no-cache=x-b", kind: "hit", served: ["x-a"]),  // token form
        QualifiedCase(cacheControl: "max-age=60, private=\"x-b\"", kind: "hit", served: ["x-a"]),
        QualifiedCase(cacheControl: "max-age=60, private=\"x-a\", no-cache=\"x-b\"", kind: "hit", served: []),
        QualifiedCase(cacheControl: "max-age=60, private", kind: "hit", served: ["x-a", "x-b"]),
        QualifiedCase(cacheControl: "max-age=60, no-cache", kind: "revalidate", served: []),
        QualifiedCase(cacheControl: "max-age=60, no-cache=\"x-a\", no-cache", kind: "revalidate", served: []),
        QualifiedCase(cacheControl: "max-age=60, no-cache=\"\"", kind: "revalidate", served: []),  // empty list
        QualifiedCase(cacheControl: "max-age=60, no-cache =\"x-a\"", kind: "revalidate", served: []),  // invalid
        QualifiedCase(cacheControl: "max-age=60, no-cache=\"x-a\"junk", kind: "revalidate", served: []),
    ])
    func qualifiedNoCacheAndPrivateWithholdTheirFields(testCase: QualifiedCase) {
        let entry = stored([
            "cache-control": testCase.cacheControl, "x-a": "1", "x-b": "2", "set-cookie": "s=1", "etag": "\"v1\"",
        ])
        let plan = planFor([entry], now: T0 + 10)
        #expect(plan.kind == testCase.kind)
        guard let reply = plan.reply else { return }
        #expect(["x-a", "x-b"].filter { reply.headers.contains($0) } == testCase.served)
        #expect(!reply.headers.contains("set-cookie") && reply.headers.contains("etag"))
    }

    @Test func qualifiedFieldsComeBackAfterARevalidation() async throws {
        let rig = CacheRig(validatingOrigin(["cache-control": "max-age=60, no-cache=\"x-user\"", "etag": "\"v1\"", "x-user": "alice"]))
        let (_, _, miss) = try await rig.fetch()
        #expect(miss.response.headers.first("x-user") == "alice")  // from the network: all fields
        rig.clock.set(T0 + 10)
        let (hit, _, fresh) = try await rig.fetch()
        #expect(hit == .hit && !fresh.response.headers.contains("x-user") && rig.upstream.count == 1)
        // The immediate (memory) path withholds it too.
        let immediate = rig.cache.immediateHit(url: url, headers: HeaderList(), mode: .default, bodyLimit: 1 << 20) { _ in true }
        var writer = JSONWriter(capacity: 256)
        immediate?.writeHeaders(into: &writer)
        #expect(immediate != nil && !String(decoding: writer.bytes, as: UTF8.self).contains("[\"x-user\""))
        rig.clock.set(T0 + 100)
        let (revalidated, _, after) = try await rig.fetch()
        #expect(revalidated == .revalidated && after.response.headers.first("x-user") == "alice")
    }

    struct DirectiveCase: Sendable, CustomTestStringConvertible {
        let lines: [String]
        let kind: String
        var testDescription: String { lines.joined(separator: " | ") }
    }

    /// RFC 9111 §4.2.1 and §5.2: stored at T0, judged at T0 + 10.
    @Test(arguments: [
        DirectiveCase(lines: ["max-age=3600"], kind: "hit"),
        DirectiveCase(lines: ["max-age=3600, max-age=3600"], kind: "hit"),  // identical duplicate
        DirectiveCase(lines: ["max-age=3600", "max-age=3600"], kind: "hit"),
        DirectiveCase(lines: ["max-age=1, max-age=3600"], kind: "revalidate"),  // conflicting: stale
        DirectiveCase(lines: ["max-age=3600, max-age=1"], kind: "revalidate"),
        DirectiveCase(lines: ["max-age=1", "max-age=3600"], kind: "revalidate"),  // across lines
        DirectiveCase(lines: ["max-age=3600", "max-age=0"], kind: "revalidate"),  // fresh and stale mixed
        DirectiveCase(lines: ["max-age =3600"], kind: "revalidate"),  // space before "=": invalid
        DirectiveCase(lines: ["max-age= 3600"], kind: "revalidate"),  // space after "=": invalid
        DirectiveCase(lines: ["max-age = 3600"], kind: "revalidate"),
        DirectiveCase(lines: ["max-age 3600"], kind: "revalidate"),
        DirectiveCase(lines: ["max-age=3600, max-age =3600"], kind: "revalidate"),  // one invalid duplicate
        DirectiveCase(lines: ["max-age=\"3600\""], kind: "hit"),  // quoted form tolerated
        DirectiveCase(lines: ["max-age=36 00"], kind: "revalidate"),
        DirectiveCase(lines: ["max-age=3600, no-cache"], kind: "revalidate"),  // most restrictive wins
        DirectiveCase(lines: ["max-age=3600", "no-store =1"], kind: "hit"),  // stored: judged by max-age
        DirectiveCase(lines: ["max-age=3600, must-revalidate =x"], kind: "hit"),
        DirectiveCase(lines: ["MAX-AGE=3600"], kind: "hit"),
        DirectiveCase(lines: ["max-age=3600, stale-while-revalidate =60"], kind: "hit"),
    ])
    func duplicateConflictingAndInvalidDirectives(testCase: DirectiveCase) {
        let entry = stored(HeaderList([(name: "etag", value: "\"v1\"")] + testCase.lines.map { (name: "cache-control", value: $0) }))
        #expect(planFor([entry], now: T0 + 10).kind == testCase.kind)
    }

    @Test func invalidBooleanDirectivesStillCount() {
        let noStore = ResponseDirectives(CacheControl(fieldValues: ["max-age=60, no-store =1"]))
        #expect(noStore.noStore)
        #expect(Storability.evaluate(request: get(), status: 200, headers: ["cache-control": "max-age=60, no-store =1"])
            == .doNotStore(.responseNoStore))
        let request = RequestDirectives(headers: ["cache-control": "max-stale =60, min-fresh= 5, max-age =9"])
        #expect(request.maxStale == nil && request.minFresh == nil && request.maxAge == 0)
    }

    @Test func conditionalRequestsCarryOnlyTheMatchingVariantsValidators() {
        let english = stored(["vary": "accept-language", "etag": "\"en\"", "last-modified": httpDate(T0 - 100), "cache-control": "max-age=1"],
                             id: "en", requestHeaders: ["accept-language": "en"])
        let french = stored(["vary": "accept-language", "etag": "\"fr\"", "last-modified": httpDate(T0 - 200), "cache-control": "max-age=1"],
                            id: "fr", requestHeaders: ["accept-language": "fr"])
        let forFrench = planFor([english, french], now: T0 + 10, headers: ["accept-language": "fr"])
        #expect(forFrench.upstreamHeaders.pairs == [["if-none-match", "\"fr\""], ["if-modified-since", httpDate(T0 - 200)]])
        let forEnglish = planFor([english, french], now: T0 + 10, headers: ["accept-language": "en"])
        #expect(forEnglish.upstreamHeaders.values("if-none-match") == ["\"en\""])
        let forGerman = planFor([english, french], now: T0 + 10, headers: ["accept-language": "de"])
        #expect(forGerman.kind == "fetch" && !forGerman.sendsConditionalRequest)
        #expect(!forGerman.upstreamHeaders.contains("if-none-match") && !forGerman.upstreamHeaders.contains("if-modified-since"))
    }

    @Test func setCookieIsStoredIntactAndWithheldWhenServed() async throws {
        let rig = CacheRig { _ in
            response(200, HeaderList([(name: "cache-control", value: "max-age=60"), (name: "set-cookie", value: "a=1; Path=/"),
                                      (name: "set-cookie", value: "b=2; HttpOnly")]))
        }
        let (_, _, miss) = try await rig.fetch()
        #expect(miss.response.headers.values("set-cookie") == ["a=1; Path=/", "b=2; HttpOnly"] && miss.storedSetCookie.isEmpty)
        #expect(try await rig.store.entries(for: url).first?.headers.values("set-cookie") == ["a=1; Path=/", "b=2; HttpOnly"])
        let (status, _, hit) = try await rig.fetch()
        #expect(status == .hit && !hit.response.headers.contains("set-cookie"))
        #expect(hit.storedSetCookie == ["a=1; Path=/", "b=2; HttpOnly"])
    }
}
