import BridgeCore
import Testing

/// `ByteString`: one character per byte both ways, and `append` (how the service thread writes a
/// request's head) giving what `bytes(of:)` gives.
@Suite struct ByteStringTests {
    @Test(arguments: [
        ("plain ASCII", [UInt8]("Accept: text/html".utf8)),
        ("latin-1 bytes", [0x43, 0x61, 0x66, 0xE9, 0xFF, 0x80]),
        ("bytes that are not UTF-8", [0xC3, 0x28, 0xA0, 0xA1]),
        ("empty", []),
    ])
    func bytesSurviveTheRoundTrip(name: String, bytes: [UInt8]) {
        let text = ByteString.from(bytes: bytes)
        #expect(text.unicodeScalars.count == bytes.count, "\(name)")
        #expect(ByteString.bytes(of: text) == bytes, "\(name)")
        var appended: [UInt8] = [1, 2]
        ByteString.append(text, to: &appended)
        #expect(appended == [1, 2] + bytes, "\(name)")
    }

    @Test func aCharacterAboveFFCountsAsItsUTF8() {
        var appended: [UInt8] = []
        ByteString.append("a✓é", to: &appended)
        #expect(appended == [0x61, 0xE2, 0x9C, 0x93, 0xE9])
        #expect(ByteString.bytes(of: "a✓é") == appended)
    }
}
