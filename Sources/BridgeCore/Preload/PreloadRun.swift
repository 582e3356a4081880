import Foundation
import Synchronization

/// One `preload` post at work: fetches resources within the concurrency limits and the byte
/// budget, and reports each one as a `preload.resource` event and the whole as
/// `preload.progress`.
final class PreloadRun: Sendable {
    let call: HandlerCall
    let request: PreloadRequest
    let fetch: FetchHandler
    private let tally = Mutex(Tally())

    struct Tally {
        var loaded = 0
        var done = 0
        var planned = 0
    }

    init(call: HandlerCall, request: PreloadRequest, fetch: FetchHandler) {
        self.call = call
        self.request = request
        self.fetch = fetch
    }

    /// Fetches `resources` in order, at most `concurrency` at once and `perHost` per origin;
    /// once `maxBytes` have been loaded, the ones not started yet are skipped.
    func fetchAll(_ resources: [PreloadResource]) async -> [PreloadOutcome] {
        var pending = Array(resources.enumerated())
        var outcomes: [(Int, PreloadOutcome)] = []
        var perHost: [String: Int] = [:]
        var running = 0
        await withTaskGroup(of: (Int, String, PreloadOutcome).self) { group in
            while true {
                while running < request.concurrency, !overBudget,
                      let next = pending.firstIndex(where: { perHost[Self.origin(of: $0.element.url), default: 0] < request.perHost }) {
                    let (index, resource) = pending.remove(at: next)
                    let host = Self.origin(of: resource.url)
                    perHost[host, default: 0] += 1
                    running += 1
                    group.addTask {
                        let (outcome, _) = await self.load(resource, mode: .default, keepBody: false)
                        return (index, host, outcome)
                    }
                }
                guard let (index, host, outcome) = await group.next() else { break }
                running -= 1
                perHost[host, default: 0] -= 1
                outcomes.append((index, outcome))
            }
        }
        for (index, resource) in pending {
            let outcome = PreloadOutcome(resource: resource, result: .skipped, reason: "max_bytes")
            await report(outcome, state: "skipped")
            outcomes.append((index, outcome))
        }
        return outcomes.sorted { $0.0 < $1.0 }.map(\.1)
    }

    private var overBudget: Bool {
        guard let maxBytes = request.maxBytes else { return false }
        return tally.locked { $0.loaded } >= maxBytes
    }

    /// Fetches one resource through the cache in `mode` and reads its body to the end (so a
    /// stored body is complete); returns the outcome and, with `keepBody`, the body.
    ///
    /// With `reporting` false (a page or manifest read only for its list) no `preload.resource`
    /// event is sent; the progress stream still shows the request.
    func load(_ resource: PreloadResource, mode: CacheMode, keepBody: Bool, reporting: Bool = true) async -> (PreloadOutcome, [UInt8]?) {
        var outcome = PreloadOutcome(resource: resource, result: .failed)
        if reporting { await report(outcome, state: "started") }
        let connection = call.connection
        let token = request.group.map { connection.groups.start(group: $0) }
        let trace = connection.broker.progress.begin(source: .preload, url: resource.url, method: "GET", group: request.group, connection: connection.number)
        var body: [UInt8]?
        do {
            var fetchRequest = try FetchRequest(json: ["url": .string(resource.url), "progress": false])
            fetchRequest.cache = mode
            let exchange = FetchExchange(call: call, request: fetchRequest, handler: fetch, groupToken: nil, trace: trace)
            (outcome, body) = try await withDeadline(request.timeout, message: "\(resource.url) took longer than \(request.timeout)") {
                try await self.read(exchange, resource: resource, keepBody: keepBody, token: token)
            }
            trace.finish()
        } catch {
            let failure = error as? BridgeError ?? BridgeError(.cancelled, "the preload was cancelled")
            outcome.error = failure
            trace.fail(failure)
        }
        if let group = request.group, let token { connection.groups.finish(group: group, token: token) }
        if reporting { await report(outcome, state: outcome.result == .failed ? "failed" : "finished") }
        return (outcome, body)
    }

    private func read(_ exchange: FetchExchange, resource: PreloadResource, keepBody: Bool, token: UInt64?) async throws -> (PreloadOutcome, [UInt8]?) {
        let hop = try await exchange.finalHop()
        let response = hop.exchange.response
        let total = FetchExchange.expectedLength(of: response)
        var outcome = PreloadOutcome(resource: resource, result: .failed, status: response.status, cache: hop.exchange.status)
        exchange.trace.response(status: response.status, cache: hop.exchange.status, total: total)
        var kept: [UInt8]? = keepBody ? [] : nil
        while let chunk = try await response.body.next() {
            try Task.checkCancellation()
            outcome.bytes += chunk.count
            tally.locked { $0.loaded += chunk.count }
            exchange.trace.progress(loaded: outcome.bytes)
            if let group = request.group, let token {
                call.connection.groups.update(group: group, token: token, loaded: outcome.bytes, total: total)
            }
            if keepBody {
                guard outcome.bytes <= PreloadHandler.maxDocumentBytes else {
                    throw BridgeError(.tooLarge, "\(hop.url) is over \(PreloadHandler.maxDocumentBytes) bytes")
                }
                kept! += chunk
            }
        }
        outcome.result = PreloadOutcome.result(of: hop.exchange)
        return (outcome, kept)
    }

    /// Counts `count` more resources towards `preload.progress`.
    func expect(_ count: Int) {
        tally.locked { $0.planned += count }
    }

    /// Sends `preload.resource` for one resource and, when it ended, `preload.progress`.
    func report(_ outcome: PreloadOutcome, state: String) async {
        guard case .object(var body) = outcome.json else { return }
        body["state"] = .string(state)
        await call.sendEvent("preload.resource", .object(body))
        guard state != "started" else { return }
        call.connection.broker.metrics?.preloadResourceEnded(result: outcome.result.rawValue)
        let (done, planned, loaded) = tally.locked { tally in
            tally.done += 1
            return (tally.done, max(tally.planned, tally.done), tally.loaded)
        }
        await call.sendEvent("preload.progress", [
            "done": .integer(done), "resources": .integer(planned), "bytes": .integer(loaded),
            "progress": .double(planned == 0 ? 1 : Double(done) / Double(planned)),
        ])
    }

    /// `scheme://host:port` of a normalised URL: the unit of `perHost`.
    static func origin(of url: String) -> String {
        guard let components = URLComponents(string: url) else { return url }
        return "\(components.scheme ?? "")://\(components.host ?? ""):\(components.port.map(String.init) ?? "")"
    }
}
