import BridgeCore
@testable import BridgeServer
@testable import BridgeWebSocket
import Foundation
import Testing

@Suite(.serialized) struct TransportTests {
    @Test func listensOnLoopbackOnly() async throws {
        let harness = try await BrokerHarness.start()
        defer { Task { await harness.stop() } }
        // Read to the end: /proc files report size 0, and a one-shot read can stop after the
        // first page, missing the listener when many sockets are open (the tests run in parallel).
        let table = String(decoding: try #require(FileHandle(forReadingAtPath: "/proc/net/tcp")).readDataToEndOfFile(), as: UTF8.self)
        let port = String(format: "%04X", harness.server.port)
        let listening = table.split(separator: "\n").dropFirst().filter { line in
            let fields = line.split(separator: " ")
            return fields.count > 3 && fields[1].hasSuffix(":\(port)") && fields[3] == "0A"
        }
        #expect(listening.count == 1)
        #expect(listening.first.map { $0.split(separator: " ")[1] == "0100007F:\(port)" } == true, "listening sockets: \(listening)")
        let table6 = FileHandle(forReadingAtPath: "/proc/net/tcp6").map { String(decoding: $0.readDataToEndOfFile(), as: UTF8.self) } ?? ""
        #expect(!table6.contains(":\(port) "), "no IPv6 listener")
    }

    @Test func refusesANonLoopbackHost() throws {
        var configuration = BrokerServerConfiguration()
        configuration.host = "0.0.0.0"
        configuration.port = 0
        #expect(throws: (any Error).self) { try BrokerServer(configuration: configuration).start() }
    }

    @Test func helloAndEchoOverARealSocket() async throws {
        let harness = try await BrokerHarness.start()
        defer { Task { await harness.stop() } }
        let client = try await harness.client()
        defer { client.close() }
        #expect(client.hello["protocol"] == 1)
        #expect(client.hello["handlers"]?.arrayValue?.contains("fetch") == true)
        #expect(try await client.post("echo", ["n": 1, "s": "é"]) == ["n": 1, "s": "é"])
    }

    /// A closed client is freed with its socket: the socket's callbacks once held the client
    /// strongly, a cycle that kept every client, its session, service loop and streams alive
    /// after `close()` (LeakSanitizer in `make test-asan`, issue #17).
    @Test func aClosedClientIsFreed() async throws {
        let harness = try await BrokerHarness.start()
        defer { Task { await harness.stop() } }
        weak var client: BridgeClient?
        weak var socket: WebSocketClient?
        do {
            let connected = try await harness.client()
            (client, socket) = (connected, connected.socket)
            #expect(try await connected.post("echo", ["n": 1]) == ["n": 1])
            connected.close()
        }
        try await waitFor(.seconds(10)) { client == nil && socket == nil }
    }

    /// A client dropped without `close()` closes its connection (the broker sees it end) and its
    /// socket is freed once the service thread has stopped.
    @Test func aDroppedClientClosesAndIsFreed() async throws {
        let harness = try await BrokerHarness.start()
        defer { Task { await harness.stop() } }
        weak var socket: WebSocketClient?
        do {
            let connected = try await harness.client()
            socket = connected.socket
            #expect(try await connected.post("echo", ["n": 2]) == ["n": 2])
        }
        try await waitFor(.seconds(10)) { socket == nil }
        // The broker's service thread sees the close on its own time: the client's thread may
        // have ended before it handled the close it answered.
        try await waitFor(.seconds(10)) { harness.server.webSocket.openSessionCount == 0 }
    }

    @Test func originAllowlist() async throws {
        let harness = try await BrokerHarness.start { $0.allowedOrigins = ["https://app.example"] }
        defer { Task { await harness.stop() } }
        let own = try await harness.client(origin: "http://127.0.0.1:\(harness.server.port)")
        own.close()
        let listed = try await harness.client(origin: "https://app.example")
        listed.close()
        await #expect(throws: (any Error).self) { try await harness.client(origin: "https://evil.example") }
        let stillServing = try await harness.client()
        #expect(try await stillServing.post("echo", 1) == 1)
        stillServing.close()
    }

    @Test func tokenByQueryOrBearer() async throws {
        let harness = try await BrokerHarness.start { $0.token = "s3cret" }
        defer { Task { await harness.stop() } }
        await #expect(throws: (any Error).self) { try await harness.client() }
        await #expect(throws: (any Error).self) { try await harness.client(path: "/bridge?token=wrong") }
        let byQuery = try await harness.client(path: "/bridge?token=s3cret")
        byQuery.close()
        let byHeader = try await harness.client(token: "s3cret")
        #expect(try await byHeader.post("echo", "ok") == "ok")
        byHeader.close()
    }

    @Test func oversizeMessageClosesWith1009AndTheServerGoesOn() async throws {
        let harness = try await BrokerHarness.start { $0.broker.maxMessageBytes = 4096 }
        defer { Task { await harness.stop() } }
        let client = try await harness.client()
        client.sendRaw(String(repeating: "x", count: 5000))
        try await waitFor { client.closeStatus.closed }
        #expect(client.closeStatus.code == 1009)
        let next = try await harness.client()
        #expect(try await next.post("echo", "fine") == "fine")
        next.close()
    }

    @Test func malformedFramesGetErrorsOnTheSameConnection() async throws {
        let harness = try await BrokerHarness.start()
        defer { Task { await harness.stop() } }
        let client = try await harness.client()
        defer { client.close() }
        let errors = FrameLog()
        client.onUnsolicited { errors.append($0) }
        client.sendRaw("this is not json")
        client.sendRaw(binary: [9, 9, 9])
        await #expect(throws: BridgeError(.unknownHandler, "no handler named \"nope\"")) { try await client.post("nope") }
        await #expect(throws: BridgeError(.badMessage, "\"name\" must be a string, not a number")) {
            try await client.send(["type": "post", "name": 42, "id": 900], awaitingReplyTo: 900)
        }
        try await waitFor { errors.frames.count >= 2 }
        #expect(errors.frames.allSatisfy { $0["type"] == "error" && $0["error"]?["code"] == "bad_message" })
        #expect(try await client.post("echo", "alive") == "alive")
    }

