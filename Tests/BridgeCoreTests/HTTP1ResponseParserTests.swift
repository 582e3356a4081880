import BridgeCore
import Testing

/// The service thread's HTTP/1.1 response parser (`HTTP1ResponseParser`), fed whole and in
/// every split, as bytes come off a socket.
@Suite struct HTTP1ResponseParserTests {
    struct Parsed {
        var head: HTTP1ResponseHead?
        var heads = 0
        var body: [UInt8] = []
        var progress: HTTP1ResponseParser.Progress = .needMore
        var consumedTotal = 0
    }

    /// Feeds `text` in pieces of `step` bytes (0: whole) until the message completes.
    func parse(_ bytes: [UInt8], method: String = "GET", step: Int = 0, finish: Bool = false) throws -> Parsed {
        var parser = HTTP1ResponseParser(method: method)
        var parsed = Parsed()
        var offset = 0
        while offset < bytes.count {
            let end = step == 0 ? bytes.count : min(bytes.count, offset + step)
            let piece = Array(bytes[offset..<end])
            let progress = try piece.withUnsafeBytes { raw in
                try parser.parse(raw, onHead: { parsed.head = $0; parsed.heads += 1 }, onBody: { parsed.body += Array($0) })
            }
            if case .complete(let consumed, _) = progress {
                parsed.progress = progress
                parsed.consumedTotal = offset + consumed
                return parsed
            }
            offset = end
        }
        if finish { try parser.finish() }
        return parsed
    }

    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test(arguments: [0, 1, 2, 3, 7, 64])
    func aContentLengthBodyInAnySplit(step: Int) throws {
        let message = bytes("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n\r\nhello world")
        let parsed = try parse(message, step: step)
        #expect(parsed.head?.status == 200)
        #expect(parsed.head?.reason == "OK")
        #expect(parsed.head?.headers.first("content-type") == "text/plain")
        #expect(parsed.heads == 1)
        #expect(parsed.body == bytes("hello world"))
        #expect(parsed.consumedTotal == message.count)
        if case .complete(_, let keepAlive) = parsed.progress { #expect(keepAlive) } else { Issue.record("not complete") }
    }

    @Test(arguments: [0, 1, 5, 13])
    func aChunkedBodyWithExtensionsAndTrailers(step: Int) throws {
        let message = bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;name=value\r\nhello\r\n6\r\n world\r\nA\r\n0123456789\r\n0\r\nX-Trailer: yes\r\n\r\n")
        let parsed = try parse(message, step: step)
        #expect(parsed.body == bytes("hello world0123456789"))
        #expect(parsed.consumedTotal == message.count)
        if case .complete(_, let keepAlive) = parsed.progress { #expect(keepAlive) } else { Issue.record("not complete") }
    }

    @Test func aBodyUntilTheConnectionCloses() throws {
        var parser = HTTP1ResponseParser(method: "GET")
        var body: [UInt8] = []
        let progress = try bytes("HTTP/1.1 200 OK\r\n\r\nsome bytes").withUnsafeBytes { raw in
            try parser.parse(raw, onHead: { _ in }, onBody: { body += Array($0) })
        }
        #expect(progress == .needMore)
        try parser.finish()
        #expect(body == bytes("some bytes"))
    }

    @Test func aFixedBodyCutShortIsAnError() throws {
        var parser = HTTP1ResponseParser(method: "GET")
        _ = try bytes("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc").withUnsafeBytes { raw in
            try parser.parse(raw, onHead: { _ in }, onBody: { _ in })
        }
        #expect(throws: HTTP1ResponseParser.Failure.truncated) { try parser.finish() }
        var chunked = HTTP1ResponseParser(method: "GET")
        _ = try bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab").withUnsafeBytes { raw in
            try chunked.parse(raw, onHead: { _ in }, onBody: { _ in })
        }
        #expect(throws: HTTP1ResponseParser.Failure.truncated) { try chunked.finish() }
    }

    @Test(arguments: [("HEAD", 200), ("GET", 204), ("GET", 304)])
    func responsesWithoutABody(method: String, status: Int) throws {
        let message = bytes("HTTP/1.1 \(status) X\r\nContent-Length: 20\r\n\r\n")
        let parsed = try parse(message, method: method)
        #expect(parsed.head?.status == status)
        #expect(parsed.body.isEmpty)
        #expect(parsed.consumedTotal == message.count)
    }

    @Test func interimResponsesAreSkipped() throws {
        let parsed = try parse(bytes("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok"))
        #expect(parsed.heads == 1)
        #expect(parsed.head?.status == 201)
        #expect(parsed.body == bytes("ok"))
    }

    @Test func connectionReuse() throws {
        func keepAlive(_ text: String) throws -> Bool? {
            guard case .complete(_, let keepAlive) = try parse(bytes(text)).progress else { return nil }
            return keepAlive
        }
        #expect(try keepAlive("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n") == false)
        #expect(try keepAlive("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n") == false)
        #expect(try keepAlive("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n") == true)
        #expect(try keepAlive("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n") == true)
    }

    @Test func bytesAfterTheMessageAreNotConsumed() throws {
        let message = bytes("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n")
        let parsed = try parse(message)
        #expect(parsed.body == bytes("ok"))
        #expect(parsed.consumedTotal == message.count - "HTTP/1.1 200 OK\r\n".utf8.count)
    }

    @Test func headerValuesAreByteStringsAndNamesAsSent() throws {
        let message: [UInt8] = bytes("HTTP/1.1 200 \u{0}K\r\n").map { $0 == 0 ? 0xD6 : $0 } + bytes("X-Name:  caf") + [0xE9] + bytes("  \r\nContent-Length: 0\r\n\r\n")
        let parsed = try parse(message)
        #expect(parsed.head?.reason == "\u{D6}K")
        #expect(parsed.head?.headers.fields.first?.name == "X-Name")
        #expect(parsed.head?.headers.first("x-name") == "caf\u{E9}")
    }

    @Test func aStatusLineWithoutAReason() throws {
        let parsed = try parse(bytes("HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n"))
        #expect(parsed.head?.status == 404)
        #expect(parsed.head?.reason == "")
    }

    @Test(arguments: [
        "HTTP/2 200 OK\r\n\r\n", "HTTP/1.1 20 OK\r\n\r\n", "HTTP/1.1 200OK\r\n\r\n", "HTTP/1.1 200 OK\r\nNo colon\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n",
        "HTTP/1.1 101 Switching Protocols\r\n\r\n", "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
    ])
    func malformedResponsesAreErrors(text: String) {
        #expect(throws: HTTP1ResponseParser.Failure.self) { try parse(bytes(text)) }
    }

    @Test func anOversizeHeadIsAnError() {
        let head = "HTTP/1.1 200 OK\r\n" + String(repeating: "X-Filler: \(String(repeating: "a", count: 1000))\r\n", count: 300)
        #expect(throws: HTTP1ResponseParser.Failure.headTooLarge) { try parse(bytes(head), step: 4096) }
    }

    @Test func identicalContentLengthsAreOne() throws {
        let parsed = try parse(bytes("HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok"))
        #expect(parsed.body == bytes("ok"))
    }
}
