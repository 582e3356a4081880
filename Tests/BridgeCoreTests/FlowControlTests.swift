import BridgeCore
import Foundation
import Synchronization
import Testing

/// The credit window (docs/PROTOCOL.md, "Flow control"): the broker reads a response body only
/// while the client has granted room for it, one post at a time.
@Suite struct FlowControlTests {
    let sink = RecordingSink()

    func bodyFrames(_ id: Int) -> Int {
        sink.frames.filter { frame in
            frame.binary && frame.bytes.count > 10 && frame.bytes[2..<10].reduce(0) { $0 << 8 | Int($1) } == id
        }.count
    }

    func settle() async throws { try await Task.sleep(for: .milliseconds(200)) }

    /// Waits (up to 20 s, the machine may be loaded) until `frames` body frames of post `id` went out,
    /// then a little longer, so that a frame too many would be seen too.
    func waitFor(_ frames: Int, of id: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while bodyFrames(id) < frames, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        try await settle()
    }

    @Test func theBodyStopsWhenTheCreditIsUsedUpAndGoesOnWithMore() async throws {
        let pulled = Mutex(0)
        let chunks = (0..<10).map { _ in [UInt8](repeating: 1, count: 1000) }
        let upstream = ScriptedUpstream { request in
            if request.url.hasSuffix("/other") { return ScriptedUpstream.response(headers: [("Content-Type", "text/plain")], chunks: [Array("other".utf8)]) }
            let queue = Mutex(chunks)
            return UpstreamResponse(status: 200, statusText: "OK", headers: ["Content-Type": "application/octet-stream"], body: UpstreamResponseBody {
                queue.withLock { queue in
                    guard !queue.isEmpty else { return nil }
                    pulled.withLock { $0 += 1 }
                    return queue.removeFirst()
                }
            })
        }
        let connection = Broker.testing(upstream: upstream).connect(sink: sink, info: ConnectionInfo(origin: nil, peer: "t"))
        #expect(sink.jsonFrames.first?["features"] == ["credit"], "the hello says the broker takes credit frames")
        post(connection, ["type": "post", "name": "fetch", "id": 1, "body": ["url": "http://e.com/big", "responseBody": "binary", "window": 2500]])
        try await waitFor(3, of: 1)
        #expect(bodyFrames(1) == 3, "2500 bytes of credit: three 1000-byte chunks, the last one over it")
        #expect(pulled.withLock { $0 } == 4, "and the upstream body is read one chunk ahead at most, then not at all")

        post(connection, ["type": "post", "name": "fetch", "id": 2, "body": ["url": "http://e.com/other"]])
        #expect(try await sink.reply(2)["body"]?["body"] == "other", "another post on the connection is not held up")

        post(connection, ["type": "credit", "id": 1, "bytes": 2000])
        try await waitFor(5, of: 1)
        #expect(bodyFrames(1) == 5)
        post(connection, ["type": "credit", "id": 1, "bytes": 1_048_576])
        let reply = try await sink.reply(1)
        #expect(reply["body"]?["bodyBytes"] == 10000)
        post(connection, ["type": "credit", "id": 1, "bytes": 5])  // The post ended: ignored.
        post(connection, ["type": "credit", "id": 1])
        let deadline = ContinuousClock.now + .seconds(20)
        while sink.jsonFrames.last?["type"] != "error", ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(sink.jsonFrames.last?["type"] == "error", "credit without bytes is a bad message")
    }

    @Test func cancellingAPostThatWaitsForCreditEndsIt() async throws {
        let upstream = ScriptedUpstream { _ in
            ScriptedUpstream.response(headers: [("Content-Type", "application/octet-stream")], chunks: (0..<5).map { _ in [UInt8](repeating: 2, count: 100) })
        }
        let connection = Broker.testing(upstream: upstream).connect(sink: sink, info: ConnectionInfo(origin: nil, peer: "t"))
        post(connection, ["type": "post", "name": "fetch", "id": 7, "body": ["url": "http://e.com/", "responseBody": "binary", "window": 100]])
        try await settle()
        post(connection, ["type": "cancel", "id": 7])
        #expect(try await sink.reply(7)["error"]?["code"] == "cancelled")
    }

    @Test func windowMustBePositive() async throws {
        let connection = Broker.testing(upstream: ScriptedUpstream { _ in ScriptedUpstream.response() }).connect(sink: sink, info: ConnectionInfo(origin: nil, peer: "t"))
        post(connection, ["type": "post", "name": "fetch", "id": 3, "body": ["url": "http://e.com/", "window": 0]])
        #expect(try await sink.reply(3)["error"]?["code"] == "bad_request")
    }
}
