/// The bytes of one outgoing frame, with free space reserved in front of them for the transport.
///
/// A transport that writes its own header in front of a frame (libwebsockets needs `LWS_PRE`
/// bytes) asks for that much headroom through `ConnectionSink.frameHeadroom`; a frame built with
/// it is queued and written from this memory without being copied again.
///
/// A producer that has the payload before the header (a body chunk read from upstream) fills the
/// payload first and then `prepend`s the header into the headroom, so the payload is copied once.
///
/// One producer fills it, then hands it to a sink and never touches it again; from then on only
/// the transport reads it and writes into its headroom. It is a class so that handing it over
/// moves a reference, never the bytes.
public final class FrameBuffer: @unchecked Sendable {
    /// Free bytes in front of the frame.
    public private(set) var headroom: Int
    /// The most frame bytes it can hold.
    public private(set) var capacity: Int
    /// The frame's bytes so far, headroom excluded.
    public private(set) var count = 0
    /// A whole-response frame of a post that asked for `batch`: a transport may join it with the
    /// such frames queued right after it into one batch frame (`BinaryFrameHeader.batchFrame`).
    public var joinable = false
    private let base: UnsafeMutableRawPointer

    /// Creates an empty frame of at most `capacity` bytes after `headroom` free bytes.
    public init(headroom: Int, capacity: Int) {
        precondition(headroom >= 0 && capacity >= 0, "negative frame size")
        self.headroom = headroom
        self.capacity = capacity
        base = UnsafeMutableRawPointer.allocate(byteCount: max(1, headroom + capacity), alignment: 16)
        base.bindMemory(to: UInt8.self, capacity: max(1, headroom + capacity))
    }

    /// A frame holding a copy of `bytes` after `headroom` free bytes.
    public convenience init<Bytes: Collection>(headroom: Int, copying bytes: Bytes) where Bytes.Element == UInt8 {
        self.init(headroom: headroom, capacity: bytes.count)
        append(contentsOf: bytes)
    }

    deinit { base.deallocate() }

    /// Appends one byte.
    public func append(_ byte: UInt8) {
        precondition(count < capacity, "frame buffer overflow")
        base.storeBytes(of: byte, toByteOffset: headroom + count, as: UInt8.self)
        count += 1
    }

    /// Appends bytes.
    public func append<Bytes: Collection>(contentsOf bytes: Bytes) where Bytes.Element == UInt8 {
        let added = bytes.count
        precondition(added <= capacity - count, "frame buffer overflow")
        let destination = UnsafeMutableRawBufferPointer(start: base + headroom + count, count: added)
        if bytes.withContiguousStorageIfAvailable({ destination.copyMemory(from: UnsafeRawBufferPointer($0)) }) == nil {
            _ = destination.copyBytes(from: bytes)
        }
        count += added
    }

    /// Moves the frame's start `byteCount` bytes back into the headroom and lets `fill` write
    /// them: a header put in front of a payload already in place.
    public func prepend(_ byteCount: Int, _ fill: (UnsafeMutableRawBufferPointer) -> Void) {
        precondition(byteCount >= 0 && byteCount <= headroom, "not enough headroom to prepend \(byteCount) bytes")
        headroom -= byteCount
        capacity += byteCount
        count += byteCount
        fill(UnsafeMutableRawBufferPointer(start: base + headroom, count: byteCount))
    }

    /// Calls `body` with the frame's bytes, headroom excluded; they are valid only inside it.
    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try withExtendedLifetime(self) { try body(UnsafeRawBufferPointer(start: base + headroom, count: count)) }
    }

    /// A copy of the frame's bytes, headroom excluded.
    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    /// The start of the frame's bytes; the headroom lies just before it. For the transport.
    public var frameStart: UnsafeMutableRawPointer { base + headroom }
}
