/// The 10-byte header of a binary frame: kind, flags, and the post id.
///
/// Layout (docs/PROTOCOL.md): byte 0 kind (0x01 body chunk), byte 1 flags (bit 0 END),
/// bytes 2-9 the id as unsigned 64-bit big-endian, then the payload.
public struct BinaryFrameHeader: Sendable, Equatable {
    /// The header's size in bytes.
    public static let size = 10
    /// A chunk of a body: the kind of every frame a client sends, and of the broker's body frames.
    public static let bodyChunk: UInt8 = 0x01
    /// The flag marking the last chunk of a body.
    public static let endFlag: UInt8 = 0x01
    /// A whole response, broker to client only (*addition*): the reply's head and the whole body
    /// in one frame, for a post that asked for it with `whole` (docs/PROTOCOL.md).
    public static let wholeResponse: UInt8 = 0x02
    /// The size of the head length that follows the header in a whole-response frame.
    public static let wholeHeadLengthSize = 4
    /// A batch, broker to client only (*addition*): several whole-response frames of posts that
    /// asked with `batch` joined into one message, each after its length as a 32-bit big-endian
    /// integer (docs/PROTOCOL.md, "Batches of whole responses"). Its id is 0 and END is set.
    public static let batch: UInt8 = 0x03
    /// The size of the length before each frame in a batch.
    public static let batchLengthSize = 4

    /// The post the chunk belongs to.
    public var id: Int
    /// Whether this is the last chunk of the body.
    public var isEnd: Bool

    /// Creates a header.
    public init(id: Int, isEnd: Bool) {
        self.id = id
        self.isEnd = isEnd
    }

    /// Parses the header at the start of a binary frame.
    public static func parse(_ frame: UnsafeRawBufferPointer) throws(BridgeError) -> BinaryFrameHeader {
        guard frame.count >= size else {
            throw BridgeError(.badMessage, "binary frame of \(frame.count) bytes is shorter than its 10-byte header")
        }
        guard frame[0] == bodyChunk else {
            throw BridgeError(.badMessage, "binary frame of unknown kind \(frame[0])")
        }
        guard frame[1] & ~endFlag == 0 else {
            throw BridgeError(.badMessage, "binary frame with unknown flags \(frame[1])")
        }
        var id: UInt64 = 0
        for offset in 2..<10 { id = id << 8 | UInt64(frame[offset]) }
        guard id <= UInt64(ClientMessage.maxID) else {
            throw BridgeError(.badMessage, "binary frame id \(id) is larger than 2^53-1")
        }
        return BinaryFrameHeader(id: Int(id), isEnd: frame[1] & endFlag != 0)
    }

    /// Appends the header's 10 bytes to `bytes`.
    public func write(into bytes: inout [UInt8]) {
        forEachByte { bytes.append($0) }
    }

    /// Writes the header's 10 bytes at the start of `destination`.
    public func write(to destination: UnsafeMutableRawBufferPointer) {
        precondition(destination.count >= BinaryFrameHeader.size, "no room for a binary frame header")
        var offset = 0
        forEachByte { byte in
            destination[offset] = byte
            offset += 1
        }
    }

    /// Calls `body` with the header's 10 bytes in order: the layout, in one place.
    func forEachByte(kind: UInt8 = BinaryFrameHeader.bodyChunk, _ body: (UInt8) -> Void) {
        body(kind)
        body(isEnd ? BinaryFrameHeader.endFlag : 0)
        let value = UInt64(id)
        for shift in stride(from: 56, through: 0, by: -8) { body(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    /// A whole frame: this header followed by `payload`.
    public func frame<Payload: Collection>(payload: Payload) -> [UInt8] where Payload.Element == UInt8 {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(BinaryFrameHeader.size + payload.count)
        write(into: &bytes)
        bytes.append(contentsOf: payload)
        return bytes
    }

    /// A whole-response frame for post `id` built after `headroom` free bytes: the header (kind
    /// `wholeResponse`, END set), the head's length as a 32-bit big-endian integer, the head (the
    /// reply body as JSON), then the body. The body is copied once, into the frame.
    public static func wholeResponseFrame(id: Int, head: [UInt8], body: [UInt8], headroom: Int) -> FrameBuffer {
        let framed = FrameBuffer(headroom: headroom, capacity: size + wholeHeadLengthSize + head.count + body.count)
        BinaryFrameHeader(id: id, isEnd: true).forEachByte(kind: wholeResponse) { framed.append($0) }
        UInt32(head.count).forEachBigEndianByte { framed.append($0) }
        framed.append(contentsOf: head)
        framed.append(contentsOf: body)
        return framed
    }

    /// A batch frame holding `frames` (whole-response frames), built after `headroom` free bytes:
    /// the header (kind `batch`, id 0, END set), then each frame after its length. Each frame's
    /// bytes are copied once, into the batch.
    public static func batchFrame(of frames: [FrameBuffer], headroom: Int) -> FrameBuffer {
        let capacity = size + frames.reduce(0) { $0 + batchLengthSize + $1.count }
        let batched = FrameBuffer(headroom: headroom, capacity: capacity)
        BinaryFrameHeader(id: 0, isEnd: true).forEachByte(kind: batch) { batched.append($0) }
        for frame in frames {
            UInt32(frame.count).forEachBigEndianByte { batched.append($0) }
            frame.withUnsafeBytes { batched.append(contentsOf: $0) }
        }
        return batched
    }

    /// A whole frame built after `headroom` free bytes, so a transport that writes its own
    /// header in front (`ConnectionSink.frameHeadroom`) sends it without copying the payload.
    public func frame<Payload: Collection>(payload: Payload, headroom: Int) -> FrameBuffer where Payload.Element == UInt8 {
        let framed = FrameBuffer(headroom: headroom, capacity: BinaryFrameHeader.size + payload.count)
        forEachByte { framed.append($0) }
        framed.append(contentsOf: payload)
        return framed
    }
}

extension UInt32 {
    /// Calls `body` with the value's 4 bytes, most significant first: the lengths in whole-response
    /// frames, batches and early answers (docs/PROTOCOL.md).
    func forEachBigEndianByte(_ body: (UInt8) -> Void) {
        for shift in stride(from: 24, through: 0, by: -8) { body(UInt8(truncatingIfNeeded: self >> UInt32(shift))) }
    }
}
