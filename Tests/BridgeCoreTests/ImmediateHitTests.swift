import BridgeCore
import Testing

/// Fresh cache hits answered at once on the connection's thread (`FetchHandler.handleImmediately`).
struct ImmediateHitTests {
    @Test func aFreshHitIsAnsweredBeforeReceiveReturnsWithEventsHeadersAndAge() async throws {
        let hit = HitRig()
        let first = try await hit.fetch("/fresh/5", id: 1)
        #expect(first["body"]?["cache"]?["status"] == "miss")
        hit.rig.clock.set(T0 + 10)
        hit.send("/fresh/5", id: 2)
        // No await between the post and this check: the reply was sent during `receive`.
        let reply = try #require(hit.replyNow(2))
        #expect(hit.sequence(of: 2) == ["response", "progress", "reply"])
        let body = try #require(reply["body"])
        #expect(body["cache"] == ["status": "hit", "age": 10])
        #expect(body["body"] == "xxxxx" && body["bodyEncoding"] == "text" && body["bodyBytes"] == 5)
        // The rig's origin sends no reason phrase; the hit answers the stored (empty) one.
        #expect(body["status"] == 200 && body["statusText"] == "" && body["redirected"] == false)
        #expect(first["body"]?["statusText"] == "")
        #expect(body["url"] == "http://a.example/fresh/5")
        let headers = try #require(body["headers"]?.arrayValue?.compactMap { $0.arrayValue?.compactMap(\.stringValue) })
        #expect(headers.contains(["age", "10"]))
        #expect(headers.contains(["cache-status", "bridge-broker; hit; ttl=50"]))
        #expect(!headers.contains { $0.first == "set-cookie" })
        let response = try #require(hit.events("response", of: 2).first)
        #expect(response["headers"] == body["headers"] && response["cache"] == body["cache"])
        #expect(hit.events("progress", of: 2) == [["phase": "download", "loaded": 5, "total": 5]])
        #expect(hit.rig.upstream.count == 1 && hit.rig.cache.statistics.hits == 1)
    }

    @Test func theImmediateHitSendsWhatTheTaskPathSends() async throws {
        let french: [(String, JSONValue)] = [("headers", [["Accept-Language", "fr"], ["accept", "*/*"]])]
        let cases: [(String, [(String, JSONValue)])] = [
            ("/fresh/300", []), ("/fresh/300", [("responseBody", "base64")]), ("/fresh/300", [("responseBody", "binary")]),
            ("/fresh/300", [("responseBody", "none")]), ("/fresh/300", [("progress", false)]), ("/aged", []),
            ("/aged", [("headers", [["accept", "*/*"]]), ("responseBody", "text")]), ("/vary", french), ("/fresh/0", [("responseBody", "binary")]),
        ]
        for (path, extra) in cases {
            let fast = HitRig(), slow = HitRig(immediate: false)
            for rig in [fast, slow] {
                // A body that is not read (responseBody none) is not stored: prime with the headers only.
                _ = try await rig.fetch(path, id: 1, extra.filter { $0.0 == "headers" })
                rig.rig.clock.set(T0 + 7)
                _ = try await rig.fetch(path, id: 2, extra)
                #expect(rig.replyNow(2)?["body"]?["cache"]?["status"] == "hit", "\(path) \(extra)")
            }
            #expect(fast.replyNow(2) == slow.replyNow(2))
            #expect(fast.events("response", of: 2) == slow.events("response", of: 2))
            // The task path may add a progress event at the start; the final count is the same.
            #expect(fast.events("progress", of: 2).last == slow.events("progress", of: 2).last)
            // Binary bodies: the same bytes, ending with END (the task path sends END on its own).
            #expect(fast.sequence(of: 2).filter { $0 != "progress" && $0 != "binary" } == slow.sequence(of: 2).filter { $0 != "progress" && $0 != "binary" })
            #expect(fast.binaryBody(of: 2) == slow.binaryBody(of: 2))
            #expect(fast.rig.cache.statistics == slow.rig.cache.statistics)
        }
    }

    @Test func twoStoredVariantsAreChosenByThePlanner() async throws {
        let hit = HitRig()
        for (id, language) in [(1, "fr"), (2, "en")] {
            _ = try await hit.fetch("/vary", id: id, [("headers", [["accept-language", .string(language)]])])
        }
        hit.send("/vary", id: 3, [("headers", [["accept-language", "fr"]])])
        hit.send("/vary", id: 4, [("headers", [["accept-language", "en"]])])
        #expect(hit.replyNow(3)?["body"]?["body"] == "lang=fr" && hit.replyNow(4)?["body"]?["body"] == "lang=en")
        #expect(hit.replyNow(4)?["body"]?["cache"]?["status"] == "hit" && hit.rig.upstream.count == 2)
    }

