/// The head of an HTTP/1.x response: status, reason phrase and header values as byte strings
/// (`ByteString`), names as sent.
public struct HTTP1ResponseHead: Sendable {
    public var minorVersion: Int
    public var status: Int
    public var reason: String
    public var headers: HeaderList
}

/// An incremental HTTP/1.x response parser: bytes in as they arrive, the head once, the body's
/// bytes as slices of the input (no copy), and the end of the message with whether the
/// connection may carry another exchange.
///
/// It frames the body as RFC 9112 section 6.3 says: none for a response to HEAD and for 1xx,
/// 204 and 304; chunked when `Transfer-Encoding` ends in chunked; else `Content-Length`; else
/// until the connection closes. Interim 1xx responses (other than 101) are skipped. Chunk
/// extensions and trailers are read and dropped.
public struct HTTP1ResponseParser: Sendable {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        case malformed(String)
        case truncated
        case headTooLarge

        public var description: String {
            switch self {
            case .malformed(let what): "a malformed HTTP response (\(what))"
            case .truncated: "the connection closed before the response's end"
            case .headTooLarge: "a response head larger than \(HTTP1ResponseParser.maxHeadBytes) bytes"
            }
        }
    }

    /// What `parse` reached.
    public enum Progress: Equatable {
        /// More bytes are needed.
        case needMore
        /// The message ended after `consumed` bytes of the last input; the rest (if any) is not
        /// this response's. `keepAlive` says whether the connection may be reused.
        case complete(consumed: Int, keepAlive: Bool)
    }

    public static let maxHeadBytes = 256 * 1024

    private enum State: Equatable {
        case head
        case fixed(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
        case untilClose
        case done
    }

    private let isHead: Bool
    private var state: State = .head
    private var line: [UInt8] = []
    private var headLines: [[UInt8]] = []
    private var headBytes = 0
    private var keepAlive = true
    private var trailerLineEmpty = true

    /// A parser for the response to a request with `method`.
    public init(method: String) {
        isHead = method == "HEAD"
    }

    /// Whether the head has been parsed.
    public var hasHead: Bool { state != .head }

    /// Whether no byte of a response has arrived yet (a closed keep-alive connection's request
    /// may then be sent again).
    public var sawNothing: Bool { state == .head && line.isEmpty && headLines.isEmpty && headBytes == 0 }

    /// Parses `bytes`; `onHead` hears the final head once, `onBody` each run of body bytes.
    public mutating func parse(
        _ bytes: UnsafeRawBufferPointer, onHead: (HTTP1ResponseHead) throws -> Void, onBody: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> Progress {
        var index = 0
        let count = bytes.count
        while index < count {
            switch state {
            case .head, .chunkSize, .chunkDataEnd, .trailers:
                // Line-oriented states: take bytes up to a LF.
                let start = index
                while index < count, bytes[index] != 0x0A { index += 1 }
                let found = index < count
                if state == .head {
                    headBytes += index - start + (found ? 1 : 0)
                    if headBytes > Self.maxHeadBytes { throw Failure.headTooLarge }
                } else if line.count + index - start > 4096 {
                    throw Failure.malformed("a chunk line longer than 4096 bytes")
                }
                line.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
                guard found else { return .needMore }
                index += 1
                if line.last == 0x0D { line.removeLast() }
                let complete = line
                line.removeAll(keepingCapacity: true)
                if try takeLine(complete, onHead: onHead) != nil { return .complete(consumed: index, keepAlive: keepAlive) }
            case .fixed(let remaining):
                let take = min(remaining, count - index)
                try onBody(UnsafeRawBufferPointer(rebasing: bytes[index..<index + take]))
                index += take
                if take == remaining {
                    state = .done
                    return .complete(consumed: index, keepAlive: keepAlive)
                }
                state = .fixed(remaining: remaining - take)
            case .chunkData(let remaining):
                let take = min(remaining, count - index)
                try onBody(UnsafeRawBufferPointer(rebasing: bytes[index..<index + take]))
                index += take
                state = take == remaining ? .chunkDataEnd : .chunkData(remaining: remaining - take)
            case .untilClose:
                try onBody(UnsafeRawBufferPointer(rebasing: bytes[index..<count]))
                index = count
            case .done:
                return .complete(consumed: index, keepAlive: keepAlive)
            }
        }
        if state == .done { return .complete(consumed: index, keepAlive: keepAlive) }
        return .needMore
    }

    /// The connection closed: a body read until the close ends here; anything else was cut short.
    public mutating func finish() throws {
        switch state {
        case .untilClose, .done: state = .done
        default: throw Failure.truncated
        }
    }

    /// One complete line in a line state; returns non-nil when the message ended with it.
    private mutating func takeLine(_ line: [UInt8], onHead: (HTTP1ResponseHead) throws -> Void) throws -> Bool? {
        switch state {
        case .head:
            if !line.isEmpty {
                headLines.append(line)
                return nil
            }
            if headLines.isEmpty { return nil }  // Tolerate empty lines before the status line.
            let lines = headLines
            headLines = []
            headBytes = 0
            return try endHead(lines, onHead: onHead)
        case .chunkSize:
            var size = 0
            var digits = 0
            for byte in line {
                let value: Int
                switch byte {
                case 0x30...0x39: value = Int(byte - 0x30)
                case 0x41...0x46: value = Int(byte - 0x41 + 10)
                case 0x61...0x66: value = Int(byte - 0x61 + 10)
                case 0x3B, 0x20, 0x09: value = -1  // Extensions (";") or whitespace end the size.
                default: throw Failure.malformed("a bad chunk size")
                }
                if value < 0 { break }
                digits += 1
                if digits > 15 { throw Failure.malformed("a chunk size too large") }
                size = size * 16 + value
            }
            if digits == 0 { throw Failure.malformed("a chunk without a size") }
            if size == 0 {
                state = .trailers
            } else {
                state = .chunkData(remaining: size)
            }
            return nil
        case .chunkDataEnd:
            guard line.isEmpty else { throw Failure.malformed("chunk data longer than its size") }
            state = .chunkSize
            return nil
        case .trailers:
            if line.isEmpty {
                state = .done
                return true
            }
            return nil
        default:
            return nil
        }
    }

    private mutating func endHead(_ lines: [[UInt8]], onHead: (HTTP1ResponseHead) throws -> Void) throws -> Bool? {
        let statusLine = lines[0]
        // "HTTP/1.x SP 3DIGIT [SP reason]"
        guard statusLine.count >= 12, statusLine.starts(with: Array("HTTP/1.".utf8)),
            (0x30...0x39).contains(statusLine[7]), statusLine[8] == 0x20,
            let status = Self.threeDigits(statusLine[9], statusLine[10], statusLine[11])
        else { throw Failure.malformed("a bad status line") }
        if statusLine.count > 12, statusLine[12] != 0x20 { throw Failure.malformed("a bad status line") }
        let minor = Int(statusLine[7] - 0x30)
        let reason = statusLine.count > 13 ? ByteString.from(bytes: statusLine[13...]) : ""
        var headers = HeaderList()
        var contentLength: Int?
        var chunked = false
        var connectionClose = minor == 0
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: 0x3A), colon > 0 else {
                if line.first == 0x20 || line.first == 0x09 { throw Failure.malformed("obsolete line folding") }
                throw Failure.malformed("a header line without a colon")
            }
            let nameBytes = line[..<colon]
            if nameBytes.contains(where: { $0 == 0x20 || $0 == 0x09 }) { throw Failure.malformed("whitespace in a header name") }
            var valueStart = colon + 1
            var valueEnd = line.count
            while valueStart < valueEnd, line[valueStart] == 0x20 || line[valueStart] == 0x09 { valueStart += 1 }
            while valueEnd > valueStart, line[valueEnd - 1] == 0x20 || line[valueEnd - 1] == 0x09 { valueEnd -= 1 }
            let name = String(decoding: nameBytes, as: UTF8.self)
            let value = ByteString.from(bytes: line[valueStart..<valueEnd])
            headers.add(name, value)
            switch name.lowercased() {
            case "content-length":
                for member in HeaderList.splitList(value) {
                    guard let length = Int(member), length >= 0, member.allSatisfy(\.isASCII) else {
                        throw Failure.malformed("a bad Content-Length")
                    }
                    if let contentLength, contentLength != length { throw Failure.malformed("conflicting Content-Lengths") }
                    contentLength = length
                }
            case "transfer-encoding":
                let codings = HeaderList.splitList(value).map { $0.lowercased() }
                chunked = codings.last == "chunked"
                if !chunked { connectionClose = true }
            case "connection":
                let options = HeaderList.splitList(value).map { $0.lowercased() }
                if options.contains("close") { connectionClose = true }
                if minor == 0, options.contains("keep-alive") { connectionClose = false }
            default:
                break
            }
        }
        if (100..<200).contains(status) {
            if status == 101 { throw Failure.malformed("an unexpected 101 Switching Protocols") }
            return nil  // An interim response: the final one follows.
        }
        keepAlive = !connectionClose
        try onHead(HTTP1ResponseHead(minorVersion: minor, status: status, reason: reason, headers: headers))
        if isHead || status == 204 || status == 304 {
            state = .done
            return true
        }
        if chunked {
            state = .chunkSize
        } else if let contentLength {
            if contentLength == 0 {
                state = .done
                return true
            }
            state = .fixed(remaining: contentLength)
        } else {
            state = .untilClose
            keepAlive = false
        }
        return nil
    }

    private static func threeDigits(_ a: UInt8, _ b: UInt8, _ c: UInt8) -> Int? {
        guard (0x31...0x39).contains(a), (0x30...0x39).contains(b), (0x30...0x39).contains(c) else { return nil }
        return Int(a - 0x30) * 100 + Int(b - 0x30) * 10 + Int(c - 0x30)
    }
}