    @Test func shutdownClosesConnectionsWith1001AndCancelsWork() async throws {
        let harness = try await BrokerHarness.start()
        let client = try await harness.client()
        let pending = Task { try await client.post("fetch", ["url": .string(harness.origin.url("/hang"))]) }
        // The fetch is at the origin (work to cancel), not merely 200 ms later.
        try await waitFor { harness.origin.requestCount("/hang") == 1 }
        await harness.stop()
        try await waitFor { client.closeStatus.closed }
        #expect(client.closeStatus.code == 1001)
        await #expect(throws: BridgeError.self) { try await pending.value }
    }

    @Test func servesTheShimAndExamplesOverHTTP() async throws {
        let harness = try await BrokerHarness.start()
        defer { Task { await harness.stop() } }
        let shim = try httpGet(port: harness.server.port, path: "/bridge.js")
        #expect(shim.status == 200)
        #expect(shim.head.lowercased().contains("access-control-allow-origin: *"))
        #expect(shim.head.lowercased().contains("content-type: text/javascript"))
        #expect(String(decoding: shim.body, as: UTF8.self).contains("BridgeBroker"))
        #expect(String(decoding: shim.body, as: UTF8.self).hasSuffix("//# sourceMappingURL=bridge.js.map\n"))
        // The source map, next to the shim with the same headers: DevTools fetches it from any page.
        let map = try httpGet(port: harness.server.port, path: "/bridge.js.map")
        #expect(map.status == 200)
        #expect(map.head.lowercased().contains("access-control-allow-origin: *"))
        #expect(map.head.lowercased().contains("content-type: application/json"))
        #expect(map.head.lowercased().contains("cache-control: no-cache"))
        let document = try #require(try JSONSerialization.jsonObject(with: Data(map.body)) as? [String: Any])
        let version = document["version"] as? Int
        let sources = document["sources"] as? [String] ?? []
        #expect(version == 3)
        #expect(sources.contains("src/main.js"))
        // The bootstrap snippet's text, for templates and tools that inline it (bridge-js/README.md).
        let snippet = try httpGet(port: harness.server.port, path: "/bridge-snippet.js")
        #expect(snippet.status == 200)
        #expect(snippet.head.lowercased().contains("content-type: text/javascript"))
        #expect(String(decoding: snippet.body, as: UTF8.self).contains(#"Symbol.for("bridge-broker.snippet")"#))
        // The boot script a host injects at document start, and its map (bridge-js/README.md, "The boot script").
        let boot = try httpGet(port: harness.server.port, path: "/bridge-boot.js")
        #expect(boot.status == 200)
        #expect(boot.head.lowercased().contains("content-type: text/javascript"))
        #expect(boot.head.lowercased().contains("access-control-allow-origin: *"))
        #expect(String(decoding: boot.body, as: UTF8.self).contains(#"Symbol.for("bridge-broker.boot")"#))
        let bootMap = try httpGet(port: harness.server.port, path: "/bridge-boot.js.map")
        #expect(bootMap.status == 200)
        let bootSources = (try JSONSerialization.jsonObject(with: Data(bootMap.body)) as? [String: Any])?["sources"] as? [String] ?? []
        #expect(bootSources.contains("src/boot.js") && !bootSources.contains("src/main.js"))
        #expect(try httpGet(port: harness.server.port, path: "/examples/").status == 200)
        #expect(try httpGet(port: harness.server.port, path: "/examples/../Package.swift").status == 404)
        #expect(try httpGet(port: harness.server.port, path: "/examples/%2e%2e/Package.swift").status == 404)
        #expect(try httpGet(port: harness.server.port, path: "/nothing").status == 404)
    }

