/// The cookie-date algorithm of RFC 6265 §5.1.1, which `Expires` uses: lenient about order,
/// separators and zones, unlike HTTP-dates.
public enum CookieDate {
    /// The date as seconds since the epoch, or nil when the algorithm fails to parse it.
    public static func parse(_ text: String) -> Double? {
        var time: (Int, Int, Int)?
        var day: Int?
        var month: Int?
        var year: Int?
        for token in tokens(of: text) {
            if time == nil, let found = self.time(token) { time = found; continue }
            if day == nil, let found = digits(token, count: 1...2) { day = found; continue }
            if month == nil, let found = self.month(token) { month = found; continue }
            if year == nil, let found = digits(token, count: 2...4) { year = found; continue }
        }
        guard let time, let day, let month, var year else { return nil }
        if (70...99).contains(year) { year += 1900 } else if (0...69).contains(year) { year += 2000 }
        guard (1...31).contains(day), year >= 1601, time.0 <= 23, time.1 <= 59, time.2 <= 59 else { return nil }
        return HTTPDate.epoch(year: year, month: month, day: day, time: time)
    }

    // delimiter = %x09 / %x20-2F / %x3B-40 / %x5B-60 / %x7B-7E
    private static func isDelimiter(_ byte: UInt8) -> Bool {
        byte == 0x09 || (0x20...0x2F).contains(byte) || (0x3B...0x40).contains(byte) || (0x5B...0x60).contains(byte)
            || (0x7B...0x7E).contains(byte)
    }

    private static func tokens(of text: String) -> [ArraySlice<UInt8>] {
        Array(text.utf8).split(whereSeparator: isDelimiter)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }

    private static func leadingNumber(_ bytes: ArraySlice<UInt8>, count: ClosedRange<Int>) -> (Int, ArraySlice<UInt8>)? {
        let run = bytes.prefix(while: isDigit)
        guard count.contains(run.count) else { return nil }
        let rest = bytes[run.endIndex...]
        return (run.reduce(0) { $0 * 10 + Int($1 - 0x30) }, rest)
    }

    /// A number of `count` digits, optionally followed by a non-digit and anything.
    private static func digits(_ token: ArraySlice<UInt8>, count: ClosedRange<Int>) -> Int? {
        guard let (value, rest) = leadingNumber(token, count: count) else { return nil }
        if let next = rest.first, isDigit(next) { return nil }
        return value
    }

    /// `1*2DIGIT ":" 1*2DIGIT ":" 1*2DIGIT ( non-digit *OCTET )` (":" is not a delimiter).
    private static func time(_ token: ArraySlice<UInt8>) -> (Int, Int, Int)? {
        var rest = token
        var fields: [Int] = []
        for index in 0..<3 {
            guard let (value, after) = leadingNumber(rest, count: 1...2) else { return nil }
            fields.append(value)
            rest = after
            if index < 2 {
                guard rest.first == UInt8(ascii: ":") else { return nil }
                rest = rest.dropFirst()
            }
        }
        if let next = rest.first, isDigit(next) { return nil }
        return (fields[0], fields[1], fields[2])
    }

    private static func month(_ token: ArraySlice<UInt8>) -> Int? {
        guard token.count >= 3 else { return nil }
        let prefix = String(decoding: token.prefix(3), as: UTF8.self).lowercased()
        let names = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        return names.firstIndex(of: prefix).map { $0 + 1 }
    }
}
