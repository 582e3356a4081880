/// An HTTP/1.1 response head as its bytes came off the wire: the status code, the reason phrase
/// and the header fields, byte for byte (values trimmed of surrounding spaces and tabs).
/// SwiftNIO's parser drops the reason phrase and decodes values as UTF-8; a browser shows both as
/// sent, one character per byte, so BridgeUpstream reads heads with `RawHeadScanner` next to
/// NIO's decoder and puts these bytes into the decoded head.
public struct RawResponseHead: Sendable, Equatable {
    public struct Field: Sendable, Equatable {
        public var name: [UInt8]
        public var value: [UInt8]

        public init(name: [UInt8], value: [UInt8]) {
            self.name = name
            self.value = value
        }
    }

    /// Three decimal digits, 000 to 999.
    public var code: Int
    public var reason: [UInt8]
    public var fields: [Field]

    public init(code: Int, reason: [UInt8], fields: [Field]) {
        self.code = code
        self.reason = reason
        self.fields = fields
    }

    /// Parses one head (status line and field lines, without the blank line that ends it); nil
    /// when the status line is not `HTTP/… DDD[ reason]`. A field line without a colon is skipped.
    public static func parse(_ bytes: ArraySlice<UInt8>) -> RawResponseHead? {
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line in
            line.last == UInt8(ascii: "\r") ? line.dropLast() : line
        }
        guard !lines.isEmpty else { return nil }
        let statusLine = lines.removeFirst()
        // "HTTP/1.1 299 Custom Reason": the reason is everything after the second space.
        let parts = statusLine.split(separator: UInt8(ascii: " "), maxSplits: 2, omittingEmptySubsequences: false)
        // The code is exactly three ASCII digits (RFC 9112 §4): Int("+12") or Int("-12") is not one.
        guard parts.count >= 2, parts[0].starts(with: Array("HTTP/".utf8)), parts[1].count == 3,
            parts[1].allSatisfy({ (0x30...0x39).contains($0) })
        else { return nil }
        let code = parts[1].reduce(0) { $0 * 10 + Int($1 - 0x30) }
        let reason = parts.count == 3 ? Array(parts[2]) : []
        var fields: [Field] = []
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            let value = line[line.index(after: colon)...].drop { $0 == 0x20 || $0 == 0x09 }
            let end = value.lastIndex { $0 != 0x20 && $0 != 0x09 }.map { value.index(after: $0) } ?? value.startIndex
            fields.append(Field(name: Array(line[..<colon]), value: Array(value[..<end])))
        }
        return RawResponseHead(code: code, reason: reason, fields: fields)
    }

    /// The head written as HTTP/1.1 (status line and field lines, CRLF after each, no blank line).
    public var bytes: [UInt8] {
        var out = Array("HTTP/1.1 ".utf8)
        out += [UInt8(0x30 + code / 100 % 10), UInt8(0x30 + code / 10 % 10), UInt8(0x30 + code % 10), 0x20]
        out += reason + [0x0D, 0x0A]
        for field in fields { out += field.name + Array(": ".utf8) + field.value + [0x0D, 0x0A] }
        return out
    }
}

/// Finds the response heads in the bytes of an HTTP/1.1 connection, as they arrive in reads of
/// any size. After a final head (not 1xx, or 101), or bytes that are not a head, it takes
/// nothing until `responseEnded()`: the body's framing is the decoder's business, which says
/// when a response ended.
public struct RawHeadScanner: Sendable {
    /// The largest head kept; the bytes of a longer one are dropped (NIO's decoder limits heads too).
    public static let headLimit = 256 * 1024

    public private(set) var inBody = false
    /// The bytes of a head not yet complete.
    public private(set) var pending: [UInt8] = []

    public init() {}

    /// Takes the next bytes read; returns the heads they complete, in order.
    public mutating func take(_ bytes: some Collection<UInt8>) -> [RawResponseHead] {
        Array(bytes).withUnsafeBytes { take($0) }
    }

    /// `take` for a read's memory, what BridgeUpstream's recorder passes: a generic one called
    /// from another module copied the bytes one at a time through witness tables (1.3% of a
    /// 1 KiB fetch's samples).
    public mutating func take(_ bytes: UnsafeRawBufferPointer) -> [RawResponseHead] {
        guard !inBody else { return [] }
        // A head's end can straddle reads: look again from just before the new bytes.
        var searchFrom = max(0, pending.count - 3)
        pending += bytes
        var heads: [RawResponseHead] = []
        while !inBody, let end = headEnd(from: searchFrom) {
            let head = pending[..<end.head]
            guard let parsed = RawResponseHead.parse(head) else {
                // Not a head: NIO's decoder fails the response or reads it its own way, and the
                // applier finds no head to match. Nothing more until that response ends, so what
                // follows (a body) is never read as heads, however the reads fall (fuzz target
                // `response-head`, input Fuzz/corpus/response-head/crash-bad-head-then-bytes).
                inBody = true
                pending = []
                return heads
            }
            pending.removeFirst(end.next)
            searchFrom = 0
            heads.append(parsed)
            // An interim 1xx (not 101) is followed by another head; anything else by a body.
            if !(100..<200).contains(parsed.code) || parsed.code == 101 { inBody = true }
        }
        if inBody || pending.count > Self.headLimit { pending = [] }
        return heads
    }

    /// The decoder passed a response's end: the next bytes start a head.
    public mutating func responseEnded() {
        inBody = false
        pending = []
    }

    /// Where the first complete head in `pending` ends (at the LF before the blank line), and
    /// where the bytes after its blank line start; a blank line is LF or CRLF.
    private func headEnd(from start: Int) -> (head: Int, next: Int)? {
        var index = start
        while let newline = pending[index...].firstIndex(of: UInt8(ascii: "\n")) {
            let after = newline + 1
            if after < pending.endIndex, pending[after] == UInt8(ascii: "\n") { return (newline, after + 1) }
            if after + 1 < pending.endIndex, pending[after] == UInt8(ascii: "\r"), pending[after + 1] == UInt8(ascii: "\n") {
                return (newline, after + 2)
            }
            if after >= pending.endIndex { return nil }
            index = after
        }
        return nil
    }
}
