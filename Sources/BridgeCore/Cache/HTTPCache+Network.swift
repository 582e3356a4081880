import Synchronization

extension HTTPCache {
    /// Sends `plan`'s request upstream, decides on the answer and applies the cache writes.
    func network(
        _ plan: CachePlan, request: UpstreamRequest, cacheRequest: CacheRequest, mode: CacheMode,
        leader: CollapsingLeader?, attempt: Int
    ) async throws -> CachedExchange {
        defer { leader?.finishUnlessHandedOver() }
        var forwarded = request
        forwarded.headers = plan.upstreamRequestHeaders(request.headers)
        // Byte positions are the representation's: a ranged request asks for no content coding
        // (the upstream adapter would otherwise offer gzip, and a coded part cannot be decoded alone).
        if forwarded.headers.contains("range"), !forwarded.headers.contains("accept-encoding") {
            forwarded.headers.add("accept-encoding", "identity")
        }
        if plan.sendsConditionalRequest { counters.locked { $0.revalidations += 1 } }
        let requestTime = clock.now()
        var response: UpstreamResponse?
        var failure: BridgeError?
        do {
            response = try await upstream.send(forwarded)
        } catch let error as BridgeError where error.code == .network || error.code == .timeout {
            failure = error
        }
        let outcome: NetworkOutcome = response.map { .response(status: $0.status, headers: $0.headers) } ?? .failure
        let decision = planner.decide(
            plan: plan, request: cacheRequest, outcome: outcome, requestTime: requestTime, responseTime: clock.now())
        for key in decision.invalidate { await store.removeAll(for: key) }
        switch decision.source {
        case .networkError:
            throw failure ?? BridgeError(.network, "\(request.url): no response")
        case .retryUnconditionally:
            return try await send(request, mode: .reload, attempt: attempt + 1)
        case .stored(let entry):
            await apply(decision.write)
            guard let body = await store.body(of: entry) else {
                // A 304 for an entry evicted meanwhile has no body to serve: ask again in full.
                return try await send(request, mode: .reload, attempt: attempt + 1)
            }
            if decision.status != .revalidated { counters.locked { $0.served(decision.status) } }
            let age = decision.headers.first("age").flatMap { Int($0) }
            guard let range = decision.range else {
                return Self.storedExchange(entry, headers: decision.headers, status: decision.status, age: age, body: body)
            }
            guard let exchange = Self.rangedExchange(entry, headers: decision.headers, status: decision.status, age: age, body: body, range: range) else {
                await store.remove(entry)
                return try await send(request, mode: .reload, attempt: attempt + 1)
            }
            return exchange
        case .combined(let combination):
            guard let served = response, let exchange = await combinedExchange(
                combination, response: served, headers: decision.headers, status: decision.status,
                key: CacheKey.primary(for: request.url), leader: leader)
            else {
                // The stored part went away (or no longer matches): ask for the client's request alone.
                return try await send(request, mode: .reload, attempt: attempt + 1)
            }
            counters.locked { $0.misses += 1 }
            return exchange
        case .network:
            guard var served = response else { throw failure ?? BridgeError(.network, "\(request.url): no response") }
            if decision.status == .miss { counters.locked { $0.misses += 1 } }
            served.headers = decision.headers
            if case .store(var entry) = decision.write {
                // The policy sees status and headers only; the phrase is kept as the origin sent it.
                entry.statusText = served.statusText
                let length = served.body.decoded ? nil : served.headers.first("content-length").flatMap { Int($0) }
                if let writer = await store.makeWriter(for: entry, expectedLength: length) {
                    let tee = TeeBody(source: served.body, writer: writer, leader: leader, writes: writes, commits: commits, key: CacheKey.primary(for: request.url))
                    leader?.handOver()
                    let framed: UpstreamResponseBody.FramePull? = served.body.nextFrame == nil ? nil : { @Sendable headroom, limit in
                        try await tee.nextFrame(headroom: headroom, limit: limit)
                    }
                    served.body = UpstreamResponseBody(decoded: served.body.decoded, length: served.body.length, nextFrame: framed) {
                        try await tee.next()
                    }
                }
            } else {
                await apply(decision.write)
            }
            return CachedExchange(response: served, status: decision.status)
        }
    }

    /// Performs a metadata write (update or removal); stores go through `TeeBody`.
    func apply(_ write: CacheWrite) async {
        switch write {
        case .none, .store: break
        case .update(let entry): await store.update(entry)
        case .remove(let entry): await store.remove(entry)
        }
    }
}

/// A response body that is also written to the cache as it is read.
///
/// The entry is committed only when the upstream body ended normally; an upstream error, a
/// reader that stops early (client cancel, too large) or a store that gives up discards it,
/// so a torn body is never stored.
final class TeeBody: Sendable {
    enum Phase { case writing, done }

    let source: UpstreamResponseBody
    let writer: any CacheEntryWriter
    let leader: CollapsingLeader?
    let writes: BackgroundTasks
    let commits: PendingCommits
    let key: String
    private let phase = Mutex(Phase.writing)

    init(source: UpstreamResponseBody, writer: any CacheEntryWriter, leader: CollapsingLeader?, writes: BackgroundTasks, commits: PendingCommits, key: String) {
        self.source = source
        self.writer = writer
        self.leader = leader
        self.writes = writes
        self.commits = commits
        self.key = key
    }

    func next() async throws -> [UInt8]? {
        try await pass(source.next) { await writer.write($0) }
    }

    /// `next` through the source's `nextFrame` (which it must have): the frame goes on, and the
    /// writer takes its bytes from the frame's memory before it is sent.
    func nextFrame(headroom: Int, limit: Int) async throws -> FrameBuffer? {
        guard let nextFrame = source.nextFrame else { preconditionFailure("the source body fills no frames") }
        return try await pass({ try await nextFrame(headroom, limit) }) { await writer.write(frame: $0) }
    }

    /// Pulls one chunk, writes its bytes to the entry and passes it on; ends the entry at the
    /// body's end or on an error.
    private func pass<Chunk>(_ pull: () async throws -> Chunk?, write: (Chunk) async -> Bool) async throws -> Chunk? {
        let chunk: Chunk?
        do {
            chunk = try await pull()
        } catch {
            await end(commit: false)
            throw error
        }
        guard let chunk else {
            await end(commit: true)
            return nil
        }
        if phase.locked({ $0 == .writing }), !(await write(chunk)) {
            await end(commit: false)
        }
        return chunk
    }

    private func end(commit: Bool) async {
        let wasWriting = phase.locked { phase in
            defer { phase = .done }
            return phase == .writing
        }
        guard wasWriting, commit else {
            if wasWriting { await writer.discard() }
            leader?.finish()
            return
        }
        // The client has its last byte already; the commit (and the requests collapsed behind
        // this one) must not make it wait. Lookups of the same URL wait for it instead, so a
        // request sent after this reply sees the stored response, as in a browser's cache.
        let (writer, leader) = (self.writer, self.leader)
        commits.run(key: key) {
            _ = await writer.commit()
            leader?.finish()
        }
    }

    deinit {
        // Dropped before the end (client cancelled, body too large): discard the partial entry.
        if phase.locked({ $0 == .writing }) {
            let writer = self.writer
            writes.start { await writer.discard() }
            leader?.finish()
        }
    }
}
