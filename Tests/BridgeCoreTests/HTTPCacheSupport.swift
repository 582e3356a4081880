import Synchronization
import Testing
@testable import BridgeCore

/// A wall clock moved by hand.
final class TestClock: BrokerClock {
    private let time: Mutex<Double>
    init(_ start: Double = T0) { time = Mutex(start) }
    func now() -> Double { time.withLock { $0 } }
    func set(_ value: Double) { time.withLock { $0 = value } }
}

/// A response with a body in memory, sent in chunks of `chunk` bytes.
func response(_ status: Int = 200, _ headers: HeaderList, body: String = "hello", chunk: Int = 3) -> UpstreamResponse {
    UpstreamResponse(status: status, statusText: "", headers: headers, body: bodyStream(Array(body.utf8), chunk: chunk))
}

func bodyStream(_ bytes: [UInt8], chunk: Int, failAfter: Int? = nil) -> UpstreamResponseBody {
    let offset = Mutex(0)
    return UpstreamResponseBody {
        let (slice, fail): ([UInt8]?, Bool) = offset.withLock { start in
            if let failAfter, start >= failAfter { return (nil, true) }
            guard start < bytes.count else { return (nil, false) }
            let end = min(bytes.count, start + chunk)
            defer { start = end }
            return (Array(bytes[start..<end]), false)
        }
        if fail { throw BridgeError(.network, "reset midway") }
        return slice
    }
}

func request(_ url: String = url, method: String = "GET", _ headers: HeaderList = HeaderList()) -> UpstreamRequest {
    UpstreamRequest(url: url, method: method, headers: headers, deadline: .now + .seconds(30))
}

func readBody(_ exchange: CachedExchange) async throws -> String {
    var bytes: [UInt8] = []
    while let chunk = try await exchange.response.body.next() { bytes += chunk }
    return String(decoding: bytes, as: UTF8.self)
}

/// A cache over a memory store, a test clock at T0 and `upstream`.
struct CacheRig {
    let clock = TestClock()
    let store: MemoryCacheStore
    let upstream: ScriptedUpstream
    let cache: HTTPCache

    /// `storeOverride` is the store the cache uses instead of `store` (a wrapper around it).
    init(store: MemoryCacheStore = MemoryCacheStore(), storeOverride: (any CacheStore)? = nil, _ responder: @escaping ScriptedUpstream.Responder) {
        self.store = store
        upstream = ScriptedUpstream(responder)
        cache = HTTPCache(store: storeOverride ?? store, upstream: upstream, clock: clock)
    }

    /// Sends a request through the cache, reads its body, returns (status, body, exchange).
    @discardableResult
    func fetch(_ request: UpstreamRequest = request(), mode: CacheMode = .default) async throws -> (ReplyCacheStatus, String, CachedExchange) {
        let exchange = try await cache.send(request, mode: mode)
        let body = try await readBody(exchange)
        await cache.waitForPendingWrites()
        return (exchange.status, body, exchange)
    }
}

/// An origin that answers `If-None-Match: "v1"` with 304 and anything else with 200 + `headers`.
func validatingOrigin(_ headers: HeaderList, clock: TestClock? = nil, body: String = "hello") -> ScriptedUpstream.Responder {
    { request in
        if request.headers.first("if-none-match") == "\"v1\"" {
            return response(304, ["etag": "\"v1\"", "cache-control": headers.first("cache-control") ?? ""], body: "")
        }
        return response(200, headers, body: body)
    }
}
