import BridgeCore
import Testing

@Suite struct EnvelopeTests {
    func decode(_ text: String) throws(EnvelopeError) -> ClientMessage {
        let bytes = Array(text.utf8)
        let result: Result<ClientMessage, EnvelopeError> = bytes.withUnsafeBytes { raw in
            Result { () throws(EnvelopeError) -> ClientMessage in try ClientMessage.decode(raw) }
        }
        return try result.get()
    }

    @Test func decodesPostsAndCancels() throws {
        #expect(try decode(#"{"type":"post","name":"echo","id":7,"body":{"x":1}}"#) == .post(name: "echo", id: 7, body: ["x": 1]))
        #expect(try decode(#"{"type":"post","name":"echo"}"#) == .post(name: "echo", id: nil, body: .null))
        #expect(try decode(#"{"type":"cancel","id":3}"#) == .cancel(id: 3))
        #expect(try decode(#"{"type":"post","name":"a","id":1,"extra":true}"#) == .post(name: "a", id: 1, body: .null))
    }

    @Test(arguments: [
        (#"not json"#, nil as Int?), (#"[1]"#, nil), (#"{"name":"x"}"#, nil), (#"{"type":5}"#, nil),
        (#"{"type":"post","id":4}"#, 4), (#"{"type":"post","id":4,"name":1}"#, 4), (#"{"type":"nope","id":9}"#, 9),
        (#"{"type":"post","name":"x","id":-1}"#, nil), (#"{"type":"post","name":"x","id":1.5}"#, nil),
        (#"{"type":"post","name":"x","id":9007199254740992}"#, nil), (#"{"type":"cancel"}"#, nil),
    ])
    func rejectsBadEnvelopesKeepingTheIDWhenValid(text: String, id: Int?) {
        do {
            _ = try decode(text)
            Issue.record("\(text) was accepted")
        } catch {
            #expect(error.id == id)
        }
    }

    @Test func binaryHeaderRoundTripsAndRejectsMalformedFrames() throws {
        let frame = BinaryFrameHeader(id: 0x0102_0304_0506, isEnd: true).frame(payload: [9, 8])
        #expect(frame == [1, 1, 0, 0, 1, 2, 3, 4, 5, 6, 9, 8])
        let parsed = try frame.withUnsafeBytes { raw throws(BridgeError) in try BinaryFrameHeader.parse(raw) }
        #expect(parsed == BinaryFrameHeader(id: 0x0102_0304_0506, isEnd: true))
        for bad: [UInt8] in [[1, 0, 0], [2, 0, 0, 0, 0, 0, 0, 0, 0, 1], [1, 4, 0, 0, 0, 0, 0, 0, 0, 1], [1, 0, 0xFF, 0, 0, 0, 0, 0, 0, 1]] {
            #expect(throws: BridgeError.self) { try bad.withUnsafeBytes { raw throws(BridgeError) in try BinaryFrameHeader.parse(raw) } }
        }
    }
}
