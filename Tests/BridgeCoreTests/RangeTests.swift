import Synchronization
import Testing
@testable import BridgeCore

/// Byte ranges: parsing, 206/416 from whole stored responses, partial entries and their
/// combination (RFC 9110 §14, RFC 9111 §3.3, §3.4).
struct RangeTests {
    @Test(arguments: [
        ("bytes=0-99", RangeRequest.single(.from(first: 0, last: 99))),
        ("bytes=100-", .single(.from(first: 100, last: nil))),
        ("bytes=-50", .single(.suffix(length: 50))),
        ("Bytes = 5-5", .single(.from(first: 5, last: 5))),
        ("bytes=0-0, -1", .multiple([.from(first: 0, last: 0), .suffix(length: 1)])),
        ("bytes=0-1,,2-3", .multiple([.from(first: 0, last: 1), .from(first: 2, last: 3)])),
        ("bytes=5-1", .none),  // last before first
        ("bytes=a-b", .none), ("bytes=-", .none), ("bytes=", .none), ("bytes=1", .none),
        ("items=0-5", .none), ("0-5", .none), ("bytes=0-5, x", .none), ("bytes=+1-2", .none),
    ] as [(String, RangeRequest)])
    func parsesRangeHeaders(text: String, expected: RangeRequest) {
        #expect(RangeRequest(text) == expected)
    }

    @Test(arguments: [
        (ByteRangeSpec.from(first: 0, last: 99), 1000, 0...99 as ClosedRange<Int>?),
        (.from(first: 900, last: 2000), 1000, 900...999),
        (.from(first: 999, last: nil), 1000, 999...999),
        (.from(first: 1000, last: nil), 1000, nil),  // first position at the length: unsatisfiable
        (.from(first: 0, last: 0), 0, nil),
        (.suffix(length: 10), 1000, 990...999),
        (.suffix(length: 5000), 1000, 0...999),
        (.suffix(length: 0), 1000, nil),
        (.suffix(length: 3), 0, nil),
    ] as [(ByteRangeSpec, Int, ClosedRange<Int>?)])
    func resolvesAgainstALength(spec: ByteRangeSpec, length: Int, expected: ClosedRange<Int>?) {
        #expect(spec.resolve(length: length) == expected)
    }

    @Test func parsesContentRange() {
        #expect(ContentRange("bytes 0-99/1000") == ContentRange(range: 0...99, completeLength: 1000))
        #expect(ContentRange("BYTES 5-5/6")?.isComplete == false)
        #expect(ContentRange("bytes 0-5/6")?.isComplete == true)
        for invalid in ["bytes 0-99/*", "bytes */1000", "bytes 5-1/10", "bytes 0-10/10", "items 0-1/2", "bytes 0-1", ""] {
            #expect(ContentRange(invalid) == nil, "\(invalid)")
        }
    }

    static let whole = stored(["cache-control": "max-age=60", "etag": "\"r1\"", "content-length": "10"])

    struct PlanCase: Sendable, CustomTestStringConvertible {
        let name: String
        let entry: CachedResponse
        let range: String?
        var now: Double = T0 + 10
        let kind: String
        var upstreamRange: String? = nil
        var ifRange: String? = nil
        var testDescription: String { name }
    }

    static let part = stored(
        ["cache-control": "max-age=60", "etag": "\"r1\"", "content-range": "bytes 10-19/100", "content-length": "10"],
        status: 206)
    static let weakPart = stored(
        ["cache-control": "max-age=60", "etag": "W/\"r1\"", "content-range": "bytes 10-19/100"], status: 206)
    static let gzipped = stored(["cache-control": "max-age=60", "etag": "\"r1\"", "content-encoding": "gzip"])

