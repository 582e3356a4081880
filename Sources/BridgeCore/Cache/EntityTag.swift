/// An entity tag (RFC 9110 §8.8.3) for validator comparison.
///
/// Malformed tags (no quotes) are compared by their raw text.
public struct EntityTag: Sendable, Hashable {
    /// Whether the tag had the `W/` prefix.
    public let isWeak: Bool
    /// The opaque tag including its quotes.
    public let opaque: String

    /// Parses a tag such as `"xyz"` or `W/"xyz"`.
    public init(_ text: String) {
        let trimmed = text.trimmingSpaces
        if trimmed.hasPrefix("W/") {
            isWeak = true
            opaque = String(trimmed.dropFirst(2))
        } else {
            isWeak = false
            opaque = trimmed
        }
    }

    /// Strong comparison: both strong and identical.
    public func stronglyMatches(_ other: EntityTag) -> Bool {
        !isWeak && !other.isWeak && opaque == other.opaque
    }

    /// Weak comparison: identical opaque tags, weakness ignored.
    public func weaklyMatches(_ other: EntityTag) -> Bool { opaque == other.opaque }
}
