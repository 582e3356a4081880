import Foundation

/// The gzip copy of a served file that `bridge-js/tools/build.py` writes beside it (`bridge.js.gz`),
/// served in its place to a request that accepts gzip. It is used only when it was made from the
/// file as it is now: a gzip member ends with the CRC-32 and the length (mod 2^32) of what it
/// holds, and both must match the file's, so a copy left over from an older build (the file
/// edited by hand, or rebuilt without it) is never served. The check reads both files once per
/// version of them (their size and modification time) and remembers the answer.
final class PrecompressedCopies: @unchecked Sendable {
    private let lock = NSLock()
    private var verdicts: [String: Bool] = [:]

    /// Whether `compressed` (a `.gz` file) holds exactly `original`. `key` names both files'
    /// versions; the answer for a key is computed once.
    func matches(compressed: String, original: String, key: String) -> Bool {
        lock.lock()
        if let known = verdicts[key] {
            lock.unlock()
            return known
        }
        lock.unlock()
        let verdict = Self.check(compressed: compressed, original: original)
        lock.lock()
        if verdicts.count > 64 { verdicts.removeAll() }  // Old versions of the files: forget them.
        verdicts[key] = verdict
        lock.unlock()
        return verdict
    }

    private static func check(compressed: String, original: String) -> Bool {
        guard let gzip = FileManager.default.contents(atPath: compressed),
              let plain = FileManager.default.contents(atPath: original),
              gzip.count >= 18, gzip[gzip.startIndex] == 0x1f, gzip[gzip.startIndex + 1] == 0x8b, gzip[gzip.startIndex + 2] == 8
        else { return false }
        let trailer = gzip.suffix(8)
        let crc = littleEndian(trailer.prefix(4))
        let size = littleEndian(trailer.suffix(4))
        return size == UInt32(truncatingIfNeeded: plain.count) && crc == crc32(plain)
    }

    private static func littleEndian(_ bytes: Data) -> UInt32 {
        bytes.reversed().reduce(UInt32(0)) { ($0 << 8) | UInt32($1) }
    }

    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    /// CRC-32 (ISO 3309, as gzip uses it).
    static func crc32(_ data: Data) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        data.withUnsafeBytes { raw in
            for byte in raw.bindMemory(to: UInt8.self) {
                crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
            }
        }
        return crc ^ 0xFFFF_FFFF
    }
}

/// Whether an `Accept-Encoding` header value accepts gzip (RFC 9110 section 12.5.3): `gzip`,
/// `x-gzip` or `*` with a quality above 0. No header means only the identity encoding.
func acceptsGzip(_ header: String?) -> Bool {
    guard let header else { return false }
    var gzip: Bool?
    var any: Bool?
    for item in header.split(separator: ",") {
        let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard let coding = parts.first, !coding.isEmpty else { continue }
        var quality = 1.0
        for parameter in parts.dropFirst() where parameter.hasPrefix("q=") {
            quality = Double(parameter.dropFirst(2)) ?? 0
        }
        if coding == "gzip" || coding == "x-gzip" { gzip = quality > 0 }
        else if coding == "*" { any = quality > 0 }
    }
    return gzip ?? any ?? false
}
