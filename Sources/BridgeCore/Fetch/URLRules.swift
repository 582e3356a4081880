/// The upstream URL rules: allow and deny globs over the whole URL, and the address rule.
///
/// A URL is allowed when it matches no deny pattern, matches an allow pattern if any are given,
/// and connects only to public addresses, unless an allow pattern names it, which also admits
/// loopback, private and link-local addresses.
///
/// `alsoAllow` admits URLs the same way an allow pattern does (any address) but never turns the
/// allow list on: with only `alsoAllow` patterns, every other public URL stays allowed. It is how
/// the broker admits what its operator configured beside the rules (the demo origin), without
/// narrowing what else a page may reach.
public struct URLRules: Sendable {
    /// Globs that admit a URL (and its private addresses); empty admits any public URL.
    public var allow: [String]
    /// Globs that refuse a URL.
    public var deny: [String]
    /// Globs that admit a URL (and its private addresses) without making the allow list exclusive.
    public var alsoAllow: [String]

    /// Creates rules from glob patterns where `*` matches any run of characters.
    public init(allow: [String] = [], deny: [String] = [], alsoAllow: [String] = []) {
        self.allow = allow
        self.deny = deny
        self.alsoAllow = alsoAllow
    }

    /// What the rules say about a URL before its address is known.
    public enum Verdict: Sendable, Equatable {
        /// Refused, with the reason.
        case refused(String)
        /// Allowed to any address, because an allow pattern names it.
        case anyAddress
        /// Allowed to public addresses only.
        case publicAddressesOnly
    }

    /// Checks a normalised URL (`scheme://host:port/path?query`).
    public func check(_ url: String) -> Verdict {
        if let pattern = deny.first(where: { Self.glob($0, matches: url) }) {
            return .refused("\(url) matches the deny pattern \(pattern)")
        }
        if allow.contains(where: { Self.glob($0, matches: url) }) { return .anyAddress }
        if alsoAllow.contains(where: { Self.glob($0, matches: url) }) { return .anyAddress }
        if !allow.isEmpty { return .refused("\(url) matches no allow pattern") }
        return .publicAddressesOnly
    }

    /// Whether `text` matches the glob `pattern` as a whole; `*` matches any run of characters.
    public static func glob(_ pattern: String, matches text: String) -> Bool {
        var steps = 0
        return glob(pattern, matches: text, steps: &steps)
    }

    /// `glob(_:matches:)`, counting the loop's steps in `steps`: at most
    /// (text bytes + 1) × (pattern bytes + 1), since only the last `*` is ever backtracked to
    /// (the fuzz target `glob` checks that bound).
    static func glob(_ pattern: String, matches text: String, steps: inout Int) -> Bool {
        let p = Array(pattern.utf8), t = Array(text.utf8)
        var pi = 0, ti = 0
        var star = -1, mark = 0
        while ti < t.count {
            steps += 1
            if pi < p.count, p[pi] == UInt8(ascii: "*") {
                star = pi
                mark = ti
                pi += 1
            } else if pi < p.count, p[pi] == t[ti] {
                pi += 1
                ti += 1
            } else if star >= 0 {
                pi = star + 1
                mark += 1
                ti = mark
            } else {
                return false
            }
        }
        while pi < p.count, p[pi] == UInt8(ascii: "*") { pi += 1; steps += 1 }
        return pi == p.count
    }
}
