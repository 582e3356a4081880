import Testing
@testable import BridgeCore

struct HeaderListTests {
    @Test func lookupIsCaseInsensitiveAndOrderPreserved() {
        let headers: HeaderList = ["Cache-Control": "max-age=1", "X-A": "1", "cache-control": "no-cache"]
        #expect(headers.values("CACHE-CONTROL") == ["max-age=1", "no-cache"])
        #expect(headers["Cache-Control"] == "max-age=1, no-cache")
        #expect(headers.first("x-a") == "1")
        #expect(headers["missing"] == nil)
        #expect(headers.pairs.map { $0[0] } == ["cache-control", "x-a", "cache-control"])
    }

    @Test func brokerPairsInitSkipsMalformedEntries() {
        let headers = HeaderList(pairs: [["Vary", " Accept "], ["bad"], ["etag", "\"x\""]])
        #expect(headers.pairs == [["vary", "Accept"], ["etag", "\"x\""]])
    }

    @Test func valuesLoseOnlyLeadingAndTrailingSpacesAndTabs() {
        let cases: [(String, String)] = [
            ("max-age=1", "max-age=1"), (" \tmax-age=1\t ", "max-age=1"), ("a  b", "a  b"), (" a b ", "a b"),
            ("  ", ""), ("", ""), ("\t\t", ""), (" é ü ", "é ü"), ("x\u{301} ", "x\u{301}"), ("\u{301}", "\u{301}"),
        ]
        for (raw, trimmed) in cases {
            #expect(raw.trimmingSpaces == trimmed)
            #expect(raw[...].trimmingSpaces == trimmed)
            #expect(HeaderList([("X", raw)]).first("x") == trimmed)
        }
    }

    @Test func setReplacesAllLinesInPlaceAndRemoveDeletes() {
        var headers: HeaderList = ["a": "1", "age": "5", "b": "2", "Age": "6"]
        headers.set("AGE", "7")
        #expect(headers.pairs == [["a", "1"], ["age", "7"], ["b", "2"]])
        headers.remove("A")
        #expect(headers.pairs == [["age", "7"], ["b", "2"]])
        headers.set("new", "x")
        #expect(headers.pairs.last == ["new", "x"])
    }

    @Test func listSplittingRespectsQuotes() {
        #expect(HeaderList.splitList(#" a , "b,c" ,, d"#) == ["a", "\"b,c\"", "d"])
        #expect(HeaderList.splitList(#""x\",y", z"#) == [#""x\",y""#, "z"])
        let headers: HeaderList = ["vary": "Accept, Accept-Language", "Vary": "Origin"]
        #expect(headers.listMembers("vary") == ["Accept", "Accept-Language", "Origin"])
    }
}
