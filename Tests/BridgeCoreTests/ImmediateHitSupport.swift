import BridgeCore
import Foundation

/// A broker with `fetch` and `progress.subscribe` over a memory cache, a test clock and a
/// scripted origin with these routes: `/fresh/N` (N bytes of text, max-age=60), `/vary`
/// (varies on Accept-Language), `/swr` (max-age=1, stale-while-revalidate=600), `/moved`
/// (a cacheable 301 to `/fresh/3`), `/aged` (Date, two Age fields, a cookie), `/image`
/// (binary content type).
struct HitRig {
    let sink = RecordingSink()
    let rig: CacheRig
    let broker: Broker
    let connection: BrokerConnection

    /// With `immediate: false` the store answers only through its async methods, so every hit
    /// runs through the fetch task: the reference the immediate path must match.
    init(immediate: Bool = true, delay: Duration = .zero, configure: (inout BrokerConfiguration) -> Void = { _ in }) {
        let memory = MemoryCacheStore()
        rig = CacheRig(store: memory, storeOverride: immediate ? nil : AsyncOnlyStore(memory)) { request in
            if delay > .zero { try await Task.sleep(for: delay) }
            let components = URLComponents(string: request.url)
            let path = components?.path ?? ""
            if path.hasPrefix("/fresh/") {
                let size = Int(path.dropFirst(7)) ?? 0
                return response(200, ["content-type": "text/plain", "cache-control": "max-age=60", "set-cookie": "a=b", "content-length": "\(size)"],
                                body: String(repeating: "x", count: size), chunk: 64)
            }
            switch path {
            case "/vary":
                let language = request.headers.first("accept-language") ?? "none"
                return response(200, ["content-type": "text/plain", "cache-control": "max-age=60", "vary": "Accept-Language"], body: "lang=\(language)")
            case "/swr": return response(200, ["content-type": "text/plain", "cache-control": "max-age=1, stale-while-revalidate=600"], body: "swr")
            case "/moved": return response(301, ["cache-control": "max-age=60", "location": "/fresh/3"], body: "")
            case "/aged":
                return response(200, [("x-first", "1"), ("age", "3"), ("date", "Tue, 14 Nov 2023 22:13:15 GMT"), ("set-cookie", "a=b"), ("Age", "9"),
                                      ("cache-control", "max-age=100"), ("content-type", "application/json")], body: "{\"a\":\"\\u0001é\"}")
            case "/image": return response(200, ["content-type": "image/png", "cache-control": "max-age=60"], body: "\u{1}\u{2}png")
            default: return response(404, [:], body: "no")
            }
        }
        var configuration = BrokerConfiguration()
        configure(&configuration)
        broker = Broker(configuration: configuration)
        broker.register("fetch", FetchHandler(upstream: rig.upstream, rules: URLRules(allow: ["*"]), cache: rig.cache))
        broker.register("progress.subscribe", ProgressSubscribeHandler(hub: broker.progress))
        connection = broker.connect(sink: sink, info: ConnectionInfo(origin: nil, peer: "t"))
    }

    /// Posts a fetch of `path` on a.example as post `id`.
    func send(_ path: String, id: Int, _ extra: [(String, JSONValue)] = []) {
        var body = JSONObject([("url", .string("http://a.example" + path))])
        for (key, value) in extra { body[key] = value }
        post(connection, ["type": "post", "name": "fetch", "id": .integer(id), "body": .object(body)])
    }

    /// Fetches `path` as post `id`, waits for the reply and for the cache write it started.
    func fetch(_ path: String, id: Int, _ extra: [(String, JSONValue)] = []) async throws -> JSONValue {
        send(path, id: id, extra)
        let reply = try await sink.reply(id)
        await rig.cache.waitForPendingWrites()
        return reply
    }

    /// The reply to post `id` if it has already been sent.
    func replyNow(_ id: Int) -> JSONValue? {
        sink.jsonFrames.first { $0["type"] == "reply" && $0["id"]?.intValue == id }
    }

    /// Every frame of post `id` in order: events by name, `binary` for body frames, `reply`.
    func sequence(of id: Int) -> [String] {
        sink.frames.compactMap { frame -> String? in
            if frame.binary { return BinaryFrameHeader.id(of: frame.bytes) == id ? "binary" : nil }
            guard let json = frame.json, json["id"]?.intValue == id else { return nil }
            return json["type"] == "reply" ? "reply" : json["name"]?.stringValue
        }
    }

    /// The payload bytes of post `id`'s binary frames and whether the last one had END, as
    /// text; nil without any.
    func binaryBody(of id: Int) -> String? {
        let frames = sink.frames.filter { $0.binary && BinaryFrameHeader.id(of: $0.bytes) == id }
        guard let last = frames.last else { return nil }
        return "\(frames.flatMap { $0.bytes[BinaryFrameHeader.size...] }) end=\(last.bytes[1] & BinaryFrameHeader.endFlag != 0)"
    }

    /// The bodies of post `id`'s events named `name`.
    func events(_ name: String, of id: Int) -> [JSONValue] {
        sink.jsonFrames.filter { $0["type"] == "event" && $0["id"]?.intValue == id && $0["name"]?.stringValue == name }.compactMap { $0["body"] }
    }
}

/// A store that forwards the async `CacheStore` methods only, so nothing is served at once.
final class AsyncOnlyStore: CacheStore {
    let base: MemoryCacheStore
    init(_ base: MemoryCacheStore) { self.base = base }
    func entries(for key: String) async -> [CachedResponse] { await base.entries(for: key) }
    func body(of entry: CachedResponse) async -> CacheBody? { await base.body(of: entry) }
    func makeWriter(for entry: CachedResponse, expectedLength: Int?) async -> (any CacheEntryWriter)? {
        await base.makeWriter(for: entry, expectedLength: expectedLength)
    }
    func update(_ entry: CachedResponse) async { await base.update(entry) }
    func remove(_ entry: CachedResponse) async { await base.remove(entry) }
    func removeAll(for key: String) async { await base.removeAll(for: key) }
    func clear(_ scope: CacheClearScope) async -> Int { await base.clear(scope) }
    func stats() async -> CacheStoreStats { await base.stats() }
}

extension BinaryFrameHeader {
    /// The post id a binary frame names.
    static func id(of frame: [UInt8]) -> Int? {
        frame.withUnsafeBytes { try? BinaryFrameHeader.parse($0).id }
    }
}
