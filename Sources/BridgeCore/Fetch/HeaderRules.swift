/// Which request headers a client may set, and the checks on names and values.
///
/// The broker owns the upstream connection, so transport-level headers are dropped silently, as
/// a browser's fetch ignores them; docs/PROTOCOL.md lists them. From a page, the Fetch standard's
/// forbidden request headers (`Cookie`, `Origin`, `Referer`, `Sec-*`...) and `User-Agent` are
/// dropped too: the broker sets the page's identity itself. A headless client may set them.
public enum HeaderRules {
    /// Header names (lower-case) that are dropped from client requests.
    public static let dropped: Set<String> = [
        "host", "connection", "keep-alive", "content-length", "transfer-encoding", "te", "trailer",
        "upgrade", "expect", "proxy-connection", "accept-encoding", "accept-charset", "http2-settings",
    ]

    /// Header names (lower-case) a page may not set, besides `dropped`, `Proxy-*` and `Sec-*`:
    /// the Fetch standard's forbidden request-header names, `Cookie2`, and `User-Agent`
    /// (Chromium ignores it in fetch and XHR).
    public static let forbiddenForPages: Set<String> = [
        "access-control-request-headers", "access-control-request-method", "cookie", "cookie2", "date", "dnt", "origin",
        "referer", "set-cookie", "via", "user-agent",
    ]

    /// Methods a client may not use.
    public static let forbiddenMethods: Set<String> = ["CONNECT", "TRACE", "TRACK"]

    /// Validates `headers` and returns them without the dropped ones (and, from a `page`, without
    /// the names a page may not set).
    public static func sanitize(_ headers: HeaderList, page: Bool = false) throws(BridgeError) -> HeaderList {
        var named: Set<String> = []
        for field in headers where field.name.caseInsensitiveEquals("connection") {
            for token in field.value.split(separator: ",") {
                named.insert(token.trimmingSpaces.lowercased())
            }
        }
        var result = HeaderList()
        for field in headers {
            guard isToken(field.name) else {
                throw BridgeError(.badRequest, "header name \"\(field.name)\" is not a valid HTTP token")
            }
            guard isValidValue(field.value) else {
                throw BridgeError(.badRequest, "header \"\(field.name)\" has a value with CR, LF or NUL")
            }
            let lower = field.name.lowercased()
            if dropped.contains(lower) || lower.hasPrefix("proxy-") || named.contains(lower) { continue }
            if page, forbiddenForPages.contains(lower) || lower.hasPrefix("sec-") { continue }
            result.add(field.name, field.value.trimmingSpaces)
        }
        return result
    }

    /// Whether `string` is an RFC 9110 token (method and field-name syntax).
    public static func isToken(_ string: String) -> Bool {
        !string.isEmpty && string.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return true
            default:
                return "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
        }
    }

    static func isValidValue(_ value: String) -> Bool {
        !value.utf8.contains { $0 == 0x0A || $0 == 0x0D || $0 == 0x00 }
    }
}

extension StringProtocol {
    /// The string without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { $0 != " " && $0 != "\t" }) else { return "" }
        let last = scalars.lastIndex(where: { $0 != " " && $0 != "\t" })!
        // Most values have nothing to trim; the others are sliced, not rebuilt scalar by scalar.
        let end = scalars.index(after: last)
        if first == scalars.startIndex, end == scalars.endIndex { return String(self) }
        return String(decoding: utf8[first..<end], as: UTF8.self)
    }
}
