import Testing
@testable import BridgeCore

struct VaryTests {
    func variant(_ language: String, id: String, at time: Double = T0) -> CachedResponse {
        stored(
            ["cache-control": "max-age=3600", "vary": "Accept-Language"], at: time, id: id,
            requestHeaders: ["accept-language": language])
    }

    @Test func enFrEnNeverCrossServe() {
        let candidates = [variant("en", id: "en"), variant("fr", id: "fr")]
        for (language, expected) in [("en", "en"), ("fr", "fr"), ("en", "en"), ("EN", "en")] {
            let plan = planFor(candidates, now: T0 + 10, headers: ["Accept-Language": language])
            #expect(plan.reply?.entry.id == expected)
        }
        let german = planFor(candidates, now: T0 + 10, headers: ["accept-language": "de"])
        guard case .fetch(let fetch) = german else {
            Issue.record("expected a fetch, got \(german.kind)")
            return
        }
        #expect(fetch.forward == .varyMiss)
        #expect(planFor(candidates, now: T0 + 10).kind == "fetch")  // header absent
    }

    /// Fuzz target `vary`, Fuzz/corpus/vary/crash-open-quote-across-lines: two lines each with
    /// an open quote. The normalised value is the lines combined, so it normalises to itself and
    /// a request sending the combined line matches what was stored.
    @Test func openQuotesAcrossLinesNormaliseAsCombined() {
        let lines: HeaderList = [("Accept", "text \"a, b"), ("Accept", "c\" ,d")]
        let value = VaryKey.normalizedValue(of: "accept", in: lines)
        #expect(value == "text \"a, b, c\", d")
        #expect(VaryKey.normalizedValue(of: "accept", in: [("Accept", value ?? "")]) == value)
        let key = VaryKey(responseHeaders: ["Vary": "Accept"], requestHeaders: lines)
        #expect(key.matches([("Accept", "text \"a, b, c\" , d")]))
    }

    @Test func endToEndVariantsAreStoredSideBySide() {
        var store: [CachedResponse] = []
        var nextID = 0
        for language in ["en", "fr", "en", "fr"] {
            let request = get(["accept-language": language])
            let plan = planner.plan(request: request, mode: .default, storedCandidates: store, now: T0)
            if case .serveStored(let reply) = plan {
                #expect(reply.entry.varyKey.values == [language])
                continue
            }
            let decision = planner.decide(
                plan: plan, request: request,
                outcome: .response(status: 200, headers: [
                    "cache-control": "max-age=60", "vary": "accept-language",
                    "content-language": language,
                ]), requestTime: T0, responseTime: T0)
            guard case .store(var entry) = decision.write else {
                Issue.record("expected a store")
                return
            }
            nextID += 1
            entry.id = "v\(nextID)"
            store.removeAll { entry.replaces($0) }
            store.append(entry)
        }
        #expect(store.count == 2)
        #expect(store.map { $0.headers.first("content-language") } == ["en", "fr"])
    }

    @Test func normalisationAndAbsence() {
        let key = VaryKey(
            responseHeaders: ["vary": "Accept-Encoding, X-List", "Vary": "x-empty, x-absent"],
            requestHeaders: [
                "accept-encoding": "GZIP,  br", "x-list": "a", "X-List": " b ,c", "x-empty": "",
            ])
        #expect(key.fieldNames == ["accept-encoding", "x-absent", "x-empty", "x-list"])
        #expect(key.values == ["gzip, br", nil, "", "a, b, c"])
        #expect(key.matches([
            "Accept-Encoding": "gzip, br", "x-list": "a, b, c", "x-empty": "",
        ]))
        #expect(!key.matches(["accept-encoding": "br, gzip", "x-list": "a, b, c", "x-empty": ""]))
        #expect(!key.matches(["accept-encoding": "gzip, br", "x-list": "a, b, c"]))  // empty ≠ absent
        #expect(!key.matches([
            "accept-encoding": "gzip, br", "x-list": "a, b, c", "x-empty": "", "x-absent": "1",
        ]))
    }

    @Test func varyStarNeverMatches() {
        let key = VaryKey(responseHeaders: ["vary": "*"], requestHeaders: HeaderList())
        #expect(key.isWildcard && !key.matches(HeaderList()))
        let noVary = VaryKey(responseHeaders: HeaderList(), requestHeaders: ["x": "1"])
        #expect(noVary.matches(["x": "2"]))
    }

    @Test func replacementRules() {
        let en = variant("en", id: "1")
        let fr = variant("fr", id: "2")
        let enAgain = variant("en", id: "3", at: T0 + 5)
        let unvaried = stored(["cache-control": "max-age=60"], id: "4")
        #expect(enAgain.replaces(en) && !enAgain.replaces(fr))
        #expect(unvaried.replaces(en) && unvaried.replaces(fr))  // Vary changed: old variants go
        #expect(planner.select(request: get(["accept-language": "en"]), from: [en, enAgain])?.id == "3")
    }
}
