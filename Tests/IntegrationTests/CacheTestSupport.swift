import BridgeCore
import BridgeServer
import BridgeTestOrigin
import BridgeWebSocket
import Foundation
import Synchronization
import Testing

/// A `BrokerHarness` whose cache lives in a directory the test may prepare or reuse, with a
/// connected client; `stop()` tears everything down.
struct CacheHarness {
    let base: BrokerHarness
    let client: BridgeClient

    var server: BrokerServer { base.server }
    var origin: LocalOrigin { base.origin }
    var directory: String { base.cacheDirectory }

    static func start(directory: String? = nil, prepare: (String) throws -> Void = { _ in }) async throws -> CacheHarness {
        let directory = directory ?? NSTemporaryDirectory() + "cache-it-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try prepare(directory)
        let base = try await BrokerHarness.start {
            $0.cacheDirectory = directory
            // Early requests' lookups under a loaded CI machine (AddressSanitizer, tests in parallel).
            $0.earlyDeadline = .seconds(120)
        }
        return CacheHarness(base: base, client: try await base.client())
    }

    func stop(removing: Bool = true) async {
        client.close()
        await base.stop(removing: removing)
    }

    /// A fetch through the broker; returns the reply, the `response` event and the binary body.
    func fetch(_ path: String, cache: String = "default", responseBody: String = "text", headers: JSONValue = .array([]))
        async throws -> (reply: JSONValue, response: JSONValue?, binary: [UInt8])
    {
        let collected = Mutex<(response: JSONValue?, binary: [UInt8])>((nil, []))
        let reply = try await client.post("fetch", [
            "url": .string(origin.url(path)), "cache": .string(cache), "responseBody": .string(responseBody),
            "headers": headers,
        ]) { event in
            collected.withLock { state in
                switch event {
                case .event(let name, let body) where name == "response": state.response = body
                case .body(let bytes, _): state.binary += bytes
                default: break
                }
            }
        }
        let (response, binary) = collected.withLock { ($0.response, $0.binary) }
        return (reply, response, binary)
    }
}

extension JSONValue {
    /// The reply's `cache.status`.
    var cacheStatus: String? { self["cache"]?["status"]?.stringValue }

    /// The first value of a header in a reply's `[[name, value]]` list.
    func header(_ name: String) -> String? {
        self["headers"]?.arrayValue?.first { $0.arrayValue?.first?.stringValue == name }?.arrayValue?.last?.stringValue
    }
}
