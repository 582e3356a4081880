import Foundation

/// The parts of a URL the broker's URL rules, cache keys and cookie rules read: what
/// `URLComponents` gives, scheme and host lower-cased.
///
/// Every request's URL is parsed several times (normalised, put in rule form, parsed for its
/// cookies), and `URLComponents` costs several microseconds per parse even for a plain ASCII
/// URL (RFC 3986 parsing, then ICU's IDNA for the host). `ascii(_:)` reads the common case, an
/// http(s) URL whose every byte is already valid where it stands, in one pass over the bytes;
/// anything else (non-ASCII, credentials, an IP-literal, a percent-encoded or unusual host,
/// a byte `URLComponents` would encode or reject, an odd port) falls back to `foundation(_:)`.
/// `URLPartsTests` and the `url` fuzz target check that the two agree wherever `ascii` answers.
public struct URLParts: Equatable, Sendable {
    /// The scheme, lower-case; nil when the URL has none.
    public var scheme: String?
    /// The percent-encoded host, lower-case, IPv6 brackets kept; nil when there is none.
    public var host: String?
    /// The port written in the URL.
    public var port: Int?
    /// Whether the URL has a user or a password in it.
    public var hasCredentials: Bool
    /// The percent-encoded path, as written (possibly empty).
    public var path: String
    /// The percent-encoded query without its `?`; nil when there is none.
    public var query: String?

    /// The parts of `text`: the ASCII fast path when it applies, `URLComponents` otherwise; nil
    /// when `URLComponents` cannot parse it.
    public init?(_ text: String) {
        guard let parts = URLParts.ascii(text) ?? URLParts.foundation(text) else { return nil }
        self = parts
    }

    init(scheme: String?, host: String?, port: Int?, hasCredentials: Bool, path: String, query: String?) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.hasCredentials = hasCredentials
        self.path = path
        self.query = query
    }

    /// The parts as `URLComponents(string:)` reads them.
    static func foundation(_ text: String) -> URLParts? {
        guard let components = URLComponents(string: text) else { return nil }
        return URLParts(scheme: components.scheme?.lowercased(), host: components.percentEncodedHost?.lowercased(),
                        port: components.port, hasCredentials: components.user != nil || components.password != nil,
                        path: components.percentEncodedPath, query: components.percentEncodedQuery)
    }

    /// The parts of a plain ASCII `http`/`https` URL, read byte by byte: `scheme://host[:port]`
    /// then an optional path, query and fragment, where the host is letters, digits, `.` and `-`
    /// (not an `xn--` label, which IDNA checks), the port 1 to 65535 without leading zeros, and
    /// every byte of the path, query and fragment is one RFC 3986 allows there unencoded (a `%`
    /// followed by two hex digits). nil for anything else: not an answer, a "use the slow path".
    public static func ascii(_ text: String) -> URLParts? {
        text.utf8.withContiguousStorageIfAvailable(ascii) ?? nil
    }

    private static func ascii(_ bytes: UnsafeBufferPointer<UInt8>) -> URLParts? {
        let end = bytes.count
        // scheme ":" "//"
        var index = 0
        while index < end, bytes[index] != UInt8(ascii: ":") { index += 1 }
        let https: Bool
        switch index {
        case 4: https = false
        case 5: https = true
        default: return nil
        }
        for (offset, expected) in "https".utf8.prefix(index).enumerated() where bytes[offset] | 0x20 != expected { return nil }
        guard index + 2 < end, bytes[index + 1] == UInt8(ascii: "/"), bytes[index + 2] == UInt8(ascii: "/") else { return nil }
        index += 3

        // host [":" port]
        let hostStart = index
        var dotted = true  // at the start of a label
        while index < end {
            let byte = bytes[index]
            if byte == UInt8(ascii: ":") || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { break }
            guard isHostByte(byte) else { return nil }
            if dotted, end - index >= 4, bytes[index] | 0x20 == UInt8(ascii: "x"), bytes[index + 1] | 0x20 == UInt8(ascii: "n"),
                bytes[index + 2] == UInt8(ascii: "-"), bytes[index + 3] == UInt8(ascii: "-")
            {
                return nil
            }
            dotted = byte == UInt8(ascii: ".")
            index += 1
        }
        guard index > hostStart else { return nil }
        let host = lowercased(bytes, hostStart..<index)
        var port: Int?
        if index < end, bytes[index] == UInt8(ascii: ":") {
            index += 1
            let portStart = index
            var value = 0
            while index < end, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                value = value * 10 + Int(bytes[index] - UInt8(ascii: "0"))
                index += 1
                guard index - portStart <= 5 else { return nil }
            }
            guard index > portStart, bytes[portStart] != UInt8(ascii: "0"), value <= 65535 else { return nil }
            guard index == end || bytes[index] == UInt8(ascii: "/") || bytes[index] == UInt8(ascii: "?") || bytes[index] == UInt8(ascii: "#")
            else { return nil }
            port = value
        }

        // path ["?" query] ["#" fragment]
        let pathStart = index
        guard let pathEnd = scan(bytes, from: index, allowing: .path) else { return nil }
        index = pathEnd
        var query: String?
        if index < end, bytes[index] == UInt8(ascii: "?") {
            guard let queryEnd = scan(bytes, from: index + 1, allowing: .query) else { return nil }
            query = String(decoding: UnsafeBufferPointer(rebasing: bytes[(index + 1)..<queryEnd]), as: UTF8.self)
            index = queryEnd
        }
        if index < end {  // a "#"
            guard let fragmentEnd = scan(bytes, from: index + 1, allowing: .query), fragmentEnd == end else { return nil }
        }
        return URLParts(scheme: https ? "https" : "http", host: host, port: port, hasCredentials: false,
                        path: String(decoding: UnsafeBufferPointer(rebasing: bytes[pathStart..<pathEnd]), as: UTF8.self),
                        query: query)
    }

    private static func isHostByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "."), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }

    private static func lowercased(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
        String(unsafeUninitializedCapacity: range.count) { buffer in
            for (offset, byte) in bytes[range].enumerated() {
                buffer[offset] = (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
            }
            return range.count
        }
    }

    private enum Part { case path, query }

    /// The end of the part starting at `start`: the index of the first byte that ends it (`?` or
    /// `#` for a path, `#` for a query or fragment) or the end; nil at a byte not allowed in it.
    private static func scan(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, allowing part: Part) -> Int? {
        var index = start
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "#"): return index
            case UInt8(ascii: "?"):
                if part == .path { return index }
            case UInt8(ascii: "%"):
                guard index + 2 < bytes.count, isHex(bytes[index + 1]), isHex(bytes[index + 2]) else { return nil }
                index += 2
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"),  // unreserved
                UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"),
                UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="),  // sub-delims
                UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "/"):
                break
            default:
                return nil
            }
            index += 1
        }
        return index
    }

    private static func isHex(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"): return true
        default: return false
        }
    }
}
