/// A `Set-Cookie` line parsed as RFC 6265bis §5.6 says, before the jar applies it to a URL.
public struct SetCookie: Sendable, Equatable {
    /// The cookie's name (may be empty).
    public var name: String
    /// The cookie's value.
    public var value: String
    /// `Expires`, as seconds since the epoch, if present and parseable.
    public var expires: Double?
    /// `Max-Age` in seconds, if present and valid (may be zero or negative: delete).
    public var maxAge: Int?
    /// `Domain` without a leading dot, lower-case, if present and not empty.
    public var domain: String?
    /// `Path`, if present and starting with `/`.
    public var path: String?
    /// `Secure` was present.
    public var secure = false
    /// `HttpOnly` was present.
    public var httpOnly = false
    /// `SameSite`, `unspecified` when absent or unknown.
    public var sameSite = SameSite.unspecified
    /// `Partitioned` (CHIPS): kept per top-level site.
    public var partitioned = false

    /// The most bytes a cookie's name and value may have together.
    public static let maxNameValueBytes = 4096
    /// The most bytes an attribute value may have; a longer attribute is ignored.
    public static let maxAttributeValueBytes = 1024

    /// Parses one `Set-Cookie` line; throws a `CookieRejection` saying why the whole line is ignored.
    public init(parsing line: String) throws(CookieRejection) {
        let bytes = Array(line.utf8)
        if bytes.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) {
            throw CookieRejection("the line has a control character")
        }
        let semicolon = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.endIndex
        let pair = bytes[..<semicolon]
        if let equals = pair.firstIndex(of: UInt8(ascii: "=")) {
            name = Self.trim(pair[..<equals])
            value = Self.trim(pair[(equals + 1)...])
        } else {
            name = ""
            value = Self.trim(pair)
        }
        if name.isEmpty, value.isEmpty { throw CookieRejection("the cookie has neither a name nor a value") }
        if name.utf8.count + value.utf8.count > Self.maxNameValueBytes {
            throw CookieRejection("name and value are over \(Self.maxNameValueBytes) bytes")
        }
        var attributes = bytes[semicolon...]
        while !attributes.isEmpty {
            attributes = attributes.dropFirst()  // the ";"
            let end = attributes.firstIndex(of: UInt8(ascii: ";")) ?? attributes.endIndex
            apply(attributes[..<end])
            attributes = attributes[end...]
        }
    }

    /// Applies one `cookie-av`; the last occurrence of an attribute wins.
    private mutating func apply(_ av: ArraySlice<UInt8>) {
        let attributeName: String
        let attributeValue: String
        if let equals = av.firstIndex(of: UInt8(ascii: "=")) {
            attributeName = Self.trim(av[..<equals])
            attributeValue = Self.trim(av[(equals + 1)...])
        } else {
            attributeName = Self.trim(av)
            attributeValue = ""
        }
        guard attributeValue.utf8.count <= Self.maxAttributeValueBytes else { return }
        switch attributeName.lowercased() {
        case "expires":
            if let date = CookieDate.parse(attributeValue) { expires = date }
        case "max-age":
            if let seconds = Self.maxAge(attributeValue) { maxAge = seconds }
        case "domain":
            guard !attributeValue.isEmpty else { return }
            var domain = Substring(attributeValue)
            if domain.hasPrefix(".") { domain = domain.dropFirst() }
            // `Domain=.` leaves an empty cookie-domain, which RFC 6265bis §5.7 treats as no Domain
            // attribute: a host-only cookie. Kept as "", the jar refused the cookie as one for a
            // public suffix (found by the fuzz target set-cookie).
            self.domain = domain.isEmpty ? nil : domain.lowercased()
        case "path":
            path = attributeValue.hasPrefix("/") ? attributeValue : nil
        case "secure":
            secure = true
        case "httponly":
            httpOnly = true
        case "samesite":
            sameSite = SameSite(attribute: attributeValue)
        case "partitioned":
            partitioned = true
        default:
            break
        }
    }

    /// `Max-Age`: an optional `-` and digits, else the attribute is ignored. Huge values saturate.
    private static func maxAge(_ text: String) -> Int? {
        var digits = Substring(text)
        let negative = digits.hasPrefix("-")
        if negative { digits = digits.dropFirst() }
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        let magnitude = digits.count > 15 ? 999_999_999_999_999 : Int(digits)!
        return negative ? -magnitude : magnitude
    }

    private static func trim(_ bytes: ArraySlice<UInt8>) -> String {
        let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }) else { return "" }
        let last = bytes.lastIndex(where: { !isSpace($0) })!
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}

/// Why the jar ignored a cookie; logged at debug level, never with the cookie's value.
public struct CookieRejection: Error, Sendable, Equatable, CustomStringConvertible {
    /// The reason.
    public let reason: String
    /// Creates a rejection.
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}
