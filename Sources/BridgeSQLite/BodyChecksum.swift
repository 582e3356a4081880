/// XXH64 (seed 0) of a body, computed over chunks as they stream: what a body file's row keeps,
/// so that a file whose bytes did not all reach the disk (a crash between the write and the
/// kernel's flush; body files are not fsynced) is found out when it is read.
///
/// XXH64 rather than CRC32: no table, 8 bytes per step in four independent lanes, several GB/s
/// in Swift; the file is hashed while it is written and while it is read, so the hash's speed is
/// the cost. Same output as the reference implementation (tests check its published vectors).
struct BodyChecksum {
    private static let p1: UInt64 = 0x9E37_79B1_85EB_CA87
    private static let p2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    private static let p3: UInt64 = 0x1656_67B1_9E37_79F9
    private static let p4: UInt64 = 0x85EB_CA77_C2B2_AE63
    private static let p5: UInt64 = 0x27D4_EB2F_1656_67C5

    private var v1 = p1 &+ p2, v2 = p2, v3: UInt64 = 0, v4: UInt64 = 0 &- p1
    /// Bytes hashed so far.
    private(set) var length = 0
    /// Up to 31 bytes not yet making a 32-byte stripe.
    private var tail: [UInt8] = []

    init() { tail.reserveCapacity(32) }

    @inline(__always) private static func round(_ accumulator: UInt64, _ input: UInt64) -> UInt64 {
        let sum = accumulator &+ input &* p2
        return ((sum << 31) | (sum >> 33)) &* p1
    }

    @inline(__always) private static func rotate(_ value: UInt64, _ bits: UInt64) -> UInt64 {
        (value << bits) | (value >> (64 - bits))
    }

    mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        length += bytes.count
        var offset = 0
        if !tail.isEmpty {
            let taken = min(32 - tail.count, bytes.count)
            tail.append(contentsOf: bytes[0..<taken])
            offset = taken
            guard tail.count == 32 else { return }
            tail.withUnsafeBytes { stripes($0) }
            tail.removeAll(keepingCapacity: true)
        }
        let whole = (bytes.count - offset) / 32 * 32
        if whole > 0 { stripes(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + whole)])) }
        tail.append(contentsOf: bytes[(offset + whole)...])
    }

    /// Consumes 32-byte stripes; `bytes.count` is a multiple of 32.
    private mutating func stripes(_ bytes: UnsafeRawBufferPointer) {
        var (a, b, c, d) = (v1, v2, v3, v4)
        var offset = 0
        while offset < bytes.count {
            a = Self.round(a, UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
            b = Self.round(b, UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)))
            c = Self.round(c, UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self)))
            d = Self.round(d, UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 24, as: UInt64.self)))
            offset += 32
        }
        (v1, v2, v3, v4) = (a, b, c, d)
    }

    /// The hash of everything passed to `update`.
    var value: UInt64 {
        var hash: UInt64
        if length >= 32 {
            hash = Self.rotate(v1, 1) &+ Self.rotate(v2, 7) &+ Self.rotate(v3, 12) &+ Self.rotate(v4, 18)
            for lane in [v1, v2, v3, v4] {
                hash ^= Self.round(0, lane)
                hash = hash &* Self.p1 &+ Self.p4
            }
        } else {
            hash = Self.p5
        }
        hash &+= UInt64(length)
        tail.withUnsafeBytes { rest in
            var offset = 0
            while offset + 8 <= rest.count {
                hash ^= Self.round(0, UInt64(littleEndian: rest.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
                hash = Self.rotate(hash, 27) &* Self.p1 &+ Self.p4
                offset += 8
            }
            if offset + 4 <= rest.count {
                hash ^= UInt64(UInt32(littleEndian: rest.loadUnaligned(fromByteOffset: offset, as: UInt32.self))) &* Self.p1
                hash = Self.rotate(hash, 23) &* Self.p2 &+ Self.p3
                offset += 4
            }
            while offset < rest.count {
                hash ^= UInt64(rest[offset]) &* Self.p5
                hash = Self.rotate(hash, 11) &* Self.p1
                offset += 1
            }
        }
        hash ^= hash >> 33
        hash &*= Self.p2
        hash ^= hash >> 29
        hash &*= Self.p3
        hash ^= hash >> 32
        return hash
    }

    /// `value` as SQLite stores it (a signed 64-bit integer, same bits).
    var stored: Int64 { Int64(bitPattern: value) }
}
