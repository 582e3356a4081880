import Synchronization

extension HTTPCache {
    /// A stored response served for a single byte range: a 206 with the range's bytes, or a
    /// 416 when the representation cannot satisfy it; nil when a partial entry's body does not
    /// hold the span its `Content-Range` claims (the caller drops it and asks again).
    static func rangedExchange(
        _ entry: CachedResponse, headers: HeaderList, status: ReplyCacheStatus, age: Int?, body: CacheBody,
        range spec: ByteRangeSpec
    ) -> CachedExchange? {
        let span: ClosedRange<Int>?
        let length: Int
        if let partial = entry.contentRange {
            guard body.length == partial.range.count else { return nil }
            (span, length) = (partial.range, partial.completeLength)
        } else {
            (span, length) = (body.length > 0 ? 0...(body.length - 1) : nil, body.length)
        }
        guard let target = spec.resolve(length: length) else {
            var refused: HeaderList = ["content-range": "bytes */\(length)", "content-length": "0"]
            if let cacheStatus = headers.first("cache-status") { refused.add("cache-status", cacheStatus) }
            let response = UpstreamResponse(
                status: 416, statusText: HTTPReasonPhrase.phrase(for: 416), headers: refused,
                body: UpstreamResponseBody(decoded: true, length: 0) { nil })
            return CachedExchange(response: response, status: status, age: age)
        }
        guard let span, span.contains(target.lowerBound), span.contains(target.upperBound) else { return nil }
        var served = headers.removing(["content-range", "content-length"])
        served.add("content-range", ContentRange(range: target, completeLength: length).headerValue)
        served.add("content-length", String(target.count))
        var offset = target.lowerBound - span.lowerBound
        var source = body.next
        if let skip = body.skip, offset > 0 {
            // Seek to the range instead of reading what comes before it.
            let start = offset
            let skipped = Mutex(false)
            source = {
                if !skipped.locked({ $0 }) {
                    try await skip(start)
                    skipped.locked { $0 = true }
                }
                return try await body.next()
            }
            offset = 0
        }
        let slice = SlicedBody(source: source, range: offset..<(offset + target.count), drain: false)
        let response = UpstreamResponse(
            status: 206, statusText: HTTPReasonPhrase.phrase(for: 206), headers: served,
            body: UpstreamResponseBody(decoded: true, length: target.count) { try await slice.next() })
        return CachedExchange(
            response: response, status: status, age: age, storedSetCookie: entry.headers.values("set-cookie"))
    }

    /// Serves a partial fill's answer: the stored part and the network's 206 are written as one
    /// new entry while the client reads its range (or the whole response) from the same stream.
    func combinedExchange(
        _ combination: PartialCombination, response: UpstreamResponse, headers: HeaderList, status: ReplyCacheStatus,
        key: String, leader: CollapsingLeader?
    ) async -> CachedExchange? {
        let union = combination.union
        let stored = combination.storedSpan, network = combination.networkSpan
        var segments: [@Sendable () async throws -> [UInt8]?] = []
        if stored.lowerBound < network.lowerBound {
            guard let body = await store.body(of: combination.base), body.length == stored.count else { return nil }
            let prefix = SlicedBody(source: body.next, range: 0..<(network.lowerBound - stored.lowerBound), drain: false)
            segments.append { try await prefix.next() }
        }
        let counted = CountedBody(source: response.body.next, expected: network.count, url: key)
        segments.append { try await counted.next() }
        if stored.upperBound > network.upperBound {
            guard let body = await store.body(of: combination.base), body.length == stored.count else { return nil }
            let start = network.upperBound + 1 - stored.lowerBound
            let suffix = SlicedBody(source: body.next, range: start..<stored.count, drain: false)
            segments.append { try await suffix.next() }
        }
        let joined = JoinedBody(segments)
        var unionBody = UpstreamResponseBody(decoded: true, length: union.count) { try await joined.next() }
        if let writer = await store.makeWriter(for: combination.entry, expectedLength: union.count) {
            let tee = TeeBody(source: unionBody, writer: writer, leader: leader, writes: writes, commits: commits, key: key)
            leader?.handOver()
            unionBody = UpstreamResponseBody(decoded: true, length: union.count) { try await tee.next() }
        }
        let served: UpstreamResponseBody
        if let range = combination.served {
            let offset = range.lowerBound - union.lowerBound
            // Drained to the end, so that the whole union reaches the store.
            let slice = SlicedBody(source: unionBody.next, range: offset..<(offset + range.count), drain: true)
            served = UpstreamResponseBody(decoded: true, length: range.count) { try await slice.next() }
        } else {
            served = unionBody
        }
        let code = combination.served == nil ? 200 : 206
        let reply = UpstreamResponse(
            status: code, statusText: HTTPReasonPhrase.phrase(for: code), headers: headers,
            remoteAddress: response.remoteAddress, body: served)
        return CachedExchange(response: reply, status: status)
    }
}

/// The bytes at `range` (positions in the source stream) of a pulled body.
///
/// With `drain`, the source is read to its end before the slice reports its own end, so a
/// tee upstream of it sees the whole body.
final class SlicedBody: Sendable {
    let source: @Sendable () async throws -> [UInt8]?
    let range: Range<Int>
    let drain: Bool
    private let position = Mutex(0)

    init(source: @escaping @Sendable () async throws -> [UInt8]?, range: Range<Int>, drain: Bool) {
        self.source = source
        self.range = range
        self.drain = drain
    }

    func next() async throws -> [UInt8]? {
        while true {
            let start = position.locked { $0 }
            if start >= range.upperBound {
                if drain { while try await source() != nil {} }
                return nil
            }
            guard let chunk = try await source() else { return nil }
            position.locked { $0 = start + chunk.count }
            let low = max(range.lowerBound, start), high = min(range.upperBound, start + chunk.count)
            if low < high { return low == start && high == start + chunk.count ? chunk : Array(chunk[(low - start)..<(high - start)]) }
        }
    }
}

/// Pulls several bodies one after another.
final class JoinedBody: Sendable {
    let segments: [@Sendable () async throws -> [UInt8]?]
    private let index = Mutex(0)

    init(_ segments: [@Sendable () async throws -> [UInt8]?]) { self.segments = segments }

    func next() async throws -> [UInt8]? {
        while true {
            let current = index.locked { $0 }
            guard current < segments.count else { return nil }
            if let chunk = try await segments[current]() { return chunk }
            index.locked { $0 = current + 1 }
        }
    }
}

/// A network body that must carry exactly `expected` bytes (a 206's `Content-Range`); any
/// other count fails the read, so a wrong part is never stored.
final class CountedBody: Sendable {
    let source: @Sendable () async throws -> [UInt8]?
    let expected: Int
    let url: String
    private let count = Mutex(0)

    init(source: @escaping @Sendable () async throws -> [UInt8]?, expected: Int, url: String) {
        self.source = source
        self.expected = expected
        self.url = url
    }

    func next() async throws -> [UInt8]? {
        let chunk = try await source()
        let total = count.locked { total in
            total += chunk?.count ?? 0
            return total
        }
        if total > expected || (chunk == nil && total != expected) {
            throw BridgeError(.network, "\(url): the 206 body had \(total) bytes where Content-Range announced \(expected)")
        }
        return chunk
    }
}
