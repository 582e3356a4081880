/// A fresh stored response that can be served at once, with its body from memory.
public struct ImmediateHit: Sendable {
    /// The stored response served.
    public var entry: CachedResponse
    /// The headers to send: stored headers without cookies, with `Age` and `Cache-Status`.
    public var headers: HeaderList
    /// The `Age` sent, in seconds.
    public var age: Int
    /// The whole body.
    public var body: [UInt8]
}

extension HTTPCache {
    /// Serves a `GET` from a fresh stored response without waiting, or returns nil when the hop
    /// needs `send(_:mode:)`: nothing usable in memory, a commit for the URL still running, or
    /// anything but a fresh hit (stale, revalidation, miss, background revalidation).
    ///
    /// The decision is `CachePlanner.plan`'s, so a hit served here is the one `send` would
    /// serve, counted the same. `accept` may still refuse the selected entry (say, a redirect
    /// the caller would follow) before anything is counted or read, and a body over
    /// `bodyLimit` bytes is left to `send` too.
    public func immediateHit(
        url: String, headers: HeaderList, mode: CacheMode, bodyLimit: Int, accept: (CachedResponse) -> Bool
    ) -> ImmediateHit? {
        let key = CacheKey.primary(for: url)
        guard !commits.isPending(key), let candidates = store.entriesWithoutWaiting(for: key), !candidates.isEmpty else {
            return nil
        }
        let request = CacheRequest(method: "GET", url: url, headers: headers)
        let plan = planner.plan(request: request, mode: mode, storedCandidates: candidates, now: clock.now())
        guard case .serveStored(let reply) = plan, reply.status == .hit, !reply.backgroundRevalidation,
              accept(reply.entry), let body = store.bodyWithoutWaiting(of: reply.entry), body.count <= bodyLimit
        else { return nil }
        counters.withLock { $0.hits += 1 }
        return ImmediateHit(entry: reply.entry, headers: reply.headers, age: reply.age, body: body)
    }
}
