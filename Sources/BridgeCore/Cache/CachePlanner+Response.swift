extension CachePlanner {
    /// The 5xx statuses on which stale-if-error may serve a stored response (RFC 5861 §4).
    public static let staleIfErrorStatuses: Set<Int> = [500, 502, 503, 504]

    /// Decides what to serve, store and invalidate after the network answered `plan`.
    ///
    /// `requestTime`/`responseTime` are when the request was sent and the response headers
    /// arrived (for a failure, when it was detected). Plans that did not use the network get a
    /// decision that serves nothing from the network and writes nothing.
    public func decide(
        plan: CachePlan, request: CacheRequest, outcome: NetworkOutcome,
        requestTime: Double, responseTime: Double
    ) -> ResponseDecision {
        let name = options.cacheName
        let entry: CachedResponse?
        let forward: CacheStatusEntry.Forward
        let mayStore: Bool
        let reply: ReplyCacheStatus
        let modeHeaders: HeaderList
        switch plan {
        case .revalidate(let fetch):
            (entry, forward, mayStore, reply, modeHeaders) =
                (fetch.entry, fetch.forward, fetch.mayStore, .miss, fetch.modeHeaders)
        case .fetch(let fetch):
            (entry, forward, mayStore, reply, modeHeaders) =
                (fetch.fallback, fetch.forward, fetch.mayStore, fetch.reply, fetch.modeHeaders)
        case .serveStored, .fail:
            return ResponseDecision(
                source: .networkError, headers: HeaderList(), write: .none, invalidate: [],
                status: .bypass, cacheStatus: CacheStatusEntry(cacheName: name, detail: "no-network-plan"))
        }
        guard case .response(let status, let headers) = outcome else {
            if let entry, staleIfErrorAllows(entry, request: request, at: responseTime) {
                return serveOnError(entry, forward: forward, forwardStatus: nil, at: responseTime)
            }
            return ResponseDecision(
                source: .networkError, headers: HeaderList(), write: .none, invalidate: [],
                status: reply, cacheStatus: CacheStatusEntry(cacheName: name, forward: forward))
        }
        if CachePlanner.staleIfErrorStatuses.contains(status), let entry,
           staleIfErrorAllows(entry, request: request, at: responseTime)
        {
            return serveOnError(entry, forward: forward, forwardStatus: status, at: responseTime)
        }
        if status == 304, case .revalidate(let fetch) = plan, let entry {
            return notModified(
                entry, headers: headers, forward: forward, mayStore: mayStore,
                requestTime: requestTime, responseTime: responseTime, range: fetch.range)
        }
        var fill: PartialFill?
        if case .fetch(let fetch) = plan { fill = fetch.fill }
        if status == 206, let fill {
            if let combination = combine(
                fill, headers: headers, request: request, requestTime: requestTime, responseTime: responseTime)
            {
                return combined(combination, forward: forward, at: responseTime)
            }
            // Not the part that was asked for: the client's own request goes upstream instead.
            return ResponseDecision(
                source: .retryUnconditionally, headers: HeaderList(), write: .none, invalidate: [],
                status: .miss, cacheStatus: CacheStatusEntry(
                    cacheName: name, forward: forward, forwardStatus: 206, detail: "partial-mismatch"))
        }
        // A response to a ranged request is stored only as a whole 200 or a storable part.
        let ranged = fill != nil || request.headers.contains("range")
        var write = CacheWrite.none
        var ttl: Int?
        if mayStore {
            let storable = status == 206
                ? partialIsStorable(request: request, headers: headers)
                : (!ranged || status == 200)
                    && Storability.evaluate(request: request, status: status, headers: headers, options: options).isStorable
            if storable {
                let stored = CachedResponse(
                    url: request.url, status: status,
                    headers: Storability.headersForStorage(headers),
                    requestHeaders: request.headers.appending(modeHeaders).removing(["range", "if-range"]),
                    requestTime: requestTime, responseTime: responseTime)
                write = .store(stored)
                ttl = CacheStatusEntry.ttl(stored.freshness(at: responseTime, options: options).timeToLive)
            } else if let entry, status < 500, status != 304, !ranged, status != 206 {
                write = .remove(entry)
            }
        }
        let cacheStatus = CacheStatusEntry(
            cacheName: name, forward: forward, forwardStatus: status, ttl: ttl,
            stored: ttl != nil)
        var served = headers
        served.add("cache-status", cacheStatus.headerValue)
        return ResponseDecision(
            source: .network, headers: served, write: write,
            invalidate: Invalidation.urlsToInvalidate(
                request: request, status: status, responseHeaders: headers),
            status: reply, cacheStatus: cacheStatus)
    }

    /// Whether stale-if-error (response or request directive) lets `entry` answer an error at
    /// `time`: never with `must-revalidate` or response `no-cache`; only within the window.
    public func staleIfErrorAllows(_ entry: CachedResponse, request: CacheRequest, at time: Double)
        -> Bool
    {
        let response = entry.directives
        guard !response.mustRevalidate, !response.noCache else { return false }
        let window = max(
            response.staleIfError ?? -1,
            RequestDirectives(headers: request.headers).staleIfError ?? -1)
        guard window >= 0 else { return false }
        return entry.freshness(at: time, options: options).staleness <= window
    }

    /// Serves `entry` in place of a 5xx or a network failure.
    func serveOnError(
        _ entry: CachedResponse, forward: CacheStatusEntry.Forward, forwardStatus: Int?,
        at time: Double
    ) -> ResponseDecision {
        let freshness = entry.freshness(at: time, options: options)
        let cacheStatus = CacheStatusEntry(
            cacheName: options.cacheName, forward: forward, forwardStatus: forwardStatus,
            ttl: CacheStatusEntry.ttl(freshness.timeToLive), detail: "stale-if-error")
        let reply = StoredReply(
            entry: entry, status: .stale, freshness: freshness, backgroundRevalidation: false,
            cacheStatus: cacheStatus)
        return ResponseDecision(
            source: .stored(entry), headers: reply.headers, write: .none, invalidate: [],
            status: .stale, cacheStatus: cacheStatus)
    }

    /// Handles a 304 answering a conditional request for `entry`.
    func notModified(
        _ entry: CachedResponse, headers: HeaderList, forward: CacheStatusEntry.Forward,
        mayStore: Bool, requestTime: Double, responseTime: Double, range: ByteRangeSpec?
    ) -> ResponseDecision {
        guard Validation.notModifiedApplies(to: entry, headers: headers) else {
            return ResponseDecision(
                source: .retryUnconditionally, headers: HeaderList(), write: .none, invalidate: [],
                status: .miss, cacheStatus: CacheStatusEntry(
                    cacheName: options.cacheName, forward: forward, forwardStatus: 304,
                    detail: "validator-mismatch"))
        }
        let updated = Validation.freshen(
            entry, with: headers, requestTime: requestTime, responseTime: responseTime)
        let directives = updated.directives
        let write: CacheWrite = !mayStore ? .none
            : directives.noStore && !directives.mustUnderstand ? .remove(entry) : .update(updated)
        let freshness = updated.freshness(at: responseTime, options: options)
        let cacheStatus = CacheStatusEntry(
            cacheName: options.cacheName, forward: forward, forwardStatus: 304,
            ttl: CacheStatusEntry.ttl(freshness.timeToLive))
        let reply = StoredReply(
            entry: updated, status: .revalidated, freshness: freshness,
            backgroundRevalidation: false, cacheStatus: cacheStatus)
        var served = reply.headers
        for cookie in headers.values("set-cookie") { served.add("set-cookie", cookie) }
        return ResponseDecision(
            source: .stored(updated), headers: served, write: write, invalidate: [],
            status: .revalidated, cacheStatus: cacheStatus, range: range)
    }

    /// Serves a partial fill's combination: the union is stored, the client gets its range
    /// (206) or the whole response (200).
    func combined(_ combination: PartialCombination, forward: CacheStatusEntry.Forward, at time: Double)
        -> ResponseDecision
    {
        let freshness = combination.entry.freshness(at: time, options: options)
        let cacheStatus = CacheStatusEntry(
            cacheName: options.cacheName, forward: forward, forwardStatus: 206,
            ttl: CacheStatusEntry.ttl(freshness.timeToLive), stored: true)
        var served = combination.entry.headers.removing(["content-range", "content-length"])
        if let range = combination.served {
            served.add("content-range", ContentRange(range: range, completeLength: combination.completeLength).headerValue)
            served.add("content-length", String(range.count))
        } else {
            served.add("content-length", String(combination.completeLength))
        }
        served.add("cache-status", cacheStatus.headerValue)
        return ResponseDecision(
            source: .combined(combination), headers: served, write: .none, invalidate: [], status: .miss,
            cacheStatus: cacheStatus)
    }
}
