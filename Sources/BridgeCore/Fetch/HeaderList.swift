/// An ordered list of HTTP header fields, duplicates kept, looked up case-insensitively.
public struct HeaderList: Sendable, Equatable, Sequence {
    /// The fields in order, names as given.
    public var fields: [(name: String, value: String)]

    /// Creates a list from fields in order.
    public init(_ fields: [(name: String, value: String)] = []) {
        self.fields = fields
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    /// Appends a field.
    public mutating func add(_ name: String, _ value: String) {
        fields.append((name, value))
    }

    /// Removes every field named `name`.
    public mutating func remove(_ name: String) {
        fields.removeAll { $0.name.caseInsensitiveEquals(name) }
    }

    /// Replaces every field named `name` with one field.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        add(name, value)
    }

    /// The values of every field named `name`, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
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

    /// The fields as `[[name, value]]` with lower-case names, as the protocol sends them.
    public var json: JSONValue {
        .array(fields.map { .array([.string($0.name.lowercased()), .string($0.value)]) })
    }

    public static func == (lhs: HeaderList, rhs: HeaderList) -> Bool {
        lhs.fields.count == rhs.fields.count
            && zip(lhs.fields, rhs.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
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
