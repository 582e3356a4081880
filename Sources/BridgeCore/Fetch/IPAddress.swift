/// A parsed IPv4 or IPv6 address, and whether it is public.
public struct IPAddress: Sendable, Equatable, CustomStringConvertible {
    /// 4 bytes for IPv4, 16 for IPv6.
    public let bytes: [UInt8]

    /// Parses dotted IPv4 or RFC 4291 IPv6 text (with `::` and an embedded IPv4 tail);
    /// brackets and a `%zone` suffix are accepted. Otherwise the text is read as glibc's
    /// `inet_pton` reads it (the fuzz target `ip-address` compares them): a sign before a group
    /// and a leading zero in an IPv4 part (which `inet_aton` and URL parsers read as octal) are refused.
    public init?(_ text: String) {
        var text = Substring(text)
        if text.hasPrefix("["), text.hasSuffix("]") { text = text.dropFirst().dropLast() }
        if let zone = text.firstIndex(of: "%") { text = text[..<zone] }
        if let v4 = IPAddress.parseIPv4(text) {
            bytes = v4
        } else if let v6 = IPAddress.parseIPv6(text) {
            bytes = v6
        } else {
            return nil
        }
    }

    public var description: String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        return stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            .joined(separator: ":")
    }

    /// Whether the address is a public unicast address: not loopback, private, shared (CGNAT),
    /// link-local, unspecified, multicast, broadcast or documentation-reserved.
    public var isPublic: Bool {
        if bytes.count == 4 { return IPAddress.isPublicV4(bytes) }
        let b = bytes
        // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible addresses are judged as IPv4.
        if b[0..<10].allSatisfy({ $0 == 0 }), b[10] == 0xFF, b[11] == 0xFF { return IPAddress.isPublicV4(Array(b[12...])) }
        if b[0..<12].allSatisfy({ $0 == 0 }) { return false }  // ::, ::1 and IPv4-compatible
        if b[0] & 0xFE == 0xFC { return false }  // fc00::/7 unique local
        if b[0] == 0xFE, b[1] & 0xC0 == 0x80 { return false }  // fe80::/10 link-local
        if b[0] == 0xFE, b[1] & 0xC0 == 0xC0 { return false }  // fec0::/10 site-local (deprecated)
        if b[0] == 0xFF { return false }  // multicast
        if b[0] == 0x20, b[1] == 0x01, b[2] == 0x0D, b[3] == 0xB8 { return false }  // 2001:db8::/32 documentation
        if b[0] == 0x00, b[1] == 0x64, b[2] == 0xFF, b[3] == 0x9B { return IPAddress.isPublicV4(Array(b[12...])) }  // NAT64
        return true
    }

    private static func isPublicV4(_ b: [UInt8]) -> Bool {
        switch (b[0], b[1]) {
        case (0, _), (10, _), (127, _): return false
        case (100, 64...127): return false
        case (169, 254): return false
        case (172, 16...31): return false
        case (192, 168): return false
        case (192, 0) where b[2] == 0 || b[2] == 2: return false
        case (198, 18...19): return false
        case (198, 51) where b[2] == 100: return false
        case (203, 0) where b[2] == 113: return false
        case (224...255, _): return false
        default: return true
        }
    }

    /// Four dot-separated decimal parts of 0 to 255 without leading zeros, read byte by byte
    /// (every request's host goes through here, most of them not an address).
    private static func parseIPv4(_ text: Substring) -> [UInt8]? {
        var result: [UInt8] = []
        result.reserveCapacity(4)
        var value = 0
        var digits = 0
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                if digits == 1 && value == 0 { return nil }  // a leading zero
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
                digits += 1
                guard value <= 255 else { return nil }
            case UInt8(ascii: "."):
                guard digits > 0, result.count < 3 else { return nil }
                result.append(UInt8(value))
                (value, digits) = (0, 0)
            default:
                return nil
            }
        }
        guard digits > 0, result.count == 3 else { return nil }
        result.append(UInt8(value))
        return result
    }

    private static func parseIPv6(_ text: Substring) -> [UInt8]? {
        guard text.contains(":") else { return nil }
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        // An IPv4 tail ends the address: it is the last piece of the text, not of the part before `::`.
        func groups(_ part: String, last: Bool) -> [UInt8]? {
            if part.isEmpty { return [] }
            var out: [UInt8] = []
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, piece) in pieces.enumerated() {
                if last, index == pieces.count - 1, piece.contains("."), let v4 = parseIPv4(piece) {
                    out += v4
                    continue
                }
                guard (1...4).contains(piece.count), piece.allSatisfy(\.isHexDigit), piece.allSatisfy(\.isASCII),
                    let value = UInt16(piece, radix: 16)
                else { return nil }
                out += [UInt8(value >> 8), UInt8(value & 0xFF)]
            }
            return out
        }
        guard let head = groups(halves[0], last: halves.count == 1) else { return nil }
        if halves.count == 1 { return head.count == 16 ? head : nil }
        guard let tail = groups(halves[1], last: true), head.count + tail.count <= 14 else { return nil }
        return head + [UInt8](repeating: 0, count: 16 - head.count - tail.count) + tail
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
