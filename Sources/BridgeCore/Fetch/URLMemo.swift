import Synchronization

/// A bounded memo of a pure string function, for URL parsing that every post repeats: a page
/// asks for the same URLs again and again, and parsing one costs more than the rest of a
/// cache hit's bookkeeping.
final class URLMemo: Sendable {
    private let values = Mutex<[String: String]>([:])
    /// The most inputs remembered; past it, all are forgotten.
    let capacity: Int

    init(capacity: Int = 1024) { self.capacity = capacity }

    /// `compute(input)`, remembered when it succeeds.
    func value(for input: String, _ compute: (String) throws(BridgeError) -> String) throws(BridgeError) -> String {
        if let known = values.locked({ $0[input] }) { return known }
        let value = try compute(input)
        remember(value, for: input)
        return value
    }

    /// Remembers `value` as what `input` gives, computed along with something else.
    func remember(_ value: String, for input: String) {
        values.locked { values in
            if values.count >= capacity { values.removeAll(keepingCapacity: true) }
            values[input] = value
        }
    }
}
