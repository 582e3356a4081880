import BridgeCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `IPAddress`'s IPv4 reading (byte by byte) against glibc's `inet_pton`, which the `ip-address`
/// fuzz target also compares it with, over dotted strings built to hit its edges.
@Suite struct IPAddressTests {
    static func pton(_ text: String) -> [UInt8]? {
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    @Test func dottedPartsAsInetPtonReadsThem() {
        let parts = ["0", "1", "9", "10", "99", "127", "255", "256", "00", "01", "010", "0255", "999", "1000", "", "a", "1a", "+1", " 1", "٣"]
        var random = SplitMix(seed: 4)
        var read = 0
        for _ in 0..<20000 {
            let count = [3, 4, 4, 4, 4, 5][random.below(6)]
            let text = (0..<count).map { _ in parts[random.below(4) == 0 ? random.below(parts.count) : random.below(7)] }.joined(separator: random.below(30) == 0 ? ":" : ".")
            let expected = Self.pton(text)
            #expect(IPAddress(text)?.bytes == expected, "\(text.debugDescription)")
            if expected != nil { read += 1 }
        }
        #expect(read > 1000)
        #expect(IPAddress("::ffff:127.0.0.1")?.bytes == Self.pton("::ffff:127.0.0.1"))
        #expect(IPAddress("[::ffff:1.2.3.4]")?.isPublic == true && IPAddress("127.0.0.1")?.isPublic == false)
        #expect(IPAddress("example.com") == nil && IPAddress("1.2.3.4.") == nil && IPAddress(".1.2.3.4") == nil)
    }
}
