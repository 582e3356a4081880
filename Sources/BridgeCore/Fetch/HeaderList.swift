/// An ordered list of HTTP header fields, duplicates kept, looked up case-insensitively.
///
/// Names keep the case they were given (they go upstream as the client wrote them); values are
/// trimmed of optional whitespace, which carries no meaning (RFC 9110 §5.5). Lookups take any
/// case. `self[name]` joins repeated lines with ", " as RFC 9110 §5.3 allows for list-based
/// fields (do not use it for `Set-Cookie` or date fields, which contain commas).
public struct HeaderList: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral {
    /// The fields in order, names as given.
    public var fields: [(name: String, value: String)]

    /// Creates a list from fields in order.
    public init(_ fields: [(name: String, value: String)] = []) {
        self.fields = fields.map { ($0.name, $0.value.trimmingSpaces) }
    }

    /// Creates a list from the protocol's `[[name, value]]` form; malformed entries are skipped.
    public init(pairs: [[String]]) {
        self.init(pairs.compactMap { $0.count == 2 ? ($0[0], $0[1]) : nil })
    }

    /// Creates a list from a dictionary literal; repeated keys are kept as separate lines.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements.map { ($0.0, $0.1) })
    }

    /// Creates a list from an array literal of (name, value) tuples.
    public init(arrayLiteral elements: (String, String)...) {
        self.init(elements.map { ($0.0, $0.1) })
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    /// Whether the list has no fields.
    public var isEmpty: Bool { fields.isEmpty }

    /// Appends a field; its value is trimmed.
    public mutating func add(_ name: String, _ value: String) {
        fields.append((name, value.trimmingSpaces))
    }

    /// Removes every field named `name`.
    public mutating func remove(_ name: String) {
        fields.removeAll { $0.name.caseInsensitiveEquals(name) }
    }

    /// Replaces every field named `name` with one field, placed where the first one was.
    ///
    /// When the name is absent the field is appended.
    public mutating func set(_ name: String, _ value: String) {
        guard let index = fields.firstIndex(where: { $0.name.caseInsensitiveEquals(name) }) else {
            add(name, value)
            return
        }
        fields[index] = (name, value.trimmingSpaces)
        var position = 0
        fields.removeAll { field in
            defer { position += 1 }
            return position != index && field.name.caseInsensitiveEquals(name)
        }
    }

    /// The values of every field named `name`, in order (one entry per line).
    public func values(_ name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    /// The value of the first field named `name`, or nil.
    ///
    /// Use for singleton fields such as `Date`, `Expires`, `Last-Modified` and `ETag`.
    public func first(_ name: String) -> String? {
        fields.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// The field's values combined with ", " as RFC 9110 allows; nil when absent.
    public subscript(name: String) -> String? {
        let all = values(name)
        return all.isEmpty ? nil : all.joined(separator: ", ")
    }

    /// Whether a field named `name` is present.
    public func contains(_ name: String) -> Bool {
        fields.contains { $0.name.caseInsensitiveEquals(name) }
    }

    /// The comma-separated list members of every field named `name`, trimmed, empties dropped.
    ///
    /// Commas inside quoted strings do not split. Suitable for `Vary`, `Connection`, `Pragma`.
    public func listMembers(_ name: String) -> [String] {
        values(name).flatMap { HeaderList.splitList($0) }
    }

    /// A copy without any field whose name is in `names` (compared case-insensitively).
    public func removing(_ names: Set<String>) -> HeaderList {
        let keys = Set(names.map { $0.lowercased() })
        return HeaderList(fields.filter { !keys.contains($0.name.lowercased()) })
    }

    /// A copy with the fields of `other` appended after these.
    public func appending(_ other: HeaderList) -> HeaderList {
        HeaderList(fields + other.fields)
    }

    /// The fields as `[[name, value]]` with lower-case names.
    public var pairs: [[String]] { fields.map { [$0.name.lowercased(), $0.value] } }

    /// The fields as `[[name, value]]` with lower-case names, as the protocol sends them.
    public var json: JSONValue {
        .array(pairs.map { .array($0.map(JSONValue.string)) })
    }

    /// Splits a field value on commas outside quoted strings, trimming OWS and dropping empties.
    ///
    /// Backslash escapes inside quoted strings are honoured so `"a\",b"` stays one member.
    public static func splitList(_ value: String) -> [String] {
        var members: [String] = []
        var current = ""
        var inQuotes = false
        var escaped = false
        func flush() {
            let member = current.trimmingSpaces
            if !member.isEmpty { members.append(member) }
            current = ""
        }
        for character in value {
            if escaped {
                escaped = false
            } else if inQuotes && character == "\\" {
                escaped = true
            } else if character == "\"" {
                inQuotes.toggle()
            } else if character == "," && !inQuotes {
                flush()
                continue
            }
            current.append(character)
        }
        flush()
        return members
    }

    public static func == (lhs: HeaderList, rhs: HeaderList) -> Bool {
        lhs.fields.count == rhs.fields.count
            && zip(lhs.fields, rhs.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(fields.count)
        for field in fields {
            hasher.combine(field.name)
            hasher.combine(field.value)
        }
    }
}

extension String {
    /// ASCII case-insensitive equality, as HTTP field names compare.
    func caseInsensitiveEquals(_ other: String) -> Bool {
        let lhs = utf8, rhs = other.utf8
        guard lhs.count == rhs.count else { return false }
        for (a, b) in zip(lhs, rhs) where a != b {
            let la = a >= 65 && a <= 90 ? a + 32 : a
            let lb = b >= 65 && b <= 90 ? b + 32 : b
            if la != lb { return false }
        }
        return true
    }
}
