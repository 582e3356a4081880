/// Response header values and reason phrases as the broker keeps them: one character per byte
/// (ISO-8859-1, what the Fetch standard calls a byte sequence shown as a ByteString), so bytes
/// that are not UTF-8 survive the cache and reach a client that asks for them unchanged.
///
/// Clients that do not ask (`headerEncoding` absent) get the UTF-8 reading, `utf8Text`, which is
/// what the broker always sent: the bytes decoded as UTF-8, invalid sequences replaced.
public enum ByteString {
    /// The byte string of `bytes`. Inlinable, so a caller in another module (every upstream
    /// response head's values) gets it specialised for its collection instead of iterating it
    /// through the generic witness tables.
    @inlinable
    public static func from<C: Collection>(bytes: C) -> String where C.Element == UInt8 {
        if bytes.allSatisfy({ $0 < 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
        var scalars = String.UnicodeScalarView()
        for byte in bytes { scalars.append(Unicode.Scalar(byte)) }
        return String(scalars)
    }

    /// The byte string of text that arrived decoded as UTF-8 (a parser that gives no bytes): its UTF-8 bytes.
    public static func from(utf8Text text: String) -> String {
        from(bytes: Array(text.utf8))
    }

    /// The bytes of a byte string; a character above U+00FF (never made here) counts as its UTF-8.
    public static func bytes(of value: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(value.utf8.count)
        append(value, to: &bytes)
        return bytes
    }

    /// Appends what `bytes(of:)` gives for `value` to `bytes` (ASCII, the usual case, in one copy).
    public static func append(_ value: String, to bytes: inout [UInt8]) {
        if value.utf8.allSatisfy({ $0 < 0x80 }) {
            bytes.append(contentsOf: value.utf8)
            return
        }
        for scalar in value.unicodeScalars {
            if scalar.value < 0x100 { bytes.append(UInt8(scalar.value)) } else { bytes += Array(String(scalar).utf8) }
        }
    }

    /// The bytes of a byte string decoded as UTF-8, invalid sequences replaced.
    public static func utf8Text(_ value: String) -> String {
        if value.utf8.allSatisfy({ $0 < 0x80 }) { return value }
        return String(decoding: bytes(of: value), as: UTF8.self)
    }

    /// `headers` with every value as `utf8Text` reads it.
    public static func utf8Text(_ headers: HeaderList) -> HeaderList {
        guard headers.fields.contains(where: { !$0.value.utf8.allSatisfy { $0 < 0x80 } }) else { return headers }
        return HeaderList(headers.fields.map { (name: $0.name, value: utf8Text($0.value)) })
    }
}
