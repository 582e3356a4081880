import BridgeCore
import Foundation
import Synchronization
import Testing

/// 307 and 308 resend a body that came as binary frames, as a browser resends a body it holds whole.
@Suite struct RedirectBodyTests {
    let sink = RecordingSink()

    /// An upstream that answers `status` to /start (after reading `readFirst` chunks of the body,
    /// or all of it when nil) and echoes method and body size at /end; it records every body.
    static func redirecting(_ status: Int, readFirst: Int?, bodies: Bodies) -> ScriptedUpstream {
        ScriptedUpstream { request in
            var received: [UInt8] = []
            if case .stream(_, let next) = request.body {
                var count = 0
                let limit = request.url.hasSuffix("/start") ? readFirst : nil
                while limit.map({ count < $0 }) ?? true, let chunk = try await next() {
                    received += chunk
                    count += 1
                }
            }
            bodies.add(received)
            if request.url.hasSuffix("/start") { return ScriptedUpstream.response(status: status, headers: [("Location", "/end")]) }
            return ScriptedUpstream.response(headers: [("Content-Type", "text/plain")], chunks: [Array("\(request.method) \(received.count)".utf8)])
        }
    }

    func send(_ upstream: ScriptedUpstream, id: Int, length: Int?, chunks: [[UInt8]]) async throws -> JSONValue {
        let connection = Broker.testing(upstream: upstream).connect(sink: sink, info: ConnectionInfo(origin: nil, peer: "t"))
        var announced: JSONValue = ["binary": true]
        if let length { announced = ["binary": true, "length": .integer(length)] }
        post(connection, ["type": "post", "name": "fetch", "id": .integer(id), "body": ["url": "http://e.com/start", "method": "POST", "body": announced]])
        for (index, chunk) in chunks.enumerated() {
            connection.receive(binary: BinaryFrameHeader(id: id, isEnd: index == chunks.count - 1).frame(payload: chunk))
        }
        return try await sink.reply(id)
    }

    @Test(arguments: [307, 308])
    func aBodyWithALengthIsSentAgain(status: Int) async throws {
        let bodies = Bodies()
        let chunks: [[UInt8]] = [[1, 2, 3], [4, 5], [6]]
        let reply = try await send(Self.redirecting(status, readFirst: nil, bodies: bodies), id: 1, length: 6, chunks: chunks)
        #expect(reply["body"]?["status"] == 200, "\(reply)")
        #expect(reply["body"]?["body"] == "POST 6")
        #expect(reply["body"]?["redirected"] == true)
        #expect(bodies.all == [[1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6]])
    }

    @Test func aRedirectBeforeTheBodyWasReadSendsAllOfItAfterwards() async throws {
        let bodies = Bodies()
        let reply = try await send(Self.redirecting(307, readFirst: 1, bodies: bodies), id: 2, length: 6, chunks: [[1, 2, 3], [4, 5], [6]])
        #expect(reply["body"]?["body"] == "POST 6", "\(reply)")
        #expect(bodies.all == [[1, 2, 3], [1, 2, 3, 4, 5, 6]])
    }

    @Test func aStreamedBodyWithoutLengthFailsAsInABrowser() async throws {
        let bodies = Bodies()
        let reply = try await send(Self.redirecting(308, readFirst: nil, bodies: bodies), id: 3, length: nil, chunks: [[1, 2], [3]])
        #expect(reply["error"]?["code"] == "network")
        #expect(reply["error"]?["message"]?.stringValue?.contains("no length") == true)
    }

    @Test func aBodyOverTheReplayLimitFails() async throws {
        let bodies = Bodies()
        let chunk = [UInt8](repeating: 7, count: 256 * 1024)
        let chunks = Array(repeating: chunk, count: RequestBodyTapeLimit.chunks + 1)
        let reply = try await send(Self.redirecting(307, readFirst: nil, bodies: bodies), id: 4, length: chunk.count * chunks.count, chunks: chunks)
        #expect(reply["error"]?["code"] == "network")
        #expect(reply["error"]?["message"]?.stringValue?.contains("not kept") == true, "\(reply)")
        #expect(bodies.all.map(\.count) == [chunk.count * chunks.count], "the first hop got the whole body")
    }

    @Test func a303StillDropsTheBody() async throws {
        let bodies = Bodies()
        let reply = try await send(Self.redirecting(303, readFirst: nil, bodies: bodies), id: 5, length: 2, chunks: [[1, 2]])
        #expect(reply["body"]?["body"] == "GET 0")
    }
}

/// The bodies an upstream received, one per request.
final class Bodies: Sendable {
    private let list = Mutex<[[UInt8]]>([])
    func add(_ body: [UInt8]) { list.withLock { $0.append(body) } }
    var all: [[UInt8]] { list.withLock { $0 } }
}

/// 1 MiB in 256 KiB chunks: the most a redirect resends.
enum RequestBodyTapeLimit {
    static let chunks = (1 << 20) / (256 * 1024)
}
