import Foundation

extension FetchHandler: ImmediateBridgeHandler {
    /// The largest stored body served at once from memory; larger ones stream from a task, which
    /// waits for room in the connection's send queue.
    public static let immediateBodyLimit = 256 * 1024

    /// Serves a fresh cache hit whose body is in memory at once, on the connection's thread: no
    /// task, no deadline, no waiting. Anything else, or any hit while the connection's send queue
    /// is over its high-water mark, returns nil and runs through `handle`.
    ///
    /// The client sees what `handle` would send for the same hit: the `response` event, the body
    /// as binary frames when asked, download progress (only the final count, which the
    /// contract requires: a body from memory has no intermediate state worth an event), then
    /// the same reply. The progress stream, group progress and the cache counters see it too.
    /// A client that asked for `whole` gets a binary body of at most that size (and of at most
    /// `binaryChunkBytes`) as one whole-response frame instead: the reply's head and the body.
    public func handleImmediately(_ call: HandlerCall) -> ImmediateReply? {
        // A client that does not read its frames gets its hits from the task, which waits for room.
        guard let cache, call.connection.sink.isWritable else { return nil }
        let request: FetchRequest
        do { request = try FetchRequest(json: call.body, page: call.connection.info.isPage) } catch { return .failure(error) }
        // A post that goes on to `handle` takes this parse with it instead of parsing again.
        call.keepForHandle(request)
        // Stored Set-Cookie lines for a headless client come from the task's delivery.
        guard request.method == "GET", request.body == .none, !request.exposeSetCookie else { return nil }
        // A miss stops here, before the hop's headers and cookies are worked out for nothing.
        guard let candidates = cache.immediateCandidates(url: request.url, mode: request.cache) else { return nil }
        // Nothing stored: final only for fresh-only, whose client asks again over the socket (the
        // store does not see rows another process wrote since it opened); the planner's answer then.
        guard !candidates.isEmpty else { return request.cache == .freshOnly ? notCachedAtOnce(call, request) : nil }
        if case .refused = rules.check(FetchRequest.ruleForm(of: request.url)) { return nil }
        let configuration = call.configuration
        let bodyLimit: Int
        switch request.responseBody {
        case .text?: bodyLimit = min(Self.immediateBodyLimit, configuration.maxMessageBytes)
        // base64 grows 4/3; nil may pick base64 by content type.
        case .base64?, nil: bodyLimit = min(Self.immediateBodyLimit, configuration.maxMessageBytes / 4 * 3)
        case .binary?, .none?: bodyLimit = Self.immediateBodyLimit
        }
        let follows = request.redirect != .manual
        // The variant is chosen by the headers the task would send: identity headers and cookies
        // included, worked out only for a response that varies (or a case the planner decides).
        guard let hit = cache.immediateHit(
            // A body over the flow-control window goes through the task, which waits for credit.
            from: candidates, url: request.url, requestHeaders: request.headers,
            hopHeaders: {
                HopIdentity(request: request, identity: RequestIdentity(connection: call.connection), jar: cookies)
                    .headers(request.headers, url: request.url, method: "GET", tainted: false)
            }, mode: request.cache,
            bodyLimit: min(bodyLimit, request.window ?? Int.max),
            accept: { entry in
                !(follows && Self.redirectStatuses.contains(entry.status) && entry.headers.contains("location"))
                    // The kept JSON writes values as UTF-8 text: other bytes in latin1 take the task's path.
                    && (request.headerEncoding == .utf8 || entry.headers.fields.allSatisfy { $0.value.utf8.allSatisfy { $0 < 0x80 } })
            })
        else { return nil }
        return ImmediateHitDelivery(call: call, request: request, hit: hit).run()
    }

    /// The `not_cached` failure of a `fresh-only` request with nothing stored, as the task would
    /// fail it (a URL the rules refuse is left to the task, which says `forbidden`), seen by the
    /// progress stream and the page's group alike.
    func notCachedAtOnce(_ call: HandlerCall, _ request: FetchRequest) -> ImmediateReply? {
        if case .refused = rules.check(FetchRequest.ruleForm(of: request.url)) { return nil }
        let connection = call.connection
        let groupToken = request.group.map { connection.groups.start(group: $0) }
        let trace = connection.broker.progress.begin(
            source: .fetch, url: request.url, method: request.method, group: request.group, connection: connection.number)
        trace.connecting(url: request.url)
        let error = HTTPCache.notCached(request.url)
        trace.fail(error)
        if let group = request.group, let groupToken { connection.groups.finish(group: group, token: groupToken) }
        return .failure(error)
    }

