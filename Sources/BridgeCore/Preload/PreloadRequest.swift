/// One resource a preload will fetch: where it came from and how urgent it is.
public struct PreloadResource: Sendable, Equatable {
    /// The normalised absolute URL.
    public var url: String
    /// Higher first, when the preload orders by priority.
    public var priority: Int
    /// `urls`, `page` or `manifest`.
    public var source: String

    /// Creates a resource.
    public init(url: String, priority: Int = PreloadResource.defaultPriority, source: String) {
        self.url = url
        self.priority = priority
        self.source = source
    }

    /// The priority of a resource that names none.
    public static let defaultPriority = 1
}

/// The order in which a preload starts its resources.
public enum PreloadOrder: String, Sendable {
    /// By priority, highest first; equal priorities keep their listed order.
    case priority
    /// As listed: `urls`, then the page's links, then the manifest's entries.
    case listed
}

/// A `preload` post's body, validated.
public struct PreloadRequest: Sendable {
    /// Resources named directly.
    public var urls: [PreloadResource] = []
    /// A page whose `<link rel="preload|modulepreload|prefetch">` resources are preloaded.
    public var page: String?
    /// A JSON manifest listing resources (see docs/PROTOCOL.md for its format).
    public var manifest: String?
    /// The page the resources are for, whose `page.preloaded` gets them: `page` when not given.
    public var forPage: String?
    /// Most resources in flight at once.
    public var concurrency = 6
    /// Most resources in flight at once per origin (scheme, host and port).
    public var perHost = 6
    /// The order resources start in.
    public var order = PreloadOrder.priority
    /// Stop starting resources once this many body bytes have been loaded.
    public var maxBytes: Int?
    /// Fetch at most this many resources.
    public var maxCount: Int?
    /// Store the page itself in the cache too, and list it as a resource.
    public var includePage = false
    /// The page load (`group.progress`) the resources count towards.
    public var group: String?
    /// The time each resource may take.
    public var timeout = Duration.milliseconds(FetchRequest.defaultTimeoutMilliseconds)

    /// The most `concurrency` and `perHost` may be.
    public static let maxConcurrency = 64

    /// Validates a `preload` body; throws `bad_request` with the first problem found.
    public init(json: JSONValue) throws(BridgeError) {
        guard case .object(let object) = json else {
            throw BridgeError(.badRequest, "preload body must be an object, not \(json.typeName)")
        }
        let known: Set<String> = ["urls", "page", "manifest", "forPage", "concurrency", "perHost", "priority", "maxBytes", "maxCount", "includePage", "group", "timeout"]
        if let unknown = object.keys.first(where: { !known.contains($0) }) {
            throw BridgeError(.badRequest, "preload has no option \"\(unknown)\"")
        }
        if let list = object["urls"], !list.isNull {
            guard let entries = list.arrayValue else { throw BridgeError(.badRequest, "\"urls\" must be a list, not \(list.typeName)") }
            urls = try entries.map { entry throws(BridgeError) in try PreloadRequest.resource(entry, source: "urls") }
        }
        page = try FetchRequest.string(object, "page").map { text throws(BridgeError) in try FetchRequest.normalize(url: text) }
        manifest = try FetchRequest.string(object, "manifest").map { text throws(BridgeError) in try FetchRequest.normalize(url: text) }
        forPage = try FetchRequest.string(object, "forPage").map { text throws(BridgeError) in try FetchRequest.normalize(url: text) }
        guard !urls.isEmpty || page != nil || manifest != nil else {
            throw BridgeError(.badRequest, "preload needs \"urls\", a \"page\" or a \"manifest\"")
        }
        concurrency = try Self.bounded(object, "concurrency", 1...Self.maxConcurrency) ?? concurrency
        perHost = try Self.bounded(object, "perHost", 1...Self.maxConcurrency) ?? perHost
        maxBytes = try Self.bounded(object, "maxBytes", 0...Int.max)
        maxCount = try Self.bounded(object, "maxCount", 0...Int.max)
        if let name = try FetchRequest.string(object, "priority") {
            guard let value = PreloadOrder(rawValue: name) else {
                throw BridgeError(.badRequest, "unknown priority \"\(name)\"; use priority or listed")
            }
            order = value
        }
        includePage = try FetchRequest.bool(object, "includePage") ?? false
        if includePage, page == nil { throw BridgeError(.badRequest, "\"includePage\" needs a \"page\"") }
        group = try FetchRequest.string(object, "group")
        if let milliseconds = try Self.bounded(object, "timeout", 1...86_400_000) { timeout = .milliseconds(milliseconds) }
    }

    /// A `urls` or manifest entry: a URL string, or `{"url": ..., "priority": N}`; relative URLs
    /// resolve against `base`.
    static func resource(_ entry: JSONValue, source: String, base: String? = nil) throws(BridgeError) -> PreloadResource {
        let text: String
        var priority = PreloadResource.defaultPriority
        switch entry {
        case .string(let value):
            text = value
        case .object(let object):
            guard let value = object["url"]?.stringValue else {
                throw BridgeError(.badRequest, "a resource object needs a \"url\" string: \(entry.jsonString)")
            }
            text = value
            priority = try FetchRequest.integer(object, "priority") ?? priority
        default:
            throw BridgeError(.badRequest, "a resource must be a URL string or {\"url\", \"priority\"}, not \(entry.jsonString)")
        }
        let absolute = base.flatMap { HTMLLinks.resolve(text, against: $0) } ?? text
        return PreloadResource(url: try FetchRequest.normalize(url: absolute), priority: priority, source: source)
    }

    private static func bounded(_ object: JSONObject, _ key: String, _ range: ClosedRange<Int>) throws(BridgeError) -> Int? {
        guard let value = try FetchRequest.integer(object, key) else { return nil }
        guard range.contains(value) else {
            throw BridgeError(.badRequest, "\"\(key)\" must be \(range.lowerBound) to \(range.upperBound == Int.max ? "any size" : String(range.upperBound))")
        }
        return value
    }
}
