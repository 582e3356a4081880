import BridgeCore
import Foundation
import Synchronization

/// A broker with `fetch`, `preload` and `progress.subscribe` over a memory cache and a
/// scripted origin with these routes:
/// `/fresh/N` (N bytes, max-age=60), `/nostore` (no-store), `/fail` (network error),
/// `/page` (the HTML in `page`), `.../manifest` (the JSON in `manifest`).
struct PreloadRig {
    let sink = RecordingSink()
    let rig: CacheRig
    let broker: Broker
    let connection: BrokerConnection
    let inFlight: InFlightCounter
    /// What the preloads of pages recorded.
    let pages = PreloadedPages()

    init(page: String = "", manifest: String = "", rules: URLRules = URLRules(allow: ["*"]), delay: Duration = .zero) {
        let inFlight = InFlightCounter()
        self.inFlight = inFlight
        rig = CacheRig { request in
            let path = URLComponents(string: request.url)?.path ?? ""
            inFlight.enter(URLComponents(string: request.url)?.host ?? "")
            defer { inFlight.leave(URLComponents(string: request.url)?.host ?? "") }
            if delay > .zero { try await Task.sleep(for: delay) }
            if path.hasPrefix("/fresh/") {
                let size = Int(path.dropFirst(7)) ?? 0
                return response(200, ["cache-control": "max-age=60", "content-length": "\(size)"], body: String(repeating: "x", count: size), chunk: 64)
            }
            if path.hasSuffix("/manifest") { return response(200, ["content-type": "application/json"], body: manifest) }
            switch path {
            case "/nostore": return response(200, ["cache-control": "no-store"], body: "private")
            case "/fail": throw BridgeError(.network, "connection refused")
            case "/page": return response(200, ["content-type": "text/html", "cache-control": "max-age=60"], body: page, chunk: 100)
            default: return response(404, [:], body: "no")
            }
        }
        broker = Broker()
        let fetch = FetchHandler(upstream: rig.upstream, rules: rules, cache: rig.cache)
        broker.register("fetch", fetch)
        broker.register("preload", PreloadHandler(fetch: fetch, pages: pages))
        broker.register("progress.subscribe", ProgressSubscribeHandler(hub: broker.progress))
        connection = broker.connect(sink: sink, info: ConnectionInfo(origin: nil, peer: "t"))
    }

    /// Posts `name` with `body` as post `id` and returns the reply frame.
    func call(_ name: String, _ body: JSONValue, id: Int) async throws -> JSONValue {
        post(connection, ["type": "post", "name": .string(name), "id": .integer(id), "body": body])
        return try await sink.reply(id)
    }

    /// The `preload` reply body, failing the test when the reply is an error.
    func preload(_ body: JSONValue, id: Int = 1) async throws -> JSONValue {
        let reply = try await call("preload", body, id: id)
        guard reply["ok"] == true, let body = reply["body"] else { throw BridgeError(.internal, "preload failed: \(reply.jsonString)") }
        return body
    }

    /// Events of post `id` named `name`, in order.
    func events(_ name: String, of id: Int) -> [JSONValue] {
        sink.jsonFrames.filter { $0["type"] == "event" && $0["id"]?.intValue == id && $0["name"]?.stringValue == name }.compactMap { $0["body"] }
    }
}

/// Counts requests in flight per host and remembers the most at once.
final class InFlightCounter: Sendable {
    private let state = Mutex<(now: [String: Int], peak: [String: Int], total: Int, peakTotal: Int)>(([:], [:], 0, 0))

    func enter(_ host: String) {
        state.withLock { state in
            state.now[host, default: 0] += 1
            state.total += 1
            state.peak[host] = max(state.peak[host] ?? 0, state.now[host]!)
            state.peakTotal = max(state.peakTotal, state.total)
        }
    }

    func leave(_ host: String) {
        state.withLock { state in
            state.now[host, default: 0] -= 1
            state.total -= 1
        }
    }

    var peakPerHost: [String: Int] { state.withLock { $0.peak } }
    var peakTotal: Int { state.withLock { $0.peakTotal } }
}

/// A sink whose `waitUntilWritable` suspends until `open()`: a client that reads nothing.
final class GatedSink: ConnectionSink {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>], frames: [[UInt8]])>((false, [], []))

    func send(_ bytes: [UInt8], binary: Bool) { state.withLock { $0.frames.append(bytes) } }
    func waitUntilWritable() async {
        await withCheckedContinuation { continuation in
            let open = state.withLock { state in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }
    func close(code: UInt16, reason: String) {}
    func pauseReading(_ paused: Bool) {}

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    var events: [JSONValue] { state.withLock { $0.frames }.compactMap { try? JSONParser.parse($0) } }
}