    /// The statuses `finalHop` follows when they carry a `Location`.
    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]
}

/// Sends one immediate cache hit to the client and reports it to the progress stream and the
/// post's page group, as `FetchExchange` does for a hop that went through a task.
struct ImmediateHitDelivery {
    let call: HandlerCall
    let request: FetchRequest
    let hit: ImmediateHit

    func run() -> ImmediateReply {
        let connection = call.connection
        let groupToken = request.group.map { connection.groups.start(group: $0) }
        let trace = connection.broker.progress.begin(
            source: .fetch, url: request.url, method: request.method, group: request.group, connection: connection.number)
        trace.connecting(url: request.url)

        let status = hit.entry.status
        let noBody = [204, 304].contains(status) || (100..<200).contains(status)
        let mode = noBody ? ResponseBodyMode.none : (request.responseBody ?? FetchExchange.defaultMode(for: hit.contentType))
        let total = hit.body.count
        // Room for the body only where it goes into the reply's JSON (base64 grows 4/3).
        var head = JSONWriter(capacity: 512 + (mode == .text || mode == .base64 ? total / 3 * 4 + 16 : 0))
        head.appendRaw("{\"url\":")
        head.append(request.url)
        head.appendRaw(",\"status\":")
        head.append(status)
        head.appendRaw(",\"statusText\":")
        head.append(request.written(statusText: hit.entry.servedStatusText))
        head.appendRaw(",\"headers\":")
        hit.writeHeaders(into: &head)
        head.appendRaw(",\"redirected\":false")
        var cacheField = JSONWriter(capacity: 40)
        cacheField.appendRaw(",\"cache\":{\"status\":\"hit\",\"age\":")
        cacheField.append(hit.age)
        cacheField.appendRaw("}}")

        // One frame for the whole response, when the client takes it: the head once, no events.
        let whole = call.id != nil && mode == .binary && total <= min(request.whole ?? -1, call.configuration.binaryChunkBytes)
        if !whole { call.sendEventNow("response", encodedBody: head.bytes + cacheField.bytes) }
        trace.response(status: status, cache: .hit, total: total)
        if let group = request.group, let groupToken {
            connection.groups.update(group: group, token: groupToken, loaded: 0, total: total)
        }

        var reply = head
        reply.appendRaw(",\"bodyEncoding\":")
        reply.append(mode.rawValue)
        switch mode {
        case .none:
            reply.appendRaw(",\"body\":null,\"bodyBytes\":0")
        case .binary:
            if !whole { call.sendBodyNow(hit.body) }
            reply.appendRaw(",\"body\":null")
        case .text, .base64:
            // The JSON string of the body, kept with the entry: hits of one entry share it.
            reply.appendRaw(",\"body\":")
            reply.appendRaw(hit.encodedBody(mode.rawValue) { body in
                var string = JSONWriter(capacity: body.count + 16)
                string.append(mode == .text ? String(decoding: body, as: UTF8.self) : Data(body).base64EncodedString())
                return string.bytes
            })
        }
        if mode != .none {
            reply.appendRaw(",\"bodyBytes\":")
            reply.append(total)
            if total > 0 { trace.progress(loaded: total) }
            if let group = request.group, let groupToken {
                connection.groups.update(group: group, token: groupToken, loaded: total, total: total)
            }
            if request.progress, !whole {
                var progress = JSONWriter(capacity: 64)
                progress.appendRaw("{\"phase\":\"download\",\"loaded\":")
                progress.append(total)
                progress.appendRaw(",\"total\":")
                progress.append(total)
                progress.appendRaw("}")
                call.sendEventNow("progress", encodedBody: progress.bytes)
            }
        }
        reply.appendRaw(cacheField.bytes)
        trace.finish()
        if let group = request.group, let groupToken { connection.groups.finish(group: group, token: groupToken) }
        if whole, let id = call.id {
            let frame = BinaryFrameHeader.wholeResponseFrame(id: id, head: reply.bytes, body: hit.body, headroom: connection.sink.frameHeadroom)
            frame.joinable = request.batch
            return .wholeResponse(frame)
        }
        return .encodedBody(reply.bytes)
    }
}
