/// Parses and formats HTTP-date values (RFC 9110 §5.6.7) as seconds since the Unix epoch.
///
/// Exactly the grammar of RFC 9110: the preferred IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`)
/// and the two obsolete forms, RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`, a two-digit year) and
/// asctime (`Sun Nov  6 08:49:37 1994`, a one-digit day padded with a space). Names are
/// case-sensitive (`%s"Mon"`, `%s"GMT"`), separators are single spaces, the zone is `GMT` and
/// nothing else. Anything else is invalid (nil): `0`, `-1`, `UTC` or another zone, extra or
/// missing spaces, dashes in an IMF-fixdate, a two-digit year outside the RFC 850 form (or a
/// four-digit one inside it), a one-digit day or hour. Callers treat invalid as the RFCs say
/// (an invalid `Expires` means already expired). The only leniency: optional whitespace around
/// the whole value, which is not part of a field value. The weekday must be a real one but is
/// not checked against the date (RFC 9110 does not ask recipients to).
public enum HTTPDate {
    /// Seconds since the epoch for `text`, or nil when it is not a valid HTTP-date.
    ///
    /// `now` (seconds since the epoch) enables RFC 9110's two-digit-year rule for RFC 850
    /// dates: a year more than 50 years in the future means the previous century. Without it,
    /// years 00–69 mean 20xx and 70–99 mean 19xx.
    public static func parse(_ text: String, now: Double? = nil) -> Double? {
        var scanner = DateScanner(text)
        scanner.skipSpaces()
        guard let weekday = scanner.letters() else { return nil }
        let result: Double?
        if weekdays.contains(weekday) {
            if scanner.take(",") {
                guard scanner.space() else { return nil }
                result = imfFixdate(&scanner)
            } else {
                result = asctime(&scanner)
            }
        } else if fullWeekdays.contains(weekday), scanner.take(","), scanner.space() {
            result = rfc850(&scanner, now: now)
        } else {
            return nil
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
    static let fullWeekdays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday",
                               "Friday", "Saturday"]

    static func month(_ name: String?) -> Int? {
        guard let name else { return nil }
        return months.firstIndex(of: name).map { $0 + 1 }
    }

    /// `06 Nov 1994 08:49:37 GMT`, after `day-name "," SP`.
    static func imfFixdate(_ s: inout DateScanner) -> Double? {
        guard let day = s.digits(2), s.space(), let month = month(s.letters()), s.space(),
              let year = s.digits(4), s.space(), let time = s.time(), s.space(), s.gmt()
        else { return nil }
        return epoch(year: year, month: month, day: day, time: time)
    }

    /// `06-Nov-94 08:49:37 GMT`, after `day-name-l "," SP`.
    static func rfc850(_ s: inout DateScanner, now: Double?) -> Double? {
        guard let day = s.digits(2), s.take("-"), let month = month(s.letters()), s.take("-"),
              let year = s.digits(2), s.space(), let time = s.time(), s.space(), s.gmt()
        else { return nil }
        return epoch(year: fullYear(twoDigit: year, now: now), month: month, day: day, time: time)
    }

    /// `Nov  6 08:49:37 1994` or `Nov 16 ...`, after `day-name`.
    static func asctime(_ s: inout DateScanner) -> Double? {
        guard s.space(), let month = month(s.letters()), s.space() else { return nil }
        let day: Int?
        if s.space() { day = s.digits(1) } else { day = s.digits(2) }
        guard let day, s.space(), let time = s.time(), s.space(), let year = s.digits(4) else { return nil }
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

    /// Consumes exactly one space (`SP`); false when the next byte is not one.
    mutating func space() -> Bool {
        guard index < bytes.count, bytes[index] == 0x20 else { return false }
        index += 1
        return true
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

    /// Exactly `count` digits, not followed by another digit.
    mutating func digits(_ count: Int) -> Int? {
        var value = 0
        for offset in 0..<count {
            guard index + offset < bytes.count, bytes[index + offset] >= 0x30, bytes[index + offset] <= 0x39 else {
                return nil
            }
            value = value * 10 + Int(bytes[index + offset] - 0x30)
        }
        if index + count < bytes.count, bytes[index + count] >= 0x30, bytes[index + count] <= 0x39 { return nil }
        index += count
        return value
    }

    /// `HH:MM:SS`, two digits each.
    mutating func time() -> (Int, Int, Int)? {
        guard let hour = digits(2), take(":"), let minute = digits(2), take(":"), let second = digits(2)
        else { return nil }
        return (hour, minute, second)
    }

    /// `GMT`, case-sensitive.
    mutating func gmt() -> Bool {
        letters() == "GMT"
    }
}
