/// The secondary cache key of a stored response: the request header values its `Vary` names.
///
/// Built at storage time from the response's `Vary` and the request headers actually sent.
/// Values are normalised before comparison: lines combined, list members trimmed and rejoined
/// with ", ", runs of whitespace collapsed; `accept-encoding` and `accept-language` are also
/// lowercased (case-insensitive by definition). An absent header only matches absence.
/// `Vary: *` produces a wildcard key that never matches (and such responses are not stored).
public struct VaryKey: Sendable, Hashable {
    /// The lowercase field names from `Vary`, sorted and unique.
    public let fieldNames: [String]
    /// The normalised request values, aligned with `fieldNames` (nil = header absent).
    public let values: [String?]
    /// Whether `Vary` contained `*`.
    public let isWildcard: Bool

    /// Builds the key from response headers (`Vary`) and the request headers that were sent.
    public init(responseHeaders: HeaderList, requestHeaders: HeaderList) {
        let names = responseHeaders.listMembers("vary").map { $0.lowercased() }
        isWildcard = names.contains("*")
        fieldNames = Array(Set(names.filter { $0 != "*" })).sorted()
        values = fieldNames.map { VaryKey.normalizedValue(of: $0, in: requestHeaders) }
    }

    /// Restores a key from its parts (as a store saved them).
    public init(fieldNames: [String], values: [String?], isWildcard: Bool) {
        self.fieldNames = fieldNames
        self.values = values
        self.isWildcard = isWildcard
    }

    /// Whether a new request selects the response stored under this key (RFC 9111 §4.1).
    public func matches(_ requestHeaders: HeaderList) -> Bool {
        guard !isWildcard else { return false }
        for (name, stored) in zip(fieldNames, values) {
            if VaryKey.normalizedValue(of: name, in: requestHeaders) != stored { return false }
        }
        return true
    }

    /// The normalised value of a request header for Vary matching, nil when absent.
    public static func normalizedValue(of name: String, in headers: HeaderList) -> String? {
        let lines = headers.values(name)
        guard !lines.isEmpty else { return nil }
        let caseInsensitive = name == "accept-encoding" || name == "accept-language"
        // The lines combined first, as RFC 9110 §5.3 combines them: split line by line, a quote
        // left open in one line would be closed by the next once the value is written as one
        // line, so normalising a normalised value would change it (found by the fuzz target `vary`).
        let members = HeaderList.splitList(lines.joined(separator: ", ")).map { member -> String in
            let collapsed = member.split(whereSeparator: { $0 == " " || $0 == "\t" })
                .joined(separator: " ")
            return caseInsensitive ? collapsed.lowercased() : collapsed
        }
        return members.joined(separator: ", ")
    }
}
