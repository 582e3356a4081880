/// Parses and formats HTTP-date values (RFC 9110 §5.6.7) as seconds since the Unix epoch.
///
/// Accepts the preferred IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) and the two obsolete
/// forms, RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`).
/// Tolerated leniencies: any letter case, a one-digit day, `UTC` for `GMT`, a four-digit
/// year in the RFC 850 form, surrounding whitespace. The weekday name must be a real one
/// but is not checked against the date. Anything else (e.g. `0`, `-1`) parses to nil, which
/// callers treat as "invalid" (an invalid `Expires` means already expired).
public enum HTTPDate {
    /// Seconds since the epoch for `text`, or nil when it is not a valid HTTP-date.
    ///
    /// `now` (seconds since the epoch) enables RFC 9110's two-digit-year rule for RFC 850
    /// dates: a year more than 50 years in the future means the previous century. Without it,
    /// years 00–69 mean 20xx and 70–99 mean 19xx.
    public static func parse(_ text: String, now: Double? = nil) -> Double? {
        var scanner = DateScanner(text)
        scanner.skipSpaces()
        guard let weekday = scanner.letters(), isWeekday(weekday) else { return nil }
        let result: Double?
        if scanner.take(",") {
            scanner.skipSpaces()
            result = scanner.peekDashDate() ? rfc850(&scanner, now: now) : imfFixdate(&scanner)
        } else {
            result = asctime(&scanner)
        }
        scanner.skipSpaces()
        return scanner.atEnd ? result : nil
    }

    /// The IMF-fixdate text for a time in seconds since the epoch (fractions are dropped).
    public static func format(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded(.down))
        let days = whole >= 0 ? whole / 86_400 : (whole - 86_399) / 86_400
        let secondOfDay = whole - days * 86_400
        let (year, month, day) = civil(fromDays: days)
        let weekday = ((days % 7) + 11) % 7  // 1970-01-01 was a Thursday (index 4).
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        var yearText = String(year)
        while yearText.count < 4 { yearText = "0" + yearText }
        return "\(weekdays[weekday]), \(two(day)) \(months[month - 1]) \(yearText) "
            + "\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) GMT"
    }

    static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun",
                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    static let fullWeekdays = ["sunday", "monday", "tuesday", "wednesday", "thursday",
                               "friday", "saturday"]

    static func isWeekday(_ name: String) -> Bool {
        let lower = name.lowercased()
        return weekdays.contains { $0.lowercased() == lower } || fullWeekdays.contains(lower)
    }

    static func month(_ name: String?) -> Int? {
        guard let lower = name?.lowercased() else { return nil }
        return months.firstIndex { $0.lowercased() == lower }.map { $0 + 1 }
    }

    /// `06 Nov 1994 08:49:37 GMT`, after the weekday and comma.
    static func imfFixdate(_ s: inout DateScanner) -> Double? {
        guard let day = s.digits(1...2), s.spaces(), let month = month(s.letters()), s.spaces(),
              let year = s.digits(4...4), s.spaces(), let time = s.time(), s.spaces(),
              s.zone()
        else { return nil }
        return epoch(year: year, month: month, day: day, time: time)
    }

    /// `06-Nov-94 08:49:37 GMT`, after the weekday and comma.
    static func rfc850(_ s: inout DateScanner, now: Double?) -> Double? {
        guard let day = s.digits(1...2), s.take("-"), let month = month(s.letters()),
              s.take("-"), let rawYear = s.digitString(2...4), s.spaces(),
              let time = s.time(), s.spaces(), s.zone(), rawYear.count != 3,
              var year = Int(rawYear)
        else { return nil }
        if rawYear.count == 2 { year = fullYear(twoDigit: year, now: now) }
        return epoch(year: year, month: month, day: day, time: time)
    }

    /// `Nov  6 08:49:37 1994`, after the weekday.
    static func asctime(_ s: inout DateScanner) -> Double? {
        guard s.spaces(), let month = month(s.letters()), s.spaces(),
              let day = s.digits(1...2), s.spaces(), let time = s.time(), s.spaces(),
              let year = s.digits(4...4)
        else { return nil }
        return epoch(year: year, month: month, day: day, time: time)
    }

    static func fullYear(twoDigit: Int, now: Double?) -> Int {
        guard let now else { return twoDigit < 70 ? 2000 + twoDigit : 1900 + twoDigit }
        let days = Int((now / 86_400).rounded(.down))
        let currentYear = civil(fromDays: days).year
        var year = currentYear - currentYear % 100 + twoDigit
        if year > currentYear + 50 { year -= 100 }
        return year
    }

    static func epoch(year: Int, month: Int, day: Int, time: (Int, Int, Int)) -> Double? {
        let monthLengths = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
        let length = month == 2 && leap ? 29 : monthLengths[month - 1]
        guard day >= 1, day <= length, time.0 < 24, time.1 < 60, time.2 <= 60 else { return nil }
        let seconds = min(time.2, 59)  // A leap second is read as :59.
        let days = days(fromCivil: year, month, day)
        return Double(days * 86_400 + time.0 * 3_600 + time.1 * 60 + seconds)
    }

    /// Days since 1970-01-01 for a proleptic Gregorian date (H. Hinnant's algorithm).
    static func days(fromCivil year: Int, _ month: Int, _ day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The proleptic Gregorian date for days since 1970-01-01.
    static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

/// A byte cursor over an HTTP-date string.
struct DateScanner {
    private let bytes: [UInt8]
    private var index = 0

    init(_ text: String) { bytes = Array(text.utf8) }

    var atEnd: Bool { index == bytes.count }

    mutating func skipSpaces() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
    }

    /// Consumes one or more spaces; false when there is none.
    mutating func spaces() -> Bool {
        let start = index
        skipSpaces()
        return index > start
    }

    mutating func take(_ character: Character) -> Bool {
        guard index < bytes.count, let ascii = character.asciiValue, bytes[index] == ascii else {
            return false
        }
        index += 1
        return true
    }

    mutating func letters() -> String? {
        let start = index
        while index < bytes.count, (bytes[index] | 0x20) >= 0x61, (bytes[index] | 0x20) <= 0x7A {
            index += 1
        }
        return index > start ? String(decoding: bytes[start..<index], as: UTF8.self) : nil
    }

    mutating func digitString(_ count: ClosedRange<Int>) -> String? {
        let start = index
        while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39,
              index - start < count.upperBound
        {
            index += 1
        }
        let length = index - start
        if index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 { return nil }
        return count.contains(length) ? String(decoding: bytes[start..<index], as: UTF8.self) : nil
    }

    mutating func digits(_ count: ClosedRange<Int>) -> Int? {
        digitString(count).flatMap { Int($0) }
    }

    /// `HH:MM:SS`, two digits each.
    mutating func time() -> (Int, Int, Int)? {
        guard let hour = digits(2...2), take(":"), let minute = digits(2...2), take(":"),
              let second = digits(2...2)
        else { return nil }
        return (hour, minute, second)
    }

    /// `GMT` or `UTC`, any case.
    mutating func zone() -> Bool {
        guard let name = letters()?.uppercased() else { return false }
        return name == "GMT" || name == "UTC"
    }

    /// Whether the upcoming text looks like `DD-` (the RFC 850 date form).
    func peekDashDate() -> Bool {
        var probe = index
        while probe < bytes.count, bytes[probe] >= 0x30, bytes[probe] <= 0x39 { probe += 1 }
        return probe > index && probe < bytes.count && bytes[probe] == 0x2D
    }
}
