import BridgeCore
import Testing

struct FrameBufferTests {
    @Test func binaryFrameBuiltWithHeadroomHoldsTheSameBytes() throws {
        let payload: [UInt8] = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let header = BinaryFrameHeader(id: 42, isEnd: true)
        let framed = header.frame(payload: payload[100...], headroom: 16)
        #expect(framed.headroom == 16)
        #expect(framed.count == BinaryFrameHeader.size + 900)
        #expect(framed.bytes == header.frame(payload: payload[100...]))
        let parsed = try framed.withUnsafeBytes { raw throws(BridgeError) in try BinaryFrameHeader.parse(raw) }
        #expect(parsed == header)
        #expect(Array(framed.bytes[BinaryFrameHeader.size...]) == Array(payload[100...]))
        // The headroom lies just before the frame, free for the transport to write into.
        (framed.frameStart - 16).storeBytes(of: 0xFF, as: UInt8.self)
        #expect(framed.bytes == header.frame(payload: payload[100...]))
    }

    @Test func aHeaderPrependedToAPayloadInPlaceMakesTheSameFrame() throws {
        let payload: [UInt8] = (0..<500).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let header = BinaryFrameHeader(id: 7, isEnd: false)
        let framed = FrameBuffer(headroom: 16 + BinaryFrameHeader.size, capacity: payload.count)
        payload.withUnsafeBytes { framed.append(contentsOf: UnsafeRawBufferPointer(rebasing: $0[..<200])) }
        payload.withUnsafeBytes { framed.append(contentsOf: UnsafeRawBufferPointer(rebasing: $0[200...])) }
        #expect(framed.bytes == payload)
        framed.prepend(BinaryFrameHeader.size) { header.write(to: $0) }
        #expect(framed.headroom == 16)
        #expect(framed.count == BinaryFrameHeader.size + payload.count)
        #expect(framed.bytes == header.frame(payload: payload))
        #expect(try framed.withUnsafeBytes { raw throws(BridgeError) in try BinaryFrameHeader.parse(raw) } == header)
    }

    @Test func aSinkWithoutHeadroomGetsPlainFrames() {
        let sink = RecordingSink()
        #expect(sink.frameHeadroom == 0)
        let framed = BinaryFrameHeader(id: 3, isEnd: false).frame(payload: [9, 8, 7], headroom: 32)
        sink.send(framed: framed, binary: true)
        #expect(sink.frames.last?.bytes == BinaryFrameHeader(id: 3, isEnd: false).frame(payload: [9, 8, 7]))
        #expect(sink.frames.last?.binary == true)
    }

    @Test func anEmptyFrameHasOnlyItsHeadroom() {
        let empty = FrameBuffer(headroom: 8, capacity: 0)
        #expect(empty.count == 0)
        #expect(empty.bytes.isEmpty)
    }
}
