import BridgeCore
import Foundation
import Synchronization

/// A connection sink that records every frame, for tests.
final class RecordingSink: ConnectionSink {
    struct Frame: Sendable {
        let bytes: [UInt8]
        let binary: Bool
        var json: JSONValue? { binary ? nil : try? JSONParser.parse(bytes) }
    }

    private let state = Mutex<(frames: [Frame], paused: [Bool], closed: (UInt16, String)?)>(([], [], nil))

    func send(_ bytes: [UInt8], binary: Bool) { state.withLock { $0.frames.append(Frame(bytes: bytes, binary: binary)) } }
    func waitUntilWritable() async {
        while !isWritable { try? await Task.sleep(for: .milliseconds(1)) }
    }
    /// Tests set it to false to stand for a client whose send queue is over its high-water mark.
    var isWritable: Bool {
        get { writable.withLock { $0 } }
        set { writable.withLock { $0 = newValue } }
    }
    private let writable = Mutex(true)
    /// Tests set it to stand for a transport that writes into frames larger than this.
    var largestIntactFrame: Int {
        get { intact.withLock { $0 } }
        set { intact.withLock { $0 = newValue } }
    }
    private let intact = Mutex(Int.max)
    func close(code: UInt16, reason: String) { state.withLock { $0.closed = (code, reason) } }
    func pauseReading(_ paused: Bool) { state.withLock { $0.paused.append(paused) } }

    var frames: [Frame] { state.withLock { $0.frames } }
    var jsonFrames: [JSONValue] { frames.compactMap(\.json) }
    var pauseChanges: [Bool] { state.withLock { $0.paused } }

    /// The reply to post `id`, waiting up to `timeout` for it.
    func reply(_ id: Int, timeout: Duration = .seconds(120)) async throws -> JSONValue {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let reply = jsonFrames.first(where: { $0["type"]?.stringValue == "reply" && $0["id"]?.intValue == id }) { return reply }
            try await Task.sleep(for: .milliseconds(2))
        }
        throw BridgeError(.timeout, "no reply to \(id); frames: \(jsonFrames.map(\.jsonString))")
    }

    /// Frames of type `type`, waiting until at least `count` arrived.
    func frames(ofType type: String, atLeast count: Int = 1, timeout: Duration = .seconds(120)) async throws -> [JSONValue] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let found = jsonFrames.filter { $0["type"]?.stringValue == type }
            if found.count >= count { return found }
            try await Task.sleep(for: .milliseconds(2))
        }
        throw BridgeError(.timeout, "fewer than \(count) \(type) frames: \(jsonFrames.map(\.jsonString))")
    }
}

/// A scripted origin: answers each request with a closure and records every request.
final class ScriptedUpstream: UpstreamClient {
    typealias Responder = @Sendable (UpstreamRequest) async throws -> UpstreamResponse
    private let script: Responder
    private let seen = Mutex<[UpstreamRequest]>([])

    init(_ script: @escaping Responder) { self.script = script }

    func send(_ request: UpstreamRequest) async throws -> UpstreamResponse {
        // Recorded without its body and the body's replay: their closures hold the post's call,
        // whose connection holds the broker, whose fetch handler holds this upstream. Recorded
        // whole, every request with a body made a cycle that kept its test's broker alive
        // (LeakSanitizer in `make test-asan`, issue #17). No test reads a recorded body.
        var recorded = request
        recorded.body = .none
        recorded.bodyAgain = nil
        seen.withLock { $0.append(recorded) }
        return try await script(request)
    }

    var requests: [UpstreamRequest] { seen.withLock { $0 } }
    var count: Int { seen.withLock { $0.count } }

    /// A response with a body given in chunks.
    static func response(status: Int = 200, headers: [(String, String)] = [], chunks: [[UInt8]] = []) -> UpstreamResponse {
        let queue = Mutex(chunks)
        return UpstreamResponse(status: status, statusText: status == 200 ? "OK" : "Status \(status)", headers: HeaderList(headers.map { (name: $0.0, value: $0.1) }),
                                body: UpstreamResponseBody { queue.withLock { $0.isEmpty ? nil : $0.removeFirst() } })
    }
}

extension Broker {
    /// A broker with `fetch` over `upstream` and everything allowed.
    static func testing(upstream: UpstreamClient, rules: URLRules = URLRules(allow: ["*"]), configure: (inout BrokerConfiguration) -> Void = { _ in }) -> Broker {
        var configuration = BrokerConfiguration()
        configure(&configuration)
        let broker = Broker(configuration: configuration)
        broker.register("fetch", FetchHandler(upstream: upstream, rules: rules))
        return broker
    }
}

func post(_ connection: BrokerConnection, _ frame: JSONValue) {
    connection.receive(text: frame.jsonBytes)
}
