/// A fresh stored response that can be served at once, with its body from memory.
public struct ImmediateHit: Sendable {
    /// The stored response served.
    public var entry: CachedResponse
    /// The `Age` sent, in seconds.
    public var age: Int
    /// The `ttl` of the `Cache-Status` sent, in seconds.
    public var ttl: Int
    /// The whole body.
    public var body: [UInt8]
    let template: HitTemplate

    /// Appends the served headers as JSON pairs: the stored ones without cookies, then `Age` and
    /// `Cache-Status` as `CachePlanner` would set them.
    func writeHeaders(into writer: inout JSONWriter) {
        template.writeHeaders(into: &writer, age: age, ttl: ttl)
    }

    /// The stored `Content-Type`.
    public var contentType: String? { template.contentType }

    /// `body` encoded by `encode` (a body mode's JSON string, say), kept with the entry for
    /// later hits when small.
    func encodedBody(_ key: String, _ encode: ([UInt8]) -> [UInt8]) -> [UInt8] {
        template.encodedBody(key, body: body, encode: encode)
    }
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
        guard let candidates = immediateCandidates(url: url, mode: mode), !candidates.isEmpty else { return nil }
        return immediateHit(from: candidates, url: url, requestHeaders: headers, hopHeaders: { headers }, mode: mode, bodyLimit: bodyLimit, accept: accept)
    }

    /// The stored responses in memory an immediate hit for `url` would choose from; nil when it
    /// would surely be none (no entry in memory, a commit for the URL still running, or a mode that
    /// never reads the cache), empty when the store knows without waiting that nothing is stored
    /// (a `fresh-only` miss is then answered at once, as `send` would fail it). The cheap part of
    /// the test, so a miss skips working out the request's headers; a non-empty answer goes to
    /// `immediateHit(from:...)`, which does the rest.
    public func immediateCandidates(url: String, mode: CacheMode) -> [CachedResponse]? {
        guard mode != .noStore, mode != .reload else { return nil }
        let key = CacheKey.primary(for: url)
        guard !commits.isPending(key) else { return nil }
        return store.entriesWithoutWaiting(for: key)
    }

    /// The error `send` throws when nothing usable is stored and the mode forbids the network.
    static func notCached(_ url: String) -> BridgeError {
        BridgeError(.notCached, "\(url) has no usable response in the cache")
    }

    /// `immediateHit` for the `candidates` that `immediateCandidates(url:mode:)` gave.
    ///
    /// `requestHeaders` are the headers the request itself carries; `hopHeaders` gives them with
    /// what the hop adds (identity headers, cookies), which only a response that varies, or the
    /// planner, needs: working them out (the cookie jar, the referrer policy, the page's origin)
    /// was a third of an immediate hit's time in a profile of 30 hits.
    public func immediateHit(
        from candidates: [CachedResponse], url: String, requestHeaders: HeaderList, hopHeaders: () -> HeaderList, mode: CacheMode,
        bodyLimit: Int, accept: (CachedResponse) -> Bool
    ) -> ImmediateHit? {
        let now = clock.now()
        let entry: CachedResponse, template: HitTemplate, currentAge: Double
        // The hop adds no field that is a cache directive, so the request's own headers tell that.
        if mode == .default || mode == .freshOnly, candidates.count == 1, Self.hasNoCacheDirectives(requestHeaders),
            candidates[0].varyKey.fieldNames.isEmpty || candidates[0].matches(requestHeaders: hopHeaders())
        {
            // The planner's answer for this case, from the template: with one variant selected and
            // no request directives, a default-mode request is a hit exactly when the response
            // is fresh and not `no-cache` (CachePlanner.evaluate); so is a fresh-only one, which
            // otherwise fails where default would go to the network (nil here: the task says so).
            entry = candidates[0]
            template = templates.template(for: entry, options: planner.options)
            currentAge = template.currentAge(at: now)
            guard !template.noCache, !entry.isPartial, template.lifetime > currentAge else { return nil }
        } else {
            let request = CacheRequest(method: "GET", url: url, headers: hopHeaders())
            let plan = planner.plan(request: request, mode: mode, storedCandidates: candidates, now: now)
            guard case .serveStored(let reply) = plan, reply.status == .hit, !reply.backgroundRevalidation, reply.range == nil,
                  !reply.entry.isPartial
            else { return nil }
            entry = reply.entry
            template = templates.template(for: entry, options: planner.options)
            currentAge = reply.freshness.currentAge
        }
        guard accept(entry), let body = store.bodyWithoutWaiting(of: entry), body.count <= bodyLimit else { return nil }
        counters.locked { $0.hits += 1 }
        let freshness = Freshness(lifetime: template.lifetime, source: .none, currentAge: currentAge)
        return ImmediateHit(
            entry: entry, age: freshness.ageHeaderValue, ttl: CacheStatusEntry.ttl(freshness.timeToLive), body: body,
            template: template)
    }

    /// Whether a request carries nothing that changes how a stored response is chosen:
    /// no `Cache-Control`, `Pragma`, precondition or `Range` fields.
    static func hasNoCacheDirectives(_ headers: HeaderList) -> Bool {
        headers.isEmpty || !headers.fields.contains { field in
            Self.directiveFields.contains(field.name.lowercased())
        }
    }

    static let directiveFields: Set<String> = [
        "cache-control", "pragma", "if-match", "if-none-match", "if-modified-since", "if-unmodified-since", "if-range", "range",
    ]
}