    @Test(arguments: [
        PlanCase(name: "whole, single range, fresh", entry: whole, range: "bytes=2-4", kind: "hit"),
        PlanCase(name: "whole, several ranges: served whole", entry: whole, range: "bytes=0-1,4-5", kind: "hit"),
        PlanCase(name: "whole, stale: revalidated with the range", entry: whole, range: "bytes=2-4", now: T0 + 100,
                 kind: "revalidate", upstreamRange: "bytes=2-4"),
        PlanCase(name: "whole but content-coded: forwarded", entry: gzipped, range: "bytes=2-4", kind: "fetch",
                 upstreamRange: "bytes=2-4"),
        PlanCase(name: "whole but content-coded, no range: hit", entry: gzipped, range: nil, kind: "hit"),
        PlanCase(name: "partial covers the range", entry: part, range: "bytes=12-15", kind: "hit"),
        PlanCase(name: "partial covers, stale", entry: part, range: "bytes=10-19", now: T0 + 100, kind: "revalidate",
                 upstreamRange: "bytes=10-19"),
        PlanCase(name: "partial, range after it: the rest", entry: part, range: "bytes=15-29", kind: "fetch",
                 upstreamRange: "bytes=20-29", ifRange: "\"r1\""),
        PlanCase(name: "partial, range before it", entry: part, range: "bytes=0-12", kind: "fetch",
                 upstreamRange: "bytes=0-9", ifRange: "\"r1\""),
        PlanCase(name: "partial, range around it", entry: part, range: "bytes=5-25", kind: "fetch",
                 upstreamRange: "bytes=5-25", ifRange: "\"r1\""),
        PlanCase(name: "partial, open range", entry: part, range: "bytes=18-", kind: "fetch",
                 upstreamRange: "bytes=20-99", ifRange: "\"r1\""),
        PlanCase(name: "partial, suffix range", entry: part, range: "bytes=-85", kind: "fetch",
                 upstreamRange: "bytes=20-99", ifRange: "\"r1\""),
        PlanCase(name: "partial, no range: the missing bytes", entry: part, range: nil, kind: "fetch",
                 upstreamRange: "bytes=0-99", ifRange: "\"r1\""),
        PlanCase(name: "partial, several ranges: forwarded", entry: part, range: "bytes=0-1,50-60", kind: "fetch",
                 upstreamRange: "bytes=0-1,50-60"),
        PlanCase(name: "partial without a strong validator: forwarded", entry: weakPart, range: "bytes=30-40",
                 kind: "fetch", upstreamRange: "bytes=30-40"),
    ])
    func plansRangeRequests(testCase: PlanCase) {
        var headers = HeaderList()
        if let range = testCase.range { headers.add("range", range) }
        let plan = planFor([testCase.entry], now: testCase.now, headers: headers)
        #expect(plan.kind == testCase.kind)
        let sent = plan.usesNetwork ? plan.upstreamRequestHeaders(headers) : HeaderList()
        #expect(sent.first("range") == testCase.upstreamRange)
        #expect(sent.first("if-range") == testCase.ifRange)
        if plan.kind == "hit", testCase.range != nil, !testCase.range!.contains(",") {
            #expect(plan.reply?.range != nil)
        }
    }

    @Test func farRangesAreFetchedAloneAndOnlyIfCachedNeverFetches() {
        let far = planner.plan(
            request: get(["range": "bytes=5000000-5000010"]), mode: .default,
            storedCandidates: [stored(["etag": "\"r1\"", "content-range": "bytes 0-9/10000000", "cache-control": "max-age=60"], status: 206)],
            now: T0 + 1)
        guard case .fetch(let fetch) = far else {
            Issue.record("expected a fetch")
            return
        }
        #expect(fetch.fill == nil && far.upstreamRequestHeaders(["range": "bytes=5000000-5000010"]).first("range") == "bytes=5000000-5000010")
        #expect(planFor([Self.part], now: T0 + 10, mode: .onlyIfCached, headers: ["range": "bytes=30-40"]) == .fail(.notCached))
        #expect(planFor([Self.part], now: T0 + 10, mode: .onlyIfCached).kind == "fail")
        #expect(planFor([Self.part], now: T0 + 10, mode: .onlyIfCached, headers: ["range": "bytes=11-12"]).kind == "hit")
    }

    // MARK: Through the cache, with a scripted origin that honours Range and If-Range.

    static let representation = Array("0123456789abcdefghijklmnopqrstuvwxyz".utf8)