    @Test func aBinaryHitSendsOneFrameWithEndThenTheFinalProgress() async throws {
        let hit = HitRig()
        _ = try await hit.fetch("/image", id: 1)
        hit.send("/image", id: 2, [("responseBody", "binary")])
        let reply = try #require(hit.replyNow(2))
        #expect(hit.sequence(of: 2) == ["response", "binary", "progress", "reply"])
        let frame = try #require(hit.sink.frames.last { $0.binary })
        #expect(frame.bytes[1] == BinaryFrameHeader.endFlag && Array(frame.bytes[10...]) == Array("\u{1}\u{2}png".utf8))
        #expect(reply["body"]?["bodyEncoding"] == "binary" && reply["body"]?["bodyBytes"] == 5 && reply["body"]?["body"] == .null)
        // Without responseBody, a binary type comes as base64.
        hit.send("/image", id: 3)
        #expect(hit.replyNow(3)?["body"]?["bodyEncoding"] == "base64")
    }

    @Test func aClientOverItsHighWaterMarkGetsItsHitFromTheTaskOnceThereIsRoom() async throws {
        let hit = HitRig()
        _ = try await hit.fetch("/fresh/5", id: 1)
        hit.sink.isWritable = false
        hit.send("/fresh/5", id: 2)
        #expect(hit.replyNow(2) == nil)  // not answered at once: the queue is full
        try await Task.sleep(for: .milliseconds(30))
        #expect(hit.replyNow(2) == nil)  // and the task waits for room before it sends
        hit.sink.isWritable = true
        let reply = try await hit.sink.reply(2)
        #expect(reply["body"]?["cache"]?["status"] == "hit" && reply["body"]?["body"] == "xxxxx")
        #expect(hit.rig.upstream.count == 1)
    }

    @Test func staleSwrVaryMismatchAndRevalidatingModesTakeTheTask() async throws {
        let hit = HitRig()
        _ = try await hit.fetch("/fresh/5", id: 1)
        _ = try await hit.fetch("/swr", id: 2)
        _ = try await hit.fetch("/vary", id: 3, [("headers", [["accept-language", "fr"]])])
        let cache = hit.rig.cache
        func immediate(_ path: String, mode: CacheMode = .default, _ headers: HeaderList = HeaderList()) -> Bool {
            cache.immediateHit(url: "http://a.example" + path, headers: headers, mode: mode, bodyLimit: 1 << 20) { _ in true } != nil
        }
        #expect(immediate("/fresh/5") && immediate("/vary", ["accept-language": "fr"]) && immediate("/fresh/5", mode: .forceCache))
        #expect(!immediate("/vary", ["accept-language": "en"]) && !immediate("/vary"))
        #expect(!immediate("/fresh/5", mode: .noCache) && !immediate("/fresh/5", mode: .reload) && !immediate("/fresh/5", mode: .noStore))
        #expect(!immediate("/fresh/5", ["cache-control": "no-cache"]) && !immediate("/fresh/5", ["if-none-match": "\"x\""]))
        #expect(!immediate("/nothing") && cache.statistics.hits == 3)
        hit.rig.clock.set(T0 + 30)
        #expect(!immediate("/swr"))  // stale within stale-while-revalidate: served from the task
        hit.rig.clock.set(T0 + 61)
        #expect(!immediate("/fresh/5"))

        // Through the protocol: the stale one is revalidated upstream, the Vary mismatch fetched.
        let stale = try await hit.fetch("/fresh/5", id: 4)
        #expect(stale["body"]?["cache"]?["status"] == "miss" && hit.rig.upstream.count == 4)
        let other = try await hit.fetch("/vary", id: 5, [("headers", [["accept-language", "en"]])])
        #expect(other["body"]?["body"] == "lang=en" && other["body"]?["cache"]?["status"] == "miss")
    }

    @Test func aStoredRedirectIsFollowedThroughTheTaskUnlessManual() async throws {
        let hit = HitRig()
        // A followed redirect's own body is never read, so only a manual fetch stores the 301.
        _ = try await hit.fetch("/moved", id: 1, [("redirect", "manual")])
        hit.send("/moved", id: 2, [("redirect", "manual")])
        let manual = try #require(hit.replyNow(2))
        #expect(manual["body"]?["status"] == 301 && manual["body"]?["cache"]?["status"] == "hit")
        let followed = try await hit.fetch("/moved", id: 3)
        #expect(followed["body"]?["url"] == "http://a.example/fresh/3" && followed["body"]?["redirected"] == true)
        #expect(hit.rig.upstream.requests.map(\.url) == ["http://a.example/moved", "http://a.example/fresh/3"])
    }

