/// The directives of all `Cache-Control` lines of a message, in order, as parsed text.
///
/// Parsing is tolerant: directive names are lowercased, duplicates are all kept (within a line
/// and across lines), values may be tokens or quoted strings (escapes removed), whitespace
/// around names, `=` and values is skipped, and malformed pieces never throw. Interpretation
/// (which duplicates win, what an invalid number means) is done by `ResponseDirectives` and
/// `RequestDirectives`; unknown extension directives are kept here and ignored there.
public struct CacheControl: Sendable, Hashable {
    /// One directive: a lowercase name and its argument, if it had `=`.
    public struct Directive: Sendable, Hashable {
        /// The directive name, lowercase.
        public let name: String
        /// The argument without quotes, or nil when the directive had no `=`.
        public let value: String?
        /// Whether the argument was written as a quoted string.
        public let isQuoted: Bool

        /// Creates a directive; the name is lowercased.
        public init(name: String, value: String? = nil, isQuoted: Bool = false) {
            self.name = name.lowercased()
            self.value = value
            self.isQuoted = isQuoted
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

    /// Whether at least one directive has this name (any case).
    public func contains(_ name: String) -> Bool {
        let key = name.lowercased()
        return directives.contains { $0.name == key }
    }

    /// The arguments of every occurrence of this directive, in order (nil for "no argument").
    public func arguments(_ name: String) -> [String?] {
        let key = name.lowercased()
        return directives.filter { $0.name == key }.map(\.value)
    }

    /// Parses one field line into directives.
    static func parseLine(_ line: String) -> [Directive] {
        let bytes = Array(line.utf8)
        var result: [Directive] = []
        var i = 0
        func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 }
        func text(_ range: Range<Int>) -> String { String(decoding: bytes[range], as: UTF8.self) }
        while i < bytes.count {
            while i < bytes.count, isSpace(bytes[i]) || bytes[i] == 0x2C { i += 1 }
            let nameStart = i
            while i < bytes.count, bytes[i] != 0x3D, bytes[i] != 0x2C, !isSpace(bytes[i]) { i += 1 }
            let name = text(nameStart..<i)
            while i < bytes.count, isSpace(bytes[i]) { i += 1 }
            var value: String?
            var quoted = false
            if i < bytes.count, bytes[i] == 0x3D {
                i += 1
                while i < bytes.count, isSpace(bytes[i]) { i += 1 }
                if i < bytes.count, bytes[i] == 0x22 {
                    quoted = true
                    i += 1
                    var unescaped: [UInt8] = []
                    while i < bytes.count, bytes[i] != 0x22 {
                        if bytes[i] == 0x5C, i + 1 < bytes.count { i += 1 }
                        unescaped.append(bytes[i])
                        i += 1
                    }
                    i += 1  // Closing quote (or past the end when unterminated).
                    value = String(decoding: unescaped, as: UTF8.self)
                    // Junk between the closing quote and the next comma makes the value invalid.
                    let junkStart = i
                    while i < bytes.count, bytes[i] != 0x2C { i += 1 }
                    if i > junkStart, !text(junkStart..<i).trimmingSpaces.isEmpty {
                        value = "\"" + (value ?? "") + "\"" + text(junkStart..<i).trimmingSpaces
                        quoted = false
                    }
                } else {
                    let valueStart = i
                    while i < bytes.count, bytes[i] != 0x2C { i += 1 }
                    value = text(valueStart..<i).trimmingSpaces
                }
            } else if i < bytes.count, bytes[i] != 0x2C {
                // Garbage after a name without '=' (e.g. "max-age 5"): keep the name, mark it.
                let junkStart = i
                while i < bytes.count, bytes[i] != 0x2C { i += 1 }
                value = nil
                if !name.isEmpty {
                    result.append(Directive(name: name + " " + text(junkStart..<i).trimmingSpaces))
                }
                continue
            }
            if !name.isEmpty { result.append(Directive(name: name, value: value, isQuoted: quoted)) }
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
