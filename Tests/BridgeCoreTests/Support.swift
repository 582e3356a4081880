@testable import BridgeCore

/// The test clock's origin: every time in the tests is T0 + offset seconds.
let T0: Double = 1_700_000_000
let url = "https://example.com/a"
let planner = CachePlanner()

/// An HTTP-date string for a test time.
func httpDate(_ time: Double) -> String { HTTPDate.format(time) }

/// A GET request with the given headers.
func get(_ headers: HeaderList = HeaderList(), url: String = url) -> CacheRequest {
    CacheRequest(method: "GET", url: url, headers: headers)
}

/// A stored response received at `at` (request sent `delay` seconds earlier), with `Date: at`
/// unless the headers already carry a Date.
func stored(
    _ headers: HeaderList, status: Int = 200, at time: Double = T0, id: String = "e1",
    requestHeaders: HeaderList = HeaderList(), delay: Double = 0, addDate: Bool = true
) -> CachedResponse {
    var all = headers
    if addDate && !all.contains("date") { all.add("date", httpDate(time)) }
    return CachedResponse(
        id: id, url: url, status: status, headers: all, requestHeaders: requestHeaders,
        requestTime: time - delay, responseTime: time)
}

/// Runs a plan at `now` for a GET with `headers` in `mode`.
func planFor(
    _ candidates: [CachedResponse], now: Double, mode: CacheMode = .default,
    headers: HeaderList = HeaderList()
) -> CachePlan {
    planner.plan(request: get(headers), mode: mode, storedCandidates: candidates, now: now)
}

extension CachePlan {
    /// The served reply, if this plan serves a stored response.
    var reply: StoredReply? {
        if case .serveStored(let reply) = self { return reply }
        return nil
    }

    /// A short name of the case for table assertions.
    var kind: String {
        switch self {
        case .serveStored(let reply): return reply.status == .hit ? "hit" : "stale"
        case .revalidate: return "revalidate"
        case .fetch: return "fetch"
        case .fail: return "fail"
        }
    }
}