    @Test func theShimRevalidatesWithItsETagAndGets304() async throws {
        let harness = try await BrokerHarness.start()
        defer { Task { await harness.stop() } }
        let first = try httpGet(port: harness.server.port, path: "/bridge.js")
        let headers = first.head.lowercased().split(separator: "\r\n")
        #expect(headers.contains("cache-control: no-cache"))
        let tagLine = try #require(headers.first { $0.hasPrefix("etag: ") })
        let tag = String(tagLine.dropFirst("etag: ".count))
        #expect(tag.hasPrefix("\"") && tag.hasSuffix("\"") && tag.count > 2)

        let again = try httpGet(port: harness.server.port, path: "/bridge.js", headers: ["If-None-Match: W/\"other\", \(tag)"])
        #expect(again.status == 304)
        #expect(again.body.isEmpty)
        #expect(again.head.lowercased().contains("etag: \(tag)"))
        #expect(again.head.lowercased().contains("access-control-allow-origin: *"))
        #expect(try httpGet(port: harness.server.port, path: "/bridge.js", headers: ["If-None-Match: \"other\""]).status == 200)
        // Another file has another tag: the shim's does not answer for the examples.
        #expect(try httpGet(port: harness.server.port, path: "/examples/", headers: ["If-None-Match: \(tag)"]).status == 200)
    }

