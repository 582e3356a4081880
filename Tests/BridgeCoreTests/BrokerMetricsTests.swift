import BridgeCore
import Synchronization
import Testing

/// The metrics port: what the broker reports, through a recording fake.
@Suite struct BrokerMetricsTests {
    final class Recorder: BrokerMetrics, PostMeter {
        let events = Mutex<[String]>([])
        func postMeter(handler name: String) -> any PostMeter { Meter(name: name, recorder: self) }
        func requestEnded(source: RequestTrace.Source, cache: String?, failed: Bool, duration: Duration) {
            events.withLock { $0.append("request \(source.rawValue) \(cache ?? "-") \(failed ? "failed" : "ok")") }
        }
        func preloadResourceEnded(result: String) { events.withLock { $0.append("preload \(result)") } }
        func ended(_ error: ErrorCode?) {}

        struct Meter: PostMeter {
            let name: String
            let recorder: Recorder
            func ended(_ error: ErrorCode?) { recorder.events.withLock { $0.append("post \(name) \(error?.rawValue ?? "ok")") } }
        }
    }

    @Test func postsRequestsAndPreloadsAreReported() async throws {
        let recorder = Recorder()
        let broker = Broker(metrics: recorder)
        let upstream = ScriptedUpstream { request in
            request.url.hasSuffix("/missing") ? ScriptedUpstream.response(status: 404) : ScriptedUpstream.response(chunks: [[1, 2]])
        }
        let fetch = FetchHandler(upstream: upstream, rules: URLRules(allow: ["*"]))
        broker.register("fetch", fetch)
        broker.register("preload", PreloadHandler(fetch: fetch))
        broker.register("slow") { _ in try await Task.sleep(for: .seconds(30)); return nil }
        let sink = RecordingSink()
        let connection = broker.connect(sink: sink, info: ConnectionInfo(origin: nil, peer: "t"))
        post(connection, ["type": "post", "name": "echo", "id": 1, "body": 1])
        post(connection, ["type": "post", "name": "fetch", "id": 2, "body": ["url": "http://e.com/missing"]])
        post(connection, ["type": "post", "name": "fetch", "id": 3, "body": ["url": "ftp://e.com/"]])
        post(connection, ["type": "post", "name": "preload", "id": 4, "body": ["urls": ["http://e.com/a"]]])
        post(connection, ["type": "post", "name": "slow", "id": 5])
        for id in 1...4 { _ = try await sink.reply(id) }
        post(connection, ["type": "cancel", "id": 5])
        _ = try await sink.reply(5)
        let events = recorder.events.withLock { $0 }
        for expected in [
            "post echo ok", "post fetch ok", "post fetch bad_request", "post preload ok", "post slow cancelled",
            "request fetch bypass ok", "request preload bypass ok", "preload uncacheable",
        ] {
            #expect(events.contains(expected), "\(expected) in \(events)")
        }
    }
}
