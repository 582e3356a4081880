/// Byte ranges and partial responses (RFC 9110 §14, RFC 9111 §3.3, §3.4, §4.3.1).
///
/// - A single `Range` is served as a 206 from a whole stored response when the stored bytes
///   are the representation's (no content coding): `StoredReply.range` carries it and the cache
///   answers with `Content-Range` and the range's `Content-Length`, or a 416 when the range
///   cannot be satisfied. Several ranges are served whole (200), as a server may ignore `Range`.
/// - A 206 from upstream (one range, a known complete length, a strong validator, no content
///   coding, and otherwise storable as a 200 would be) is stored as a partial entry.
/// - A partial entry answers a single range it covers, after the usual freshness rules (a
///   revalidation sends its validators with the client's `Range`). Any other request for the
///   URL — a range it does not cover, or no range at all — asks upstream for the missing bytes
///   with `If-Range` (the entry's strong validator) and combines the 206 with the stored part
///   when both have the same strong validator and their spans touch; a changed representation
///   comes back whole (200) and replaces the part. A partial entry is never served whole.
/// - A requested range more than `partialGapLimit` bytes away from the stored span is fetched
///   alone (no `If-Range`) and its 206 replaces the stored part: one contiguous span per entry.
extension CachePlanner {
    /// The plan for a request whose selected entry is partial, or whose single range the
    /// (whole) entry cannot serve; nil when the partial entry covers the requested range (the
    /// caller then applies the usual freshness rules with the range).
    func planRange(
        entry: CachedResponse, request: CacheRequest, mode: CacheMode, extra: HeaderList, mayStore: Bool,
        onlyIfCached: Bool
    ) -> CachePlan? {
        let forwardAsIs = CachePlan.fetch(NetworkFetch(
            modeHeaders: extra, mayStore: mayStore, fallback: nil, forward: entry.isPartial ? .partial : .request,
            reply: .miss))
        guard entry.isPartial else { return onlyIfCached ? .fail(.notCached) : forwardAsIs }
        guard let stored = entry.contentRange, let ifRange = entry.ifRangeValidator else {
            return onlyIfCached ? .fail(.notCached) : forwardAsIs
        }
        let target: ClosedRange<Int>
        let wantsWhole: Bool
        switch RangeRequest(headers: request.headers) {
        case .none:
            (target, wantsWhole) = (0...(stored.completeLength - 1), true)
        case .single(let spec):
            guard let resolved = spec.resolve(length: stored.completeLength) else {
                return onlyIfCached ? .fail(.notCached) : forwardAsIs
            }
            if stored.range.contains(resolved.lowerBound), stored.range.contains(resolved.upperBound) { return nil }
            (target, wantsWhole) = (resolved, false)
        case .multiple:
            return onlyIfCached ? .fail(.notCached) : forwardAsIs
        }
        if onlyIfCached { return .fail(.notCached) }
        guard mayStore, !request.headers.contains("if-range") else { return forwardAsIs }
        let span = stored.range
        let gapBefore = span.lowerBound - target.upperBound - 1
        let gapAfter = target.lowerBound - span.upperBound - 1
        if gapBefore > options.partialGapLimit || gapAfter > options.partialGapLimit { return forwardAsIs }
        let fetch: ClosedRange<Int>
        switch (target.lowerBound < span.lowerBound, target.upperBound > span.upperBound) {
        case (true, true): fetch = target
        case (true, false): fetch = target.lowerBound...(span.lowerBound - 1)
        case (false, true): fetch = (span.upperBound + 1)...target.upperBound
        case (false, false): return nil
        }
        return .fetch(NetworkFetch(
            modeHeaders: extra, mayStore: mayStore, fallback: nil, forward: .partial, reply: .miss,
            fill: PartialFill(
                entry: entry, stored: stored, target: target, wantsWhole: wantsWhole, fetch: fetch, ifRange: ifRange)))
    }

    /// Whether a 206 may be stored as a partial entry: one range of a known complete length,
    /// a strong validator, no content coding, not `multipart/byteranges`, and storable as a
    /// 200 with the same headers would be.
    public func partialIsStorable(request: CacheRequest, headers: HeaderList) -> Bool {
        guard ContentRange(headers: headers) != nil, Validation.strongValidator(headers) != nil,
              headers.listMembers("content-encoding").allSatisfy({ $0.lowercased() == "identity" }),
              !(headers.first("content-type")?.lowercased().hasPrefix("multipart/byteranges") ?? false)
        else { return false }
        return Storability.evaluate(request: request, status: 200, headers: headers, options: options).isStorable
    }

    /// Decides on a 206 answering a partial fill: combine it with the stored part when it is
    /// the same representation and the spans touch; nil when it cannot be combined.
    func combine(
        _ fill: PartialFill, headers: HeaderList, request: CacheRequest, requestTime: Double, responseTime: Double
    ) -> PartialCombination? {
        guard let received = ContentRange(headers: headers), received.completeLength == fill.stored.completeLength,
              Validation.sameRepresentation(fill.entry.headers, headers),
              partialIsStorable(request: request, headers: headers)
        else { return nil }
        let span = fill.stored.range
        guard received.range.lowerBound <= span.upperBound + 1, span.lowerBound <= received.range.upperBound + 1 else {
            return nil
        }
        var combination = PartialCombination(
            entry: fill.entry, base: fill.entry, storedSpan: span, networkSpan: received.range, served: nil,
            completeLength: received.completeLength)
        let union = combination.union
        let whole = union.lowerBound == 0 && union.upperBound == received.completeLength - 1
        if fill.wantsWhole {
            guard whole else { return nil }
        } else {
            guard union.contains(fill.target.lowerBound), union.contains(fill.target.upperBound) else { return nil }
            combination.served = fill.target
        }
        // RFC 9111 §3.4: the stored fields are updated with the new response's, as by a 304.
        var entry = Validation.freshen(fill.entry, with: headers.removing(["content-range"]), requestTime: requestTime, responseTime: responseTime)
        entry.headers = entry.headers.removing(["content-range", "content-length"])
        if whole {
            entry.status = 200
            entry.headers.add("content-length", String(received.completeLength))
        } else {
            entry.headers.add("content-range", ContentRange(range: union, completeLength: received.completeLength).headerValue)
        }
        combination.entry = entry
        return combination
    }
}
