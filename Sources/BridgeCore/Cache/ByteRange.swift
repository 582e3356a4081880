/// A `Range: bytes=...` request header as the cache uses it (RFC 9110 §14.1.1, §14.2).
///
/// Only the `bytes` unit is understood. A header that is absent, names another unit or breaks
/// the grammar is `.none`: the request is then treated as a request for the whole
/// representation, which RFC 9110 allows ("a server MAY ignore the Range header field").
/// Several ranges are `.multiple`: the cache serves them whole (200) from a whole stored
/// response and never from a partial one (see `CachePlanner`).
public enum RangeRequest: Sendable, Hashable {
    /// No usable `Range` header.
    case none
    /// One range.
    case single(ByteRangeSpec)
    /// Two or more ranges.
    case multiple([ByteRangeSpec])

    /// Parses the request's `Range` header; several `Range` lines are invalid (`.none`).
    public init(headers: HeaderList) {
        let lines = headers.values("range")
        guard lines.count == 1 else {
            self = .none
            return
        }
        self = RangeRequest(lines[0])
    }

    /// Parses one `Range` field value.
    public init(_ value: String) {
        guard let equals = value.firstIndex(of: "="),
              value[..<equals].trimmingSpaces.lowercased() == "bytes"
        else {
            self = .none
            return
        }
        let members = value[value.index(after: equals)...].split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingSpaces }.filter { !$0.isEmpty }
        var specs: [ByteRangeSpec] = []
        for member in members {
            guard let spec = ByteRangeSpec(member) else {
                self = .none
                return
            }
            specs.append(spec)
        }
        switch specs.count {
        case 0: self = .none
        case 1: self = .single(specs[0])
        default: self = .multiple(specs)
        }
    }
}

/// One `range-spec` of the `bytes` unit: `first-last`, `first-` or `-suffix`.
public enum ByteRangeSpec: Sendable, Hashable {
    /// `first-pos "-" [ last-pos ]`; `last` nil for an open range.
    case from(first: Int, last: Int?)
    /// `"-" suffix-length`: the last `length` bytes.
    case suffix(length: Int)

    /// Parses one member (`0-99`, `100-`, `-50`); nil when it breaks the grammar, including
    /// a last position before the first.
    public init?(_ text: String) {
        guard let dash = text.firstIndex(of: "-") else { return nil }
        let head = text[..<dash], tail = text[text.index(after: dash)...]
        func number(_ digits: Substring) -> Int? {
            guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            // Positions past Int's range cannot be satisfied; cap them instead of failing.
            return Int(digits) ?? Int.max
        }
        if head.isEmpty {
            guard let length = number(tail) else { return nil }
            self = .suffix(length: length)
            return
        }
        guard let first = number(head) else { return nil }
        if tail.isEmpty {
            self = .from(first: first, last: nil)
            return
        }
        guard let last = number(tail), last >= first else { return nil }
        self = .from(first: first, last: last)
    }

    /// The inclusive byte positions selected in a representation of `length` bytes, or nil
    /// when the range is unsatisfiable there (RFC 9110 §14.1.1: a first position at or past
    /// the length, or a zero suffix).
    public func resolve(length: Int) -> ClosedRange<Int>? {
        switch self {
        case .from(let first, let last):
            guard first < length else { return nil }
            return first...min(last ?? Int.max, length - 1)
        case .suffix(let suffix):
            guard suffix > 0, length > 0 else { return nil }
            return max(0, length - suffix)...(length - 1)
        }
    }

    /// The header text, `bytes=...`, for a request of this one range.
    public var headerValue: String {
        switch self {
        case .from(let first, let last): return "bytes=\(first)-\(last.map(String.init) ?? "")"
        case .suffix(let length): return "bytes=-\(length)"
        }
    }
}

/// A `Content-Range: bytes first-last/complete` response header (RFC 9110 §14.4).
public struct ContentRange: Sendable, Hashable {
    /// The inclusive byte positions the body carries.
    public var range: ClosedRange<Int>
    /// The length of the whole representation.
    public var completeLength: Int

    /// Creates a content range.
    public init(range: ClosedRange<Int>, completeLength: Int) {
        self.range = range
        self.completeLength = completeLength
    }

    /// Parses `bytes a-b/L`; nil for any other form, including an unknown length (`/*`), an
    /// unsatisfied range (`*/L`) and a range that does not fit the length.
    public init?(_ value: String) {
        let text = value.trimmingSpaces
        guard text.count > 6, text.prefix(6).lowercased() == "bytes " else { return nil }
        let rest = text.dropFirst(6).trimmingSpaces
        let parts = rest.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let bounds = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        func number(_ digits: Substring) -> Int? {
            guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return Int(digits)
        }
        guard bounds.count == 2, let first = number(bounds[0]), let last = number(bounds[1]),
              let complete = number(parts[1]), first <= last, last < complete
        else { return nil }
        self.init(range: first...last, completeLength: complete)
    }

    /// Reads the `Content-Range` of response headers (exactly one line).
    public init?(headers: HeaderList) {
        let lines = headers.values("content-range")
        guard lines.count == 1 else { return nil }
        self.init(lines[0])
    }

    /// The header value, `bytes a-b/L`.
    public var headerValue: String { "bytes \(range.lowerBound)-\(range.upperBound)/\(completeLength)" }

    /// Whether the range is the whole representation.
    public var isComplete: Bool { range.lowerBound == 0 && range.upperBound == completeLength - 1 }
}