    @Test func theProgressStreamAndGroupProgressSeeAnImmediateHit() async throws {
        let hit = HitRig()
        _ = try await hit.fetch("/fresh/8", id: 1)
        post(hit.connection, ["type": "post", "name": "progress.subscribe", "id": 2])
        _ = try await hit.sink.reply(2)
        hit.send("/fresh/8", id: 3, [("group", "page")])
        #expect(hit.replyNow(3) != nil)
        var events: [JSONValue] = []
        // Up to a deadline, not a number of 5 ms sleeps (2.5 s at best, less than a loaded machine may need).
        let deadline = ContinuousClock.now + .seconds(20)
        while events.last?["body"]?["phase"] != "finished", ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
            events = hit.sink.jsonFrames.filter { $0["name"] == "progress.request" && $0["body"]?["request"] == 2 }
        }
        let phases = events.compactMap { $0["body"]?["phase"]?.stringValue }
        #expect(phases == ["queued", "connecting", "response", "progress", "finished"])
        #expect(events.last?["body"]?["cache"] == "hit" && events.last?["body"]?["loaded"] == 8 && events.last?["body"]?["group"] == "page")
        let group = hit.sink.jsonFrames.filter { $0["name"] == "group.progress" }.compactMap { $0["body"] }
        #expect(group.last?["finished"] == 1 && group.last?["progress"] == 1 && group.last?["loaded"] == 8)
        #expect(hit.broker.progress.totals.cache["hit"] == 1)
    }

    @Test func duplicateIdsCancelAndLimitsStillApply() async throws {
        let hit = HitRig(delay: .milliseconds(1000)) { $0.maxInFlight = 1 }
        _ = try await hit.fetch("/fresh/4", id: 1)
        hit.send("/fresh/9", id: 2)  // a miss, in flight for a second: room for a slow machine
        hit.send("/fresh/4", id: 2)  // would be a hit, but the id is taken
        hit.send("/fresh/4", id: 3)  // would be a hit, but the connection is full
        let duplicate = try #require(hit.sink.jsonFrames.first { $0["type"] == "error" })
        #expect(duplicate["error"]?["code"] == "duplicate_id" && duplicate["duplicateId"] == 2)
        #expect(hit.replyNow(3)?["error"]?["code"] == "too_many_in_flight")
        let first = try await hit.sink.reply(2)
        #expect(first["body"]?["url"] == "http://a.example/fresh/9")

        hit.send("/fresh/4", id: 4)
        post(hit.connection, ["type": "cancel", "id": 4])  // already answered: ignored
        try await Task.sleep(for: .milliseconds(20))
        #expect(hit.sink.jsonFrames.filter { $0["type"] == "reply" && $0["id"] == 4 }.count == 1)
        #expect(hit.replyNow(4)?["ok"] == true && hit.connection.inFlightCount == 0)
    }

    @Test func aBodyOverTheMessageLimitFailsAsTheTaskPathDoes() async throws {
        let hit = HitRig { $0.maxMessageBytes = 100 }
        _ = try await hit.fetch("/fresh/50", id: 1, [("responseBody", "binary")])
        _ = try await hit.fetch("/fresh/101", id: 2, [("responseBody", "binary")])
        #expect(try await hit.fetch("/fresh/101", id: 3)["error"]?["code"] == "too_large")
        hit.send("/fresh/50", id: 4)
        #expect(hit.replyNow(4)?["body"]?["bodyBytes"] == 50)
    }

    @Test func aFreshOnlyMissWithNothingStoredIsAnsweredAtOnceAsTheTaskAnswersIt() async throws {
        let fast = HitRig(), slow = HitRig(immediate: false)
        for rig in [fast, slow] {
            post(rig.connection, ["type": "post", "name": "progress.subscribe", "id": 1])
            _ = try await rig.sink.reply(1)
            rig.send("/fresh/5", id: 2, [("cache", "fresh-only"), ("group", "page")])
        }
        // No await between the post and this check: nothing stored, so no task and no lookup.
        let reply = try #require(fast.replyNow(2))
        #expect(reply["error"]?["code"] == "not_cached")
        #expect(try await slow.sink.reply(2) == reply)
        for rig in [fast, slow] {
            var events: [JSONValue] = []
            let deadline = ContinuousClock.now + .seconds(20)
            while events.last?["body"]?["phase"] != "failed", ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
                events = rig.sink.jsonFrames.filter { $0["name"] == "progress.request" }
            }
            #expect(events.compactMap { $0["body"]?["phase"]?.stringValue } == ["queued", "connecting", "failed"])
            #expect(events.last?["body"]?["url"] == "http://a.example/fresh/5" && events.last?["body"]?["error"]?["code"] == "not_cached")
            let group = rig.sink.jsonFrames.filter { $0["name"] == "group.progress" }.compactMap { $0["body"] }
            #expect(group.last?["finished"] == 1)
            #expect(rig.rig.upstream.count == 0 && rig.broker.progress.totals.failed == 1)
        }

        // Something stored, even stale, is the planner's to decide: the task answers.
        _ = try await fast.fetch("/fresh/5", id: 3)
        fast.rig.clock.set(T0 + 120)
        fast.send("/fresh/5", id: 4, [("cache", "fresh-only")])
        #expect(fast.replyNow(4) == nil)
        #expect(try await fast.sink.reply(4)["error"]?["code"] == "not_cached")
        // only-if-cached asks the store itself: a sure "nothing" is only fresh-only's to take.
        fast.send("/fresh/6", id: 5, [("cache", "only-if-cached")])
        #expect(fast.replyNow(5) == nil)
        #expect(try await fast.sink.reply(5)["error"]?["code"] == "not_cached")
    }
}
