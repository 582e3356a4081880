/// The directives of all `Cache-Control` lines of a message, in order, as parsed text.
///
/// The grammar is RFC 9111 §5.2's `cache-directive = token [ "=" ( token / quoted-string ) ]`
/// in a comma-separated list: directive names are lowercased, duplicates are all kept (within a
/// line and across lines), values may be tokens or quoted strings (escapes removed), whitespace
/// is allowed around list members only. A member that breaks the grammar — whitespace before or
/// after `=` (`max-age =60`), text after a quoted string, a name followed by something that is
/// not `=` (`max-age 5`) — is kept under its name with `isValid == false`: its interpretation
/// (by `ResponseDirectives` and `RequestDirectives`) is the most restrictive one, e.g. an
/// invalid `max-age` makes a response stale. Parsing never throws; unknown extension directives
/// are kept here and ignored there.
public struct CacheControl: Sendable, Hashable {
    /// One directive: a lowercase name and its argument, if it had `=`.
    public struct Directive: Sendable, Hashable {
        /// The directive name, lowercase.
        public let name: String
        /// The argument without quotes, or nil when the directive had no `=`.
        public let value: String?
        /// Whether the argument was written as a quoted string.
        public let isQuoted: Bool
        /// Whether the member follows the grammar; an invalid one has its raw text as `value`.
        public let isValid: Bool

        /// Creates a directive; the name is lowercased.
        public init(name: String, value: String? = nil, isQuoted: Bool = false, isValid: Bool = true) {
            self.name = name.lowercased()
            self.value = value
            self.isQuoted = isQuoted
            self.isValid = isValid
        }
    }

    /// Every directive in order of appearance.
    public let directives: [Directive]

    /// Parses the given field line values (one string per `Cache-Control` line).
    public init(fieldValues: [String]) {
        directives = fieldValues.flatMap(CacheControl.parseLine)
    }

    /// Parses every `Cache-Control` line of `headers`.
    public init(headers: HeaderList) {
        self.init(fieldValues: headers.values("cache-control"))
    }

    /// Whether no directive was found.
    public var isEmpty: Bool { directives.isEmpty }

    /// Whether at least one directive has this name (any case), valid or not.
    public func contains(_ name: String) -> Bool {
        let key = name.lowercased()
        return directives.contains { $0.name == key }
    }

    /// Whether at least one occurrence of this directive breaks the grammar.
    public func hasInvalid(_ name: String) -> Bool {
        let key = name.lowercased()
        return directives.contains { $0.name == key && !$0.isValid }
    }

    /// The arguments of every valid occurrence of this directive, in order (nil for "no argument").
    public func arguments(_ name: String) -> [String?] {
        let key = name.lowercased()
        return directives.filter { $0.name == key && $0.isValid }.map(\.value)
    }

    /// Parses one field line into directives.
    static func parseLine(_ line: String) -> [Directive] {
        let bytes = Array(line.utf8)
        var result: [Directive] = []
        var i = 0
        func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 }
        func text(_ range: Range<Int>) -> String { String(decoding: bytes[range], as: UTF8.self) }
        /// Skips to the next comma outside a quoted string; returns the raw text skipped.
        func skipMember(from start: Int) -> String {
            var inQuotes = false
            while i < bytes.count, inQuotes || bytes[i] != 0x2C {
                if bytes[i] == 0x22 { inQuotes.toggle() } else if inQuotes, bytes[i] == 0x5C { i += 1 }
                i += 1
            }
            // A backslash as the last byte steps past the end: callers read up to `i` (the fuzz
            // target `cache-control` found `a="b"x"\` trapping here, a crash on an origin's header).
            i = min(i, bytes.count)
            return text(start..<i).trimmingSpaces
        }
        while i < bytes.count {
            while i < bytes.count, isSpace(bytes[i]) || bytes[i] == 0x2C { i += 1 }
            guard i < bytes.count else { break }
            let nameStart = i
            while i < bytes.count, bytes[i] != 0x3D, bytes[i] != 0x2C, bytes[i] != 0x22, !isSpace(bytes[i]) { i += 1 }
            let name = text(nameStart..<i)
            guard !name.isEmpty else {
                _ = skipMember(from: i)
                continue
            }
            let afterName = i
            while i < bytes.count, isSpace(bytes[i]) { i += 1 }
            if i == bytes.count || bytes[i] == 0x2C {
                result.append(Directive(name: name))
                continue
            }
            guard bytes[i] == 0x3D, i == afterName else {
                // `name =value`, `name value`: whitespace or junk where only `=` may stand.
                result.append(Directive(name: name, value: skipMember(from: afterName), isValid: false))
                continue
            }
            i += 1
            let valueStart = i
            if i < bytes.count, bytes[i] == 0x22 {
                i += 1
                var unescaped: [UInt8] = []
                var closed = false
                while i < bytes.count {
                    if bytes[i] == 0x22 { closed = true; break }
                    if bytes[i] == 0x5C, i + 1 < bytes.count { i += 1 }
                    unescaped.append(bytes[i])
                    i += 1
                }
                if closed { i += 1 }
                let junkStart = i
                while i < bytes.count, isSpace(bytes[i]) { i += 1 }
                if closed, i == bytes.count || bytes[i] == 0x2C {
                    result.append(Directive(name: name, value: String(decoding: unescaped, as: UTF8.self), isQuoted: true))
                } else {
                    _ = skipMember(from: junkStart)
                    result.append(Directive(name: name, value: text(valueStart..<i).trimmingSpaces, isValid: false))
                }
                continue
            }
            while i < bytes.count, bytes[i] != 0x2C, !isSpace(bytes[i]), bytes[i] != 0x22 { i += 1 }
            let value = text(valueStart..<i)
            while i < bytes.count, isSpace(bytes[i]) { i += 1 }
            if !value.isEmpty, i == bytes.count || bytes[i] == 0x2C {
                result.append(Directive(name: name, value: value))
            } else {
                // `name=`, `name= value`, `name=a b`: not a token.
                result.append(Directive(name: name, value: skipMember(from: valueStart), isValid: false))
            }
        }
        return result
    }
}

/// Parses RFC 9111 delta-seconds (`1*DIGIT`) with the §1.2.2 overflow rule.
///
/// Values above 2^31 are clamped to 2^31 (2147483648), as a cache "MUST" when it cannot
/// represent them. Signs, fractions, spaces inside and empty strings are invalid (nil).
public enum DeltaSeconds {
    /// The clamp value, 2^31 seconds.
    public static let maximum: Double = 2_147_483_648

    /// The number of seconds in `text`, or nil when it is not `1*DIGIT` (after trimming OWS).
    public static func parse(_ text: String) -> Double? {
        let digits = text.trimmingSpaces
        guard !digits.isEmpty else { return nil }
        var value: Double = 0
        for byte in digits.utf8 {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            value = min(value * 10 + Double(byte - 0x30), maximum)
        }
        return value
    }
}
