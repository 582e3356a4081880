import BridgeCore
import BridgeServer
import BridgeTestOrigin
import BridgeWebSocket
import Foundation

/// A real broker on an OS-chosen port and a real origin, for one test.
struct BrokerHarness {
    let server: BrokerServer
    let origin: LocalOrigin
    let cacheDirectory: String

    /// The project's root, where bridge-js/ and examples/ live.
    static let projectRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    static func start(originLatency: Duration = .zero, configure: (inout BrokerServerConfiguration) -> Void = { _ in }) async throws -> BrokerHarness {
        let origin = try await LocalOrigin.start(latency: originLatency)
        var configuration = BrokerServerConfiguration()
        configuration.port = 0
        configuration.allowURLs = ["http://127.0.0.1:*"]
        configuration.webRoot = projectRoot
        configuration.cacheDirectory = NSTemporaryDirectory() + "bridge-test-\(UUID().uuidString)"
        configure(&configuration)
        let server = BrokerServer(configuration: configuration)
        try server.start()
        return BrokerHarness(server: server, origin: origin, cacheDirectory: configuration.cacheDirectory)
    }

    var url: String { server.bridgeURL }

    func client(token: String? = nil, origin: String? = nil, path: String = "/bridge") async throws -> BridgeClient {
        try await BridgeClient.connect(url: "ws://127.0.0.1:\(server.port)\(path)", token: token, origin: origin)
    }

    /// Stops the broker and the origin; `removing: false` keeps the cache directory for a restart.
    func stop(removing: Bool = true) async {
        await server.shutdown()
        await origin.stop()
        if removing { try? FileManager.default.removeItem(atPath: cacheDirectory) }
    }
}

/// Collects a post's events and body chunks as they arrive.
final class PostRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var _events: [(name: String, body: JSONValue, at: ContinuousClock.Instant)] = []
    private var _body: [UInt8] = []
    private var _chunks: [(count: Int, end: Bool, at: ContinuousClock.Instant)] = []

    var handler: @Sendable (BridgeClient.PostEvent) -> Void {
        { [self] event in
            lock.lock()
            defer { lock.unlock() }
            switch event {
            case .event(let name, let body): _events.append((name, body, .now))
            case .body(let bytes, let end):
                _body += bytes
                _chunks.append((bytes.count, end, .now))
            }
        }
    }

    var events: [(name: String, body: JSONValue, at: ContinuousClock.Instant)] { lock.withLock { _events } }
    var body: [UInt8] { lock.withLock { _body } }
    var chunks: [(count: Int, end: Bool, at: ContinuousClock.Instant)] { lock.withLock { _chunks } }
}

/// A bare HTTP/1.0 GET over a socket: the status line, headers and body as text.
func httpGet(port: Int, path: String, headers: [String] = []) throws -> (status: Int, head: String, body: [UInt8]) {
    try httpRequest(port: port, method: "GET", path: path, headers: headers)
}

/// A bare HTTP/1.0 request over a socket, with `body` after its Content-Length if given.
func httpRequest(port: Int, method: String, path: String, headers: [String] = [], body: [UInt8]? = nil) throws -> (status: Int, head: String, body: [UInt8]) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw BridgeError(.network, "socket") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    guard connected == 0 else { throw BridgeError(.network, "connect") }
    let length = body.map { ["Content-Length: \($0.count)"] } ?? []
    let request = Array(("\(method) \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n" + (headers + length).map { $0 + "\r\n" }.joined() + "\r\n").utf8) + (body ?? [])
    var sent = 0
    while sent < request.count {
        let count = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { break }
        sent += count
    }
    var response: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = recv(fd, &buffer, buffer.count, 0)
        if count <= 0 { break }
        response += buffer[0..<count]
    }
    let separator = Array("\r\n\r\n".utf8)
    let split = (0...(max(0, response.count - 4))).first { Array(response[$0..<min(response.count, $0 + 4)]) == separator } ?? response.count
    let head = String(decoding: response[0..<split], as: UTF8.self)
    let body = split + 4 <= response.count ? Array(response[(split + 4)...]) : []
    let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
    return (status, head, body)
}

/// The peak resident memory of this process (VmHWM), in bytes.
func peakResidentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }
    return 0
}

func waitFor(_ timeout: Duration = .seconds(120), _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else { throw BridgeError(.timeout, "condition not met in \(timeout)") }
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// Waits until the broker behind `client` answers `url` from its cache (fresh or stale), that is,
/// until the store of an earlier fetch has committed; the commit runs after the fetch's reply.
func waitForCommit(of url: String, _ client: BridgeClient, timeout: Duration = .seconds(120)) async throws {
    let deadline = ContinuousClock.now + timeout
    while true {
        let reply = try? await client.post("fetch", ["url": .string(url), "cache": "only-if-cached", "responseBody": "none"])
        if let status = reply?["cache"]?["status"], status == "hit" || status == "stale" { return }
        guard ContinuousClock.now < deadline else { throw BridgeError(.timeout, "\(url) was not stored in \(timeout)") }
        try await Task.sleep(for: .milliseconds(10))
    }
}
