import BridgeCore
import Testing

@Suite struct ProgressHubTests {
    @Test func aSubscriberSeesEveryRequestOfEveryConnection() async throws {
        let rig = PreloadRig()
        let watcher = RecordingSink()
        let watching = rig.broker.connect(sink: watcher, info: ConnectionInfo(origin: nil, peer: "w"))
        post(watching, ["type": "post", "name": "progress.subscribe", "id": 1])
        let subscribed = try await watcher.reply(1)
        #expect(subscribed["body"]?["subscribed"] == true && subscribed["body"]?["stats"]?["started"] == 0)

        _ = try await rig.call("fetch", ["url": "http://a.example/fresh/300", "group": "page"], id: 1)
        _ = try await rig.preload(["urls": ["http://a.example/fresh/300"]], id: 2)
        _ = try await rig.call("fetch", ["url": "http://a.example/fail"], id: 3)

        let requestEvents = { watcher.jsonFrames.filter { $0["name"] == "progress.request" && $0["id"] == nil }.compactMap { $0["body"] } }
        try await waitUntil { requestEvents().filter { ["finished", "failed"].contains($0["phase"]?.stringValue) }.count == 3 }
        let first = requestEvents().filter { $0["request"] == 1 }
        #expect(first.map { $0["phase"]?.stringValue ?? "" }.filter { $0 != "progress" } == ["queued", "connecting", "response", "finished"])
        let finished = try #require(first.last)
        #expect(finished["source"] == "fetch" && finished["status"] == 200 && finished["cache"] == "miss" && finished["loaded"] == 300)
        #expect(finished["total"] == 300 && finished["group"] == "page" && finished["url"] == "http://a.example/fresh/300")
        #expect(finished["elapsedMs"]?.intValue != nil && finished["connection"] == .integer(rig.connection.number))
        let preloaded = requestEvents().filter { $0["request"] == 2 }.last
        #expect(preloaded?["source"] == "preload" && preloaded?["cache"] == "hit")
        let failed = requestEvents().filter { $0["request"] == 3 }.last
        #expect(failed?["phase"] == "failed" && failed?["error"]?["code"] == "network")
        let group = watcher.jsonFrames.filter { $0["name"] == "progress.group" }.last?["body"]
        #expect(group?["group"] == "page" && group?["progress"] == 1.0 && group?["connection"] == .integer(rig.connection.number))
        #expect(rig.broker.progress.totals.finished == 2 && rig.broker.progress.totals.failed == 1)
        #expect(rig.broker.progress.totals.cache == ["miss": 1, "hit": 1])

        // Closing the connection ends its subscription.
        #expect(rig.broker.progress.subscriberCount == 1)
        watching.closed()
        #expect(rig.broker.progress.subscriberCount == 0)
    }

    @Test func aSlowSubscriberGetsABoundedQueueCoalescedProgressAndADroppedCount() async throws {
        let hub = ProgressHub(queueLimit: 8, statsInterval: .seconds(3600))
        let sink = GatedSink()
        let connection = Broker().connect(sink: sink, info: ConnectionInfo(origin: nil, peer: "slow"))
        let subscriber = hub.subscribe(connection: connection)

        // One request whose progress is reported three times while the client reads nothing.
        let watched = hub.begin(source: .fetch, url: "http://a/watched", method: "GET", group: nil, connection: 1)
        watched.response(status: 200, cache: .miss, total: 300)
        for loaded in [100, 200, 300] {
            watched.progress(loaded: loaded)
            try await Task.sleep(for: .milliseconds(60))
        }
        // Then far more requests than the queue holds.
        for index in 0..<1000 {
            hub.begin(source: .fetch, url: "http://a/\(index)", method: "GET", group: nil, connection: 1).finish()
        }
        #expect(hub.queueDepths == [8])
        #expect(subscriber.depth == 8)
        let dropped = subscriber.droppedTotal
        #expect(dropped == 2000 - 4)

        sink.open()
        try await waitUntil { sink.events.contains { $0["name"] == "progress.dropped" } }
        let events = sink.events.filter { $0["type"] == "event" }
        #expect(events.count == 9, "\(events.map(\.jsonString))")
        #expect(events.last?["body"] == ["count": .integer(dropped), "total": .integer(dropped)])
        let progress = events.filter { $0["body"]?["phase"] == "progress" }
        #expect(progress.count == 1 && progress.first?["body"]?["loaded"] == 300)

        // Once drained, the subscriber receives again.
        watched.finish()
        try await waitUntil { sink.events.contains { $0["body"]?["phase"] == "finished" && $0["body"]?["url"] == "http://a/watched" } }
        hub.unsubscribe(connection: connection)
    }
}