    /// Answers like a real origin: 206 for one satisfiable range (unless `If-Range` fails),
    /// 416 for an unsatisfiable one, 304 for a matching `If-None-Match`, else 200.
    static func rangeOrigin(etag: @escaping @Sendable () -> String = { "\"r1\"" }, body: [UInt8] = representation,
                            extra: HeaderList = ["cache-control": "max-age=60"]) -> ScriptedUpstream.Responder {
        { request in
            let tag = etag()
            var headers = extra
            headers.add("etag", tag)
            if request.headers.first("if-none-match") == tag { return response(304, headers, body: "") }
            let ifRangeHolds = request.headers.first("if-range").map { $0 == tag } ?? true
            if ifRangeHolds, case .single(let spec) = RangeRequest(headers: request.headers) {
                guard let range = spec.resolve(length: body.count) else {
                    return response(416, ["content-range": "bytes */\(body.count)"], body: "")
                }
                headers.add("content-range", "bytes \(range.lowerBound)-\(range.upperBound)/\(body.count)")
                headers.add("content-length", String(range.count))
                return UpstreamResponse(status: 206, statusText: "", headers: headers, body: bodyStream(Array(body[range]), chunk: 4))
            }
            headers.add("content-length", String(body.count))
            return UpstreamResponse(status: 200, statusText: "", headers: headers, body: bodyStream(body, chunk: 4))
        }
    }

    func ranged(_ rig: CacheRig, _ range: String?) async throws -> (ReplyCacheStatus, String, CachedExchange) {
        try await rig.fetch(request(url, range.map { ["range": $0] } ?? HeaderList()))
    }

    @Test func wholeStoredResponsesServeSingleSuffixAndOpenRanges() async throws {
        let rig = CacheRig(Self.rangeOrigin())
        try await rig.fetch()
        let cases: [(String, String, String)] = [
            ("bytes=0-3", "0123", "bytes 0-3/36"), ("bytes=-4", "wxyz", "bytes 32-35/36"),
            ("bytes=30-", "uvwxyz", "bytes 30-35/36"), ("bytes=34-99", "yz", "bytes 34-35/36"), ("bytes=10-10", "a", "bytes 10-10/36"),
        ]
        for (range, body, contentRange) in cases {
            let (status, text, exchange) = try await ranged(rig, range)
            #expect(status == .hit && text == body && exchange.response.status == 206, "\(range)")
            #expect(exchange.response.headers.values("content-range") == [contentRange])
            #expect(exchange.response.headers.values("content-length") == [String(body.count)])
            #expect(exchange.response.headers.first("etag") == "\"r1\"" && exchange.response.body.length == body.count)
        }
        let (status, text, refused) = try await ranged(rig, "bytes=36-")
        #expect(status == .hit && text.isEmpty && refused.response.status == 416)
        #expect(refused.response.headers.first("content-range") == "bytes */36")
        let (_, all, several) = try await ranged(rig, "bytes=0-1,5-6")
        #expect(several.response.status == 200 && all.count == 36)
        #expect(rig.upstream.count == 1)
    }

    @Test func aStaleWholeResponseIsRevalidatedAndTheRangeServedFromIt() async throws {
        let rig = CacheRig(Self.rangeOrigin())
        try await rig.fetch()
        rig.clock.set(T0 + 100)
        let (status, text, exchange) = try await ranged(rig, "bytes=1-2")
        #expect(status == .revalidated && text == "12" && exchange.response.status == 206)
        #expect(rig.upstream.requests.last?.headers.first("if-none-match") == "\"r1\"")
    }

