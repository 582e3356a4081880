/// What happened to one resource of a preload, as events and the reply list it.
public struct PreloadOutcome: Sendable {
    /// The end state of a resource.
    public enum Result: String, Sendable {
        /// A usable response was already in the cache (`hit`, `stale`, or `revalidated` by a 304).
        case cached
        /// Fetched and stored.
        case stored
        /// Fetched, but HTTP rules do not let the cache store it, so preloading it gains nothing.
        case uncacheable
        /// No response: a network error, a refused URL, a timeout.
        case failed
        /// Not fetched; `reason` says why.
        case skipped
    }

    /// The resource.
    public var resource: PreloadResource
    /// How it ended.
    public var result: Result
    /// The HTTP status, when a response came.
    public var status: Int?
    /// The reply cache status (`hit`, `miss`, ...), when a response came.
    public var cache: ReplyCacheStatus?
    /// Body bytes loaded.
    public var bytes = 0
    /// Why it was skipped: `max_count`, `max_bytes`, `invalid_url`, `duplicate`.
    public var reason: String?
    /// Why it failed.
    public var error: BridgeError?

    /// The resource's entry in the reply and in `preload.resource` events.
    public var json: JSONValue {
        var object = JSONObject([
            ("url", .string(resource.url)), ("source", .string(resource.source)), ("priority", .integer(resource.priority)),
            ("result", .string(result.rawValue)),
        ])
        if let status { object["status"] = .integer(status) }
        if let cache { object["cache"] = .string(cache.rawValue) }
        if result != .skipped { object["bytes"] = .integer(bytes) }
        if let reason { object["reason"] = .string(reason) }
        if let error { object["error"] = error.json }
        return .object(object)
    }

    /// The result of a fetched response: whether the cache had it, stored it, or may not.
    static func result(of exchange: CachedExchange) -> Result {
        switch exchange.status {
        case .hit, .stale, .revalidated:
            return .cached
        case .miss, .bypass:
            let stored = exchange.response.headers["cache-status"]?.split(separator: ";").contains { $0.trimmingSpaces == "stored" } ?? false
            return stored ? .stored : .uncacheable
        }
    }
}

/// Sums of a preload's outcomes: the reply's `totals`.
struct PreloadTotals {
    var counts: [PreloadOutcome.Result: Int] = [:]
    var bytes = 0

    init(_ outcomes: [PreloadOutcome]) {
        for outcome in outcomes {
            counts[outcome.result, default: 0] += 1
            bytes += outcome.bytes
        }
    }

    var json: JSONValue {
        var object = JSONObject([("resources", .integer(counts.values.reduce(0, +)))])
        for result in [PreloadOutcome.Result.cached, .stored, .uncacheable, .failed, .skipped] {
            object[result.rawValue] = .integer(counts[result] ?? 0)
        }
        object["bytes"] = .integer(bytes)
        return .object(object)
    }
}

/// The manifest format `preload` reads: `{"resources": [entry, ...]}` or a bare list, where an
/// entry is a URL string or `{"url": "...", "priority": N}`, URLs relative to the manifest's.
enum PreloadManifest {
    static func resources(from bytes: [UInt8], url: String) throws(BridgeError) -> [PreloadResource] {
        let document: JSONValue
        do { document = try JSONParser.parse(bytes) } catch {
            throw BridgeError(.badRequest, "the manifest at \(url) is not JSON: \(error.description)")
        }
        guard let entries = document.arrayValue ?? document["resources"]?.arrayValue else {
            throw BridgeError(.badRequest, "the manifest at \(url) must be a list or an object with a \"resources\" list")
        }
        return try entries.map { entry throws(BridgeError) in try PreloadRequest.resource(entry, source: "manifest", base: url) }
    }
}
