import Synchronization

/// What serving one stored response as a fresh hit needs, worked out once per entry instead of
/// on every hit: its freshness inputs, its served headers as JSON, its encoded bodies.
///
/// Built from the entry alone (never from a request), so it holds for as long as the entry is
/// unchanged; `HitTemplates` drops it when the entry differs.
final class HitTemplate: Sendable {
    /// The entry it was built from.
    let entry: CachedResponse
    /// The freshness lifetime (RFC 9111 §4.2.1).
    let lifetime: Double
    /// `corrected_initial_age`: the current age at the response time (RFC 9111 §4.2.3).
    let initialAge: Double
    /// Whether the response carries `no-cache` (it is never served without validation).
    let noCache: Bool
    /// The stored `Content-Type`, for choosing a body mode.
    let contentType: String?
    /// `[` and the served header pairs before the `age` field, each followed by a comma.
    private let headersBeforeAge: [UInt8]
    /// The served header pairs after the `age` field, each preceded by a comma.
    private let headersAfterAge: [UInt8]
    /// `,["cache-status","bridge-broker; hit; ttl=`: the `Cache-Status` pair up to its ttl.
    private let cacheStatusPrefix: [UInt8]
    private let encodedBodies = Mutex<[String: (body: [UInt8], encoded: [UInt8])]>([:])

    /// The largest encoded body kept per template.
    static let encodedBodyLimit = 16 * 1024

    init(entry: CachedResponse, options: CachePolicyOptions) {
        self.entry = entry
        (lifetime, _) = Freshness.lifetime(status: entry.status, headers: entry.headers, responseTime: entry.responseTime, options: options)
        initialAge = Freshness.currentAge(
            headers: entry.headers, requestTime: entry.requestTime, responseTime: entry.responseTime, now: entry.responseTime)
        noCache = entry.directives.noCache
        contentType = entry.headers["content-type"]
        // As Storability.headersForServing: no withheld fields, one `age` field where the first one was.
        // Values written as `headerEncoding: utf8` asks (the default); a `latin1` request for an
        // entry with other than ASCII values takes the task's path (FetchHandler+Immediate).
        let fields = entry.headers.removing(Storability.withheldFields(entry.headers, revalidated: false)).fields
            .map { (name: $0.name, value: ByteString.utf8Text($0.value)) }
        let ageIndex = fields.firstIndex { $0.name.lowercased() == "age" } ?? fields.count
        var before = JSONWriter(capacity: 512)
        before.appendRaw("[")
        var after = JSONWriter(capacity: 64)
        for (index, field) in fields.enumerated() where index != ageIndex {
            if index > ageIndex {
                guard field.name.lowercased() != "age" else { continue }
                after.appendRaw(",")
                after.append(pair: field)
            } else {
                before.append(pair: field)
                before.appendRaw(",")
            }
        }
        headersBeforeAge = before.bytes
        headersAfterAge = after.bytes
        var status = JSONWriter(capacity: 64)
        status.appendRaw(",[\"cache-status\",")
        status.append(CacheStatusEntry(cacheName: options.cacheName, hit: true, ttl: 0).headerValue)
        // Cut the closing quote and the 0: the ttl is written per hit.
        cacheStatusPrefix = Array(status.bytes.dropLast(2))
    }

    /// The current age at `now` (RFC 9111 §4.2.3), exactly as `Freshness` computes it.
    func currentAge(at now: Double) -> Double {
        initialAge + max(0, now - entry.responseTime)
    }

    /// Appends the served headers: the stored ones without cookies, with `Age` and `Cache-Status`.
    func writeHeaders(into writer: inout JSONWriter, age: Int, ttl: Int) {
        writer.appendRaw(headersBeforeAge)
        writer.appendRaw("[\"age\",\"")
        writer.append(age)
        writer.appendRaw("\"]")
        writer.appendRaw(headersAfterAge)
        writer.appendRaw(cacheStatusPrefix)
        writer.append(ttl)
        writer.appendRaw("\"]]")
    }

    /// `body` encoded by `encode` under `key`, computed once when small enough to keep.
    ///
    /// The kept encoding is used only for the same bytes: a store may reuse an id.
    func encodedBody(_ key: String, body: [UInt8], encode: ([UInt8]) -> [UInt8]) -> [UInt8] {
        if let kept = encodedBodies.locked({ $0[key] }), kept.body == body { return kept.encoded }
        let encoded = encode(body)
        if encoded.count <= Self.encodedBodyLimit { encodedBodies.locked { $0[key] = (body, encoded) } }
        return encoded
    }
}

/// The hit templates of recently served entries, by entry id; bounded, rebuilt when an entry
/// changes (a 304 freshening keeps the id but not the metadata).
final class HitTemplates: Sendable {
    private let templates = Mutex<[String: HitTemplate]>([:])
    /// The most templates kept; past it, all are dropped and rebuilt on demand.
    static let capacity = 512

    func template(for entry: CachedResponse, options: CachePolicyOptions) -> HitTemplate {
        if let kept = templates.locked({ $0[entry.id] }), kept.entry == entry { return kept }
        let made = HitTemplate(entry: entry, options: options)
        templates.locked { templates in
            if templates.count >= Self.capacity { templates.removeAll(keepingCapacity: true) }
            templates[entry.id] = made
        }
        return made
    }
}

extension JSONWriter {
    /// Appends one header field as the protocol sends it: `[name, value]`, the name lower-case.
    mutating func append(pair field: (name: String, value: String)) {
        appendRaw("[")
        append(field.name.lowercased())
        appendRaw(",")
        append(field.value)
        appendRaw("]")
    }
}
