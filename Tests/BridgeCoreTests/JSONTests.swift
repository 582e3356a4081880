import BridgeCore
import Testing

@Suite struct JSONTests {
    @Test(arguments: [
        #"{"a":1,"b":[true,false,null],"c":"x\"y","d":-1.5e3}"#,
        #"[]"#, #"{}"#, #""""#, #"0"#, #"-0.25"#, #"[1,[2,[3]]]"#,
    ])
    func roundTripsValidDocuments(text: String) throws {
        let value = try JSONParser.parse(text)
        #expect(try JSONParser.parse(value.jsonString) == value)
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\":}", "tru", "01", "1.", ".5", "\"\u{01}\"", "\"\\x\"", "{\"a\" 1}", "[1] 2", "\"\\ud800\"", "NaN", "{'a':1}",
    ])
    func rejectsInvalidDocuments(text: String) {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(text) }
    }

    @Test func rejectsNestingDeeperThanTheLimit() {
        let deep = String(repeating: "[", count: JSONParser.maxDepth + 1) + String(repeating: "]", count: JSONParser.maxDepth + 1)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(deep) }
        let fine = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: Never.self) { try JSONParser.parse(fine) }
    }

    @Test func decodesEscapesAndSurrogatePairs() throws {
        let value = try JSONParser.parse(#""a\n\t\u00e9\ud83d\ude00\/""#)
        #expect(value == .string("a\n\té😀/"))
    }

    @Test func keepsIntegersExactAndMemberOrder() throws {
        let value = try JSONParser.parse(#"{"z":9007199254740991,"a":1.0,"m":[]}"#)
        #expect(value["z"] == .integer(9_007_199_254_740_991))
        #expect(value.objectValue?.keys == ["z", "a", "m"])
        #expect(value.jsonString == #"{"z":9007199254740991,"a":1,"m":[]}"#)
    }

    @Test func escapesControlCharactersWhenWriting() {
        #expect(JSONValue.string("a\u{1}\"\\").jsonString == #""a\u0001\"\\""#)
        #expect(JSONValue.double(.nan).jsonString == "null")
    }
}
