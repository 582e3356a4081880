/// The `cache.stats` handler: sizes per tier, counters and health of the HTTP cache.
///
/// Reply: `{memory: {entries, bytes, capacity}, disk: {entries, bytes, capacity}, hits, misses,
/// revalidations, collapsed, evictions, damaged, backgroundRevalidations, disabled, writable, reason}`
/// (`capacity` null when unbounded; `reason` null when the cache works).
public struct CacheStatsHandler: BridgeHandler {
    /// The cache reported on.
    public let cache: HTTPCache

    /// Creates the handler.
    public init(cache: HTTPCache) { self.cache = cache }

    public func handle(_ call: HandlerCall) async throws -> JSONValue {
        await Self.stats(of: cache)
    }

    /// The reply body for `cache`.
    public static func stats(of cache: HTTPCache) async -> JSONValue {
        let store = await cache.store.stats()
        let counters = cache.statistics
        func tier(_ entries: Int, _ bytes: Int, _ capacity: Int?) -> JSONValue {
            ["entries": .integer(entries), "bytes": .integer(bytes), "capacity": capacity.map { .integer($0) } ?? .null]
        }
        return .object(JSONObject([
            ("memory", tier(store.memoryEntries, store.memoryBytes, store.memoryCapacity)),
            ("disk", tier(store.diskEntries, store.diskBytes, store.diskCapacity)),
            ("hits", .integer(counters.hits)), ("misses", .integer(counters.misses)),
            ("revalidations", .integer(counters.revalidations)), ("collapsed", .integer(counters.collapsed)),
            ("evictions", .integer(store.evictions)), ("damaged", .integer(store.damaged)),
            ("backgroundRevalidations", .integer(cache.background.count)),
            ("disabled", .bool(store.disabledReason != nil)),
            ("writable", .bool(store.disabledReason == nil && store.writesDisabledReason == nil)),
            ("reason", (store.disabledReason ?? store.writesDisabledReason).map { .string($0) } ?? .null),
        ]))
    }
}

/// The `cache.clear` handler: deletes everything, or entries by URL prefix or modification time.
///
/// Body: absent/`null`/`{}` clears everything; `{"prefix": "https://example.com/"}` the entries
/// whose URL starts with it; `{"since": <ms since epoch>}` those stored or revalidated at or after
/// that time. Reply: `{removed: N}`.
public struct CacheClearHandler: BridgeHandler {
    /// The cache cleared.
    public let cache: HTTPCache
    /// The record of preloaded pages, forgotten with the whole cache (it names what was in it).
    public let pages: PreloadedPages?

    /// Creates the handler.
    public init(cache: HTTPCache, pages: PreloadedPages? = nil) {
        self.cache = cache
        self.pages = pages
    }

    public func handle(_ call: HandlerCall) async throws -> JSONValue {
        let scope = try Self.scope(call.body)
        if case .all = scope { pages?.clear() }
        return ["removed": .integer(await cache.store.clear(scope))]
    }

    /// Parses the request body into a scope; `bad_request` for anything else.
    public static func scope(_ body: JSONValue) throws(BridgeError) -> CacheClearScope {
        if body.isNull { return .all }
        guard case .object(let object) = body else {
            throw BridgeError(.badRequest, "cache.clear takes {}, {\"prefix\": string} or {\"since\": ms}")
        }
        if let prefix = object["prefix"], !prefix.isNull {
            guard let text = prefix.stringValue else { throw BridgeError(.badRequest, "\"prefix\" must be a string") }
            return .prefix(text)
        }
        if let since = object["since"], !since.isNull {
            guard let milliseconds = since.doubleValue else {
                throw BridgeError(.badRequest, "\"since\" must be milliseconds since the epoch")
            }
            return .modifiedSince(milliseconds / 1000)
        }
        return .all
    }
}
