/// A JSON value as the bridge protocol carries it.
///
/// Integers that fit in `Int` stay integers (ids, byte counts, statuses); other numbers are
/// `Double`. Objects keep their members in the order they were parsed or built, so an echo
/// returns what it was given.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case integer(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.integer(let a), .integer(let b)): return a == b
        case (.integer, .double), (.double, .integer), (.double, .double): return lhs.doubleValue == rhs.doubleValue
        case (.string(let a), .string(let b)): return a == b
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)): return a == b
        default: return false
        }
    }
}

/// An ordered JSON object; lookups return the last member with a given key.
public struct JSONObject: Sendable, Equatable {
    /// The members in order; duplicates are kept as parsed.
    public var members: [(key: String, value: JSONValue)]

    /// Creates an object from members in order.
    public init(_ members: [(key: String, value: JSONValue)] = []) {
        self.members = members
    }

    /// The value of the last member named `key`; setting replaces it or appends a new member.
    public subscript(key: String) -> JSONValue? {
        get {
            for member in members.reversed() where member.key == key {
                return member.value
            }
            return nil
        }
        set {
            if let index = members.lastIndex(where: { $0.key == key }) {
                if let newValue {
                    members[index].value = newValue
                } else {
                    members.remove(at: index)
                }
            } else if let newValue {
                members.append((key, newValue))
            }
        }
    }

    /// The member names, in order.
    public var keys: [String] { members.map(\.key) }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members.count == rhs.members.count
            && zip(lhs.members, rhs.members).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(JSONObject(elements.map { (key: $0.0, value: $0.1) }))
    }
}
