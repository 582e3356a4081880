import BridgeCore
import Testing

@Suite struct PreloadHandlerTests {
    static let base = "http://a.example"

    func results(_ reply: JSONValue) -> [String] {
        (reply["resources"]?.arrayValue ?? []).map { "\($0["url"]?.stringValue ?? "") \($0["result"]?.stringValue ?? "")" }
    }

    @Test func preloadsURLsIntoTheCacheAndReportsEachOne() async throws {
        let rig = PreloadRig()
        let urls: [JSONValue] = ["http://a.example/fresh/100", "http://a.example/fresh/200", "http://a.example/nostore", "http://a.example/fail"]
        let reply = try await rig.preload(["urls": .array(urls)])
        #expect(results(reply) == [
            "http://a.example/fresh/100 stored", "http://a.example/fresh/200 stored", "http://a.example/nostore uncacheable", "http://a.example/fail failed",
        ])
        let first = try #require(reply["resources"]?.arrayValue?[0])
        #expect(first["status"] == 200 && first["cache"] == "miss" && first["bytes"] == 100)
        #expect(reply["resources"]?.arrayValue?[3]["error"]?["code"] == "network")
        #expect(reply["totals"] == ["resources": 4, "cached": 0, "stored": 2, "uncacheable": 1, "failed": 1, "skipped": 0, "bytes": 307])
        let states = rig.events("preload.resource", of: 1).map { $0["state"]?.stringValue ?? "" }
        #expect(states.filter { $0 == "started" }.count == 4 && states.filter { $0 == "finished" }.count == 3 && states.contains("failed"))
        #expect(rig.events("preload.progress", of: 1).last?["progress"] == 1.0)

        // Preloaded: a page's fetch now comes from the cache, and a second preload finds them.
        let fetched = try await rig.call("fetch", ["url": "http://a.example/fresh/100"], id: 2)
        #expect(fetched["body"]?["cache"]?["status"] == "hit")
        let again = try await rig.preload(["urls": .array(Array(urls.prefix(2)))], id: 3)
        #expect(results(again) == ["http://a.example/fresh/100 cached", "http://a.example/fresh/200 cached"])
        #expect(rig.rig.upstream.count == 4)
    }

    @Test func preloadsThePageLinksResolvedAgainstThePage() async throws {
        let page = """
            <html><head><base href="/assets/"><link rel="preload" href="../fresh/10" as="script">
            <link rel="prefetch" href="/fresh/30"><link rel="modulepreload" href="https://b.example/fresh/20" fetchpriority="high">
            <link rel="preload" href="javascript:alert(1)"></head></html>
            """
        let rig = PreloadRig(page: page)
        let reply = try await rig.preload(["page": "http://a.example/page"])
        // By priority: the high modulepreload, the preload, then the prefetch.
        #expect(results(reply) == [
            "javascript:alert(1) skipped", "https://b.example/fresh/20 stored", "http://a.example/fresh/10 stored", "http://a.example/fresh/30 stored",
        ])
        #expect(reply["sources"]?.arrayValue?[0] == ["kind": "page", "url": "http://a.example/page", "status": 200, "resources": 4])
        // What it stored is what page.preloaded asks for, in the order fetched.
        #expect(rig.pages.resources(of: "http://a.example/page") == [
            "https://b.example/fresh/20", "http://a.example/fresh/10", "http://a.example/fresh/30",
        ])
        // Without includePage the page itself is not stored.
        let page1 = try await rig.call("fetch", ["url": "http://a.example/page", "cache": "only-if-cached"], id: 2)
        #expect(page1["error"]?["code"] == "not_cached")

        // Resources preloaded for another page (a hidden page of links, urls) are that page's.
        _ = try await rig.preload(["urls": ["http://a.example/fresh/40"], "forPage": "http://a.example/app#x"], id: 5)
        #expect(rig.pages.resources(of: "http://a.example/app") == ["http://a.example/fresh/40"])
        _ = try await rig.preload(["page": "http://a.example/page", "forPage": "http://a.example/app"], id: 6)
        #expect(rig.pages.resources(of: "http://a.example/app").count == 3)
        let included = try await rig.preload(["page": "http://a.example/page", "includePage": true, "priority": "listed"], id: 3)
        #expect(results(included).first == "http://a.example/page stored")
        // The page itself is not among its resources, and the latest preload's order counts.
        #expect(rig.pages.resources(of: "http://a.example/page") == [
            "http://a.example/fresh/10", "http://a.example/fresh/30", "https://b.example/fresh/20",
        ])
        let page2 = try await rig.call("fetch", ["url": "http://a.example/page", "cache": "only-if-cached"], id: 4)
        #expect(page2["ok"] == true)
    }

    @Test func preloadsAManifestAndReportsABadOne() async throws {
        let rig = PreloadRig(manifest: #"{"resources": ["../fresh/5", {"url": "/fresh/6", "priority": 9}, "../fresh/5"]}"#)
        let reply = try await rig.preload(["manifest": "http://a.example/dir/manifest"])
        #expect(results(reply) == ["http://a.example/fresh/6 stored", "http://a.example/fresh/5 stored"])
        #expect(reply["sources"]?.arrayValue?[0]["resources"] == 3)

        let bad = PreloadRig(manifest: #"{"files": []}"#)
        let badReply = try await bad.preload(["manifest": "http://a.example/manifest", "urls": ["http://a.example/fresh/1"]])
        #expect(badReply["sources"]?.arrayValue?[0]["error"]?["code"] == "bad_request")
        #expect(results(badReply) == ["http://a.example/fresh/1 stored"])
    }

    @Test func countAndByteBudgetsSkipTheRest() async throws {
        let rig = PreloadRig()
        let urls = JSONValue.array((1...5).map { .string("http://a.example/fresh/\(100 + $0)") })
        let counted = try await rig.preload(["urls": urls, "maxCount": 2])
        #expect(counted["totals"]?["stored"] == 2 && counted["totals"]?["skipped"] == 3)
        #expect(counted["resources"]?.arrayValue?[4]["reason"] == "max_count")

        let bytes = PreloadRig()
        let budgeted = try await bytes.preload(["urls": urls, "maxBytes": 150, "concurrency": 1])
        // 101 bytes < 150 lets a second start; 203 >= 150 stops the rest.
        #expect(results(budgeted).map { $0.split(separator: " ").last! } == ["stored", "stored", "skipped", "skipped", "skipped"])
        #expect(budgeted["resources"]?.arrayValue?[2]["reason"] == "max_bytes")
        #expect(bytes.rig.upstream.count == 2)
    }

    @Test func concurrencyPerHostAndPriorityOrder() async throws {
        // Each request is in flight long enough that the next one starts meanwhile, on a loaded
        // machine too (with 30 ms, a slow start of the second could leave the peak at 1).
        let rig = PreloadRig(delay: .milliseconds(300))
        let urls = JSONValue.array((1...6).map { .string("http://h\($0 % 2).example/fresh/\($0)") })
        _ = try await rig.preload(["urls": urls, "concurrency": 4, "perHost": 2])
        #expect(rig.inFlight.peakPerHost.values.allSatisfy { $0 <= 2 })
        #expect(rig.inFlight.peakTotal <= 4 && rig.inFlight.peakTotal >= 2)

        let ordered = PreloadRig()
        _ = try await ordered.preload(["urls": ["http://a.example/fresh/1", ["url": "http://a.example/fresh/2", "priority": 7], "http://a.example/fresh/3"], "concurrency": 1])
        #expect(ordered.rig.upstream.requests.map(\.url) == ["http://a.example/fresh/2", "http://a.example/fresh/1", "http://a.example/fresh/3"])
    }

    @Test func urlRulesApplyToPreloads() async throws {
        let rig = PreloadRig(rules: URLRules(allow: ["*"], deny: ["*/fresh/2"]))
        let reply = try await rig.preload(["urls": ["http://a.example/fresh/1", "http://a.example/fresh/2"]])
        #expect(results(reply) == ["http://a.example/fresh/1 stored", "http://a.example/fresh/2 failed"])
        #expect(reply["resources"]?.arrayValue?[1]["error"]?["code"] == "forbidden")
        #expect(rig.rig.upstream.count == 1)
    }

    @Test func groupProgressCountsThePreload() async throws {
        let rig = PreloadRig()
        _ = try await rig.preload(["urls": ["http://a.example/fresh/1", "http://a.example/fresh/2"], "group": "warm"])
        let groups = rig.sink.jsonFrames.filter { $0["name"] == "group.progress" }.compactMap { $0["body"] }
        #expect(groups.last?["group"] == "warm" && groups.last?["progress"] == 1.0 && groups.last?["requests"] == 2)
    }
}