    @Test func partsCombineUntilWholeAndAreNeverServedForWhatTheyLack() async throws {
        let rig = CacheRig(Self.rangeOrigin())
        let (first, text, exchange) = try await ranged(rig, "bytes=10-19")
        #expect(first == .miss && text == "abcdefghij" && exchange.response.status == 206)
        let part = try #require(try await rig.store.entries(for: url).first)
        #expect(part.status == 206 && part.headers.first("content-range") == "bytes 10-19/36")
        // Covered: from storage.
        let (hit, inside, _) = try await ranged(rig, "bytes=12-14")
        #expect(hit == .hit && inside == "cde" && rig.upstream.count == 1)
        // Not covered: only the missing bytes go upstream, with If-Range.
        let (miss, later, combined) = try await ranged(rig, "bytes=15-24")
        #expect(miss == .miss && later == "fghijklmno" && combined.response.headers.first("content-range") == "bytes 15-24/36")
        #expect(rig.upstream.requests.last?.headers.first("range") == "bytes=20-24")
        #expect(rig.upstream.requests.last?.headers.first("if-range") == "\"r1\"")
        #expect(try await rig.store.entries(for: url).map(\.headers).first?.first("content-range") == "bytes 10-24/36")
        // A request without Range never gets the part: the rest is fetched and the entry made whole.
        let (wholeStatus, all, whole) = try await rig.fetch()
        #expect(wholeStatus == .miss && whole.response.status == 200 && all == String(decoding: Self.representation, as: UTF8.self))
        #expect(whole.response.headers.first("content-length") == "36" && !whole.response.headers.contains("content-range"))
        #expect(rig.upstream.requests.last?.headers.first("range") == "bytes=0-35")
        let entries = try await rig.store.entries(for: url)
        #expect(entries.count == 1 && entries.first?.status == 200)
        let (again, body, _) = try await rig.fetch()
        #expect(again == .hit && body.count == 36 && rig.upstream.count == 3)
    }

    @Test func aChangedRepresentationReplacesThePart() async throws {
        let tag = Mutex("\"r1\"")
        let rig = CacheRig(Self.rangeOrigin(etag: { tag.withLock { $0 } }))
        try await ranged(rig, "bytes=0-9")
        tag.withLock { $0 = "\"r2\"" }
        let (status, text, exchange) = try await ranged(rig, "bytes=5-14")
        // If-Range failed at the origin: the whole new representation came back and is stored.
        #expect(status == .miss && exchange.response.status == 200 && text.count == 36)
        let entries = try await rig.store.entries(for: url)
        #expect(entries.count == 1 && entries.first?.status == 200 && entries.first?.headers.first("etag") == "\"r2\"")
    }

    @Test func partsWithoutAStrongValidatorAreNotStored() async throws {
        let rig = CacheRig { _ in
            response(206, ["cache-control": "max-age=60", "etag": "W/\"w\"", "content-range": "bytes 0-4/36"], body: "01234")
        }
        let (_, text, _) = try await ranged(rig, "bytes=0-4")
        #expect(text == "01234")
        #expect(try await rig.store.entries(for: url).isEmpty)
    }

    @Test func aTruncatedPartIsNeverCombined() async throws {
        let calls = Mutex(0)
        let rig = CacheRig { request in
            let call = calls.withLock { $0 += 1; return $0 }
            if call == 1 {
                return response(206, ["cache-control": "max-age=60", "etag": "\"r1\"", "content-range": "bytes 0-4/36"], body: "01234")
            }
            // Announces 5-9 but sends three bytes.
            return response(206, ["cache-control": "max-age=60", "etag": "\"r1\"", "content-range": "bytes 5-9/36"], body: "567")
        }
        try await ranged(rig, "bytes=0-4")
        await #expect(throws: BridgeError.self) { try await ranged(rig, "bytes=3-9") }
        await rig.cache.waitForPendingWrites()
        #expect(try await rig.store.entries(for: url).first?.headers.first("content-range") == "bytes 0-4/36")
    }

    @Test func rangedErrorsAreNotStoredAndDoNotEvict() async throws {
        let rig = CacheRig(Self.rangeOrigin(extra: ["cache-control": "max-age=60"]))
        try await rig.fetch()
        let stored = try await rig.store.entries(for: url)
        // The whole stored response answers the unsatisfiable range itself, and stays.
        let (_, _, refused) = try await ranged(rig, "bytes=100-")
        #expect(refused.response.status == 416)
        #expect(try await rig.store.entries(for: url) == stored)
    }
}
