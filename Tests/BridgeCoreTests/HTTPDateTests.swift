import Testing
@testable import BridgeCore

struct HTTPDateTests {
    static let rfcExample: Double = 784_111_777  // Sun, 06 Nov 1994 08:49:37 GMT

    @Test(arguments: [
        "Sun, 06 Nov 1994 08:49:37 GMT",  // IMF-fixdate
        "Sunday, 06-Nov-94 08:49:37 GMT",  // RFC 850
        "Sun Nov  6 08:49:37 1994",  // asctime
        "  Sun, 06 Nov 1994 08:49:37 GMT  ",  // whitespace around the field value
        "Sun, 06 Nov 1994 08:49:37 GMT\t",
    ])
    func parsesAllThreeFormats(text: String) {
        #expect(HTTPDate.parse(text) == Self.rfcExample)
    }

    @Test(arguments: [
        "0", "-1", "", "now", "Sun, 06 Nov 1994 08:49:37",  // no zone
        "Sun, 06 Nov 1994 08:49:37 PST", "Sun, 32 Nov 1994 08:49:37 GMT",
        "Wed, 29 Feb 1995 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:60:00 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
        "Funday, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37 GMT junk", "Sun, 06 Nov 1994 8:49:37 GMT",
        "Sun Nov  6 08:49:37", "1994-11-06T08:49:37Z", "Sunday, 06-Nov-994 08:49:37 GMT",
        // RFC 9110's grammar, exactly:
        "Sun Nov 6 08:49:37 1994",  // asctime needs a space-padded one-digit day
        "Sun Nov  16 08:49:37 1994",
        "sun, 06 nov 1994 08:49:37 gmt", "Sun, 06 Nov 1994 08:49:37 gmt",  // names are case-sensitive
        "SUN, 06 NOV 1994 08:49:37 GMT",
        "Sun, 6 Nov 1994 08:49:37 GMT",  // one-digit day
        "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Nov 1994 08:49:37 +0000",  // bad zones
        "Sun, 06 Nov 1994 08:49:37 AEST", "Sun, 06 Nov 1994 08:49:37 GMT+1",
        "Sun,  06 Nov 1994 08:49:37 GMT", "Sun, 06  Nov 1994 08:49:37 GMT",  // extra spaces
        "Sun, 06 Nov  1994 08:49:37 GMT", "Sun, 06 Nov 1994  08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37  GMT",
        "Sun,06 Nov 1994 08:49:37 GMT", "Sun 06 Nov 1994 08:49:37 GMT",  // comma and space
        "Sun, 06-Nov-1994 08:49:37 GMT", "Sun, 06-Nov-94 08:49:37 GMT",  // dashes in IMF-fixdate
        "Sunday, 06 Nov 1994 08:49:37 GMT",  // long weekday in IMF-fixdate
        "Sunday, 06-Nov-1994 08:49:37 GMT",  // RFC 850 takes a two-digit year only
        "Sunday, 6-Nov-94 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 UTC",
        "Sun, 06 Nov 94 08:49:37 GMT",  // two-digit year in IMF-fixdate
        "Sun, 06 Nov 01994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49 GMT", "Sun, 06 Nov 1994 08.49.37 GMT",
        "Sun, 06 Nov 1994 08:49:37 GMT, Mon, 07 Nov 1994 08:49:37 GMT",
    ])
    func rejectsInvalidDates(text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }

    @Test func leapDayAndEpoch() {
        #expect(HTTPDate.parse("Tue, 29 Feb 2000 00:00:00 GMT") == 951_782_400)
        #expect(HTTPDate.parse("Thu, 01 Jan 1970 00:00:00 GMT") == 0)
        #expect(HTTPDate.parse("Wed, 31 Dec 1969 23:59:59 GMT") == -1)
        #expect(HTTPDate.parse("Sat, 06 Nov 1994 08:49:60 GMT") == Self.rfcExample + 22)
    }

    @Test func twoDigitYearsFollowTheFiftyYearRule() {
        let in2024 = HTTPDate.parse("Mon, 01 Jan 2024 00:00:00 GMT")!
        let y2049 = HTTPDate.parse("Friday, 01-Jan-49 00:00:00 GMT", now: in2024)!
        let y1975 = HTTPDate.parse("Wednesday, 01-Jan-75 00:00:00 GMT", now: in2024)!
        #expect(HTTPDate.format(y2049).hasSuffix("2049 00:00:00 GMT"))
        #expect(HTTPDate.format(y1975).hasSuffix("1975 00:00:00 GMT"))
        // Without a reference time: 00–69 → 20xx, 70–99 → 19xx.
        #expect(HTTPDate.parse("Thursday, 01-Jan-70 00:00:00 GMT") == 0)
    }

    @Test(arguments: [0.0, 784_111_777, 951_782_400, -86_401, 1_700_000_000.9, 4_102_444_800])
    func formatRoundTrips(time: Double) {
        let text = HTTPDate.format(time)
        #expect(HTTPDate.parse(text) == time.rounded(.down))
    }

    @Test func formatsIMFFixdate() {
        #expect(HTTPDate.format(Self.rfcExample) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
    }
}