    @Test func theShimGoesGzippedToARequestThatAcceptsGzipWithItsOwnETag() async throws {
        let harness = try await BrokerHarness.start()
        defer { Task { await harness.stop() } }
        let port = harness.server.port
        let plainFile = try Data(contentsOf: URL(fileURLWithPath: BrokerHarness.projectRoot + "/bridge-js/bridge.js"))
        let gzipFile = try Data(contentsOf: URL(fileURLWithPath: BrokerHarness.projectRoot + "/bridge-js/bridge.js.gz"))
        func headers(_ response: (status: Int, head: String, body: [UInt8])) -> [Substring] {
            response.head.lowercased().split(separator: "\r\n")
        }
        func tag(_ response: (status: Int, head: String, body: [UInt8])) throws -> String {
            String(try #require(headers(response).first { $0.hasPrefix("etag: ") }).dropFirst(6))
        }

        let plain = try httpGet(port: port, path: "/bridge.js")
        #expect(plain.status == 200 && Data(plain.body) == plainFile)
        #expect(!plain.head.lowercased().contains("content-encoding"))
        #expect(headers(plain).contains("vary: accept-encoding"))

        let zipped = try httpGet(port: port, path: "/bridge.js", headers: ["Accept-Encoding: gzip, deflate, br, zstd"])
        #expect(zipped.status == 200 && Data(zipped.body) == gzipFile)
        #expect(headers(zipped).contains("content-encoding: gzip"))
        #expect(headers(zipped).contains("vary: accept-encoding"))
        #expect(headers(zipped).contains("content-type: text/javascript; charset=utf-8"))
        #expect(headers(zipped).contains("content-length: \(gzipFile.count)"))
        let plainTag = try tag(plain), zippedTag = try tag(zipped)
        #expect(zippedTag != plainTag && zippedTag.hasSuffix("-gzip\""))

        // Each encoding revalidates with its own tag; the other's is a different representation.
        let again = try httpGet(port: port, path: "/bridge.js", headers: ["Accept-Encoding: gzip", "If-None-Match: \(zippedTag)"])
        #expect(again.status == 304 && again.body.isEmpty)
        #expect(try httpGet(port: port, path: "/bridge.js", headers: ["Accept-Encoding: gzip", "If-None-Match: \(plainTag)"]).status == 200)
        #expect(try httpGet(port: port, path: "/bridge.js", headers: ["If-None-Match: \(zippedTag)"]).status == 200)

        // gzip refused (q=0), or not offered: the plain file.
        for refusal in ["Accept-Encoding: gzip;q=0, deflate", "Accept-Encoding: identity", "Accept-Encoding: *;q=0", "Accept-Encoding: br"] {
            let response = try httpGet(port: port, path: "/bridge.js", headers: [refusal])
            #expect(Data(response.body) == plainFile, "\(refusal)")
        }
        #expect(Data(try httpGet(port: port, path: "/bridge.js", headers: ["Accept-Encoding: *"]).body) == gzipFile)
        // The map is not precompressed.
        #expect(!(try httpGet(port: port, path: "/bridge.js.map", headers: ["Accept-Encoding: gzip"]).head.lowercased().contains("content-encoding")))
    }

    @Test func aGzipCopyThatIsNotTheShimAsItIsNowIsNeverServed() async throws {
        let root = NSTemporaryDirectory() + "bridge-web-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root + "/bridge-js", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let shim = try Data(contentsOf: URL(fileURLWithPath: BrokerHarness.projectRoot + "/bridge-js/bridge.js"))
        try shim.write(to: URL(fileURLWithPath: root + "/bridge-js/bridge.js"))
        // The committed copy of the committed shim, beside a shim edited by hand after the build.
        try Data(contentsOf: URL(fileURLWithPath: BrokerHarness.projectRoot + "/bridge-js/bridge.js.gz"))
            .write(to: URL(fileURLWithPath: root + "/bridge-js/bridge.js.gz"))
        let harness = try await BrokerHarness.start { $0.webRoot = root }
        defer { Task { await harness.stop() } }
        #expect(Data(try httpGet(port: harness.server.port, path: "/bridge.js", headers: ["Accept-Encoding: gzip"]).body) != shim)
        let edited = shim + Data("\n// edited\n".utf8)
        try edited.write(to: URL(fileURLWithPath: root + "/bridge-js/bridge.js"))
        let response = try httpGet(port: harness.server.port, path: "/bridge.js", headers: ["Accept-Encoding: gzip"])
        #expect(Data(response.body) == edited)
        #expect(!response.head.lowercased().contains("content-encoding"))
        // A copy that is not gzip at all is ignored the same way.
        try Data("not gzip".utf8).write(to: URL(fileURLWithPath: root + "/bridge-js/bridge.js.gz"))
        #expect(Data(try httpGet(port: harness.server.port, path: "/bridge.js", headers: ["Accept-Encoding: gzip"]).body) == edited)
    }

    @Test func withShimMaxAgeAReturningPageNeedNotAsk() async throws {
        let harness = try await BrokerHarness.start { $0.shimMaxAge = 600 }
        defer { Task { await harness.stop() } }
        let shim = try httpGet(port: harness.server.port, path: "/bridge.js")
        let headers = shim.head.lowercased().split(separator: "\r\n")
        #expect(headers.contains("cache-control: max-age=600"))
        let tagLine = try #require(headers.first { $0.hasPrefix("etag: ") })
        // Once it expires, the page revalidates as before; the 304 carries the same max-age.
        let again = try httpGet(port: harness.server.port, path: "/bridge.js", headers: ["If-None-Match: \(tagLine.dropFirst(6))"])
        #expect(again.status == 304)
        #expect(again.head.lowercased().contains("cache-control: max-age=600"))
        #expect(try httpGet(port: harness.server.port, path: "/bridge.js.map").head.lowercased().contains("cache-control: max-age=600"))
        // The examples are pages people edit: they keep asking every time.
        #expect(try httpGet(port: harness.server.port, path: "/examples/").head.lowercased().contains("cache-control: no-cache"))
    }
}

/// Frames collected from a listener.
final class FrameLog: @unchecked Sendable {
    private let lock = NSLock()
    private var _frames: [JSONValue] = []
    func append(_ frame: JSONValue) { lock.withLock { _frames.append(frame) } }
    var frames: [JSONValue] { lock.withLock { _frames } }
}
