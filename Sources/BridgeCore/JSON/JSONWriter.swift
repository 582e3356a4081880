/// Serialises `JSONValue`s to compact UTF-8 JSON.
public struct JSONWriter {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8]

    /// Creates a writer, reserving `capacity` bytes.
    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Appends raw, already valid JSON text.
    public mutating func appendRaw(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends bytes that already are valid JSON text.
    public mutating func appendRaw(_ bytes: some Collection<UInt8>) {
        self.bytes.append(contentsOf: bytes)
    }

    /// Appends `value` as JSON.
    public mutating func append(_ value: JSONValue) {
        switch value {
        case .null: appendRaw("null")
        case .bool(let flag): flag ? appendRaw("true") : appendRaw("false")
        case .integer(let integer): append(integer)
        case .double(let double):
            // JSON has no NaN or infinity; null is what JSON.stringify writes for them.
            if double.isFinite {
                if double.rounded() == double, abs(double) < 1e15 {
                    bytes.append(contentsOf: Array(String(Int(double)).utf8))
                } else {
                    bytes.append(contentsOf: Array(String(double).utf8))
                }
            } else {
                appendRaw("null")
            }
        case .string(let string): append(string)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { bytes.append(UInt8(ascii: ",")) }
                append(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let object):
            bytes.append(UInt8(ascii: "{"))
            for (offset, member) in object.members.enumerated() {
                if offset > 0 { bytes.append(UInt8(ascii: ",")) }
                append(member.key)
                bytes.append(UInt8(ascii: ":"))
                append(member.value)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Appends an integer.
    public mutating func append(_ integer: Int) {
        if integer >= 0, integer < 10 {
            bytes.append(UInt8(ascii: "0") + UInt8(integer))
        } else {
            bytes.append(contentsOf: Array(String(integer).utf8))
        }
    }

    /// Appends a string literal with JSON escapes.
    public mutating func append(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): appendRaw("\\\"")
            case UInt8(ascii: "\\"): appendRaw("\\\\")
            case 0x0A: appendRaw("\\n")
            case 0x0D: appendRaw("\\r")
            case 0x09: appendRaw("\\t")
            case 0..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

extension JSONValue {
    /// The value as compact UTF-8 JSON.
    public var jsonBytes: [UInt8] {
        var writer = JSONWriter()
        writer.append(self)
        return writer.bytes
    }

    /// The value as compact JSON text.
    public var jsonString: String { String(decoding: jsonBytes, as: UTF8.self) }
}
