import BridgeCore
import Foundation
import Testing

/// `POST /bridge/early` on the real server, with the real cache and origin.
@Suite struct EarlyPostsIntegrationTests {
    /// The broker's own origin, which its allowlist always takes.
    private func page(_ harness: CacheHarness) -> String { "http://127.0.0.1:\(harness.server.port)" }

    private func early(_ harness: CacheHarness, _ lines: [JSONValue], origin: String? = nil, query: String = "")
        throws -> (status: Int, head: String, frames: [(binary: Bool, bytes: [UInt8])])
    {
        let origin = origin ?? page(harness)
        let body = Array(lines.map { String(decoding: $0.jsonBytes, as: UTF8.self) }.joined(separator: "\n").utf8)
        let headers = ["Content-Type: text/plain;charset=UTF-8", "Origin: \(origin)"]
        let response = try httpRequest(port: harness.server.port, method: "POST", path: "/bridge/early\(query)", headers: headers, body: body)
        return (response.status, response.head, response.status == 200 ? splitFrames(response.body) : [])
    }

    private func splitFrames(_ answer: [UInt8]) -> [(binary: Bool, bytes: [UInt8])] {
        var frames: [(binary: Bool, bytes: [UInt8])] = []
        var at = 0
        while at + 5 <= answer.count {
            let length = answer[(at + 1)..<(at + 5)].reduce(0) { $0 << 8 | Int($1) }
            guard at + 5 + length <= answer.count else { break }
            frames.append((answer[at] == 2, Array(answer[(at + 5)..<(at + 5 + length)])))
            at += 5 + length
        }
        #expect(at == answer.count, "the answer is whole frames")
        return frames
    }

    private func fetch(_ id: Int, _ url: String, whole: Bool = false, cache: String = "fresh-only") -> JSONValue {
        var body: [(key: String, value: JSONValue)] = [("url", .string(url)), ("cache", .string(cache)), ("responseBody", "binary")]
        if whole { body.append(("whole", 262_144)) }
        return ["type": "post", "name": "fetch", "id": .integer(id), "body": .object(JSONObject(body))]
    }

    private let identity: JSONValue = ["type": "post", "name": "page.identity", "body": ["url": "http://127.0.0.1/app/", "userAgent": "EarlyTest/1"]]

    @Test func freshStoredResponsesComeBackAndTheRestAreNotCachedWithoutGoingUpstream() async throws {
        let harness = try await CacheHarness.start { _ in }
        defer { Task { await harness.stop() } }
        let fresh = harness.origin.url("/cached?cc=max-age%3D600&size=3000")
        let stale = harness.origin.url("/cached?cc=max-age%3D0&size=10")
        _ = try await harness.fetch("/cached?cc=max-age%3D600&size=3000")
        _ = try await harness.fetch("/cached?cc=max-age%3D0&size=10")
        let stored = harness.origin.requestCount("/cached")
        try await waitForCommit(of: fresh, harness.client)

        let never = harness.origin.url("/cached?cc=max-age%3D600&never")
        let answer = try early(harness, [identity, fetch(1 << 30, fresh, whole: true), fetch((1 << 30) + 1, stale), fetch((1 << 30) + 2, never), fetch((1 << 30) + 3, fresh)])
        #expect(answer.status == 200)
        #expect(answer.head.lowercased().contains("access-control-allow-origin: \(page(harness))"))
        #expect(answer.head.lowercased().contains("content-type: application/octet-stream"))
        let texts = answer.frames.filter { !$0.binary }.map { try? JSONParser.parse($0.bytes) }
        let replies = Dictionary(uniqueKeysWithValues: texts.compactMap { $0 }.filter { $0["type"]?.stringValue == "reply" }.map { ($0["id"]!.intValue!, $0) })
        // The first asked for a whole response: one binary frame of kind 2, head and body.
        let whole = answer.frames.filter { $0.binary && $0.bytes.first == 2 }
        #expect(whole.count == 1)
        #expect(whole.first.map { Array($0.bytes[2..<10]) } == [0, 0, 0, 0, 0x40, 0, 0, 0], "the early id")
        #expect(whole.first.map { $0.bytes.count > 3000 } == true)
        // The others: not_cached, and the fresh one without `whole` as an event, body frames and its reply.
        #expect(replies[(1 << 30) + 1]?["error"]?["code"]?.stringValue == "not_cached")
        #expect(replies[(1 << 30) + 2]?["error"]?["code"]?.stringValue == "not_cached")
        #expect(replies[(1 << 30) + 3]?["ok"]?.boolValue == true)
        #expect(replies[(1 << 30) + 3]?["body"]?.cacheStatus == "hit")
        let bodyBytes = answer.frames.filter { $0.binary && $0.bytes.first == 1 }.reduce(0) { $0 + $1.bytes.count - 10 }
        #expect(bodyBytes == 3000)
        #expect(harness.origin.requestCount("/cached") == stored, "nothing went upstream")
    }

    @Test func whatCannotBeAnEarlyRequestIsRefusedWithItsStatus() async throws {
        let harness = try await CacheHarness.start { _ in }
        defer { Task { await harness.stop() } }
        let url = harness.origin.url("/cached?cc=max-age%3D600")
        let port = harness.server.port
        #expect(try httpGet(port: port, path: "/bridge/early").status == 405)
        #expect(try early(harness, [fetch(1, url)], origin: "http://elsewhere.test").status == 403, "an origin the allowlist refuses")
        let refused = try early(harness, [fetch(1, url, cache: "default")])
        #expect(refused.status == 400, "only fresh-only fetches go early")
        #expect(refused.head.lowercased().contains("access-control-allow-origin: \(page(harness))"), "the page can read the refusal")
        #expect(try early(harness, [["type": "post", "name": "echo", "id": 1, "body": "x"]]).status == 400)
        let bad = try httpRequest(port: port, method: "POST", path: "/bridge/early", headers: ["Origin: \(page(harness))"], body: Array("{nope".utf8))
        #expect(bad.status == 400)
        #expect(String(decoding: bad.body, as: UTF8.self).contains("line 1"))
        let huge = try httpRequest(port: port, method: "POST", path: "/bridge/early", headers: [], body: [UInt8](repeating: 0x20, count: EarlyPosts.maxRequestBytes + 1))
        #expect(huge.status == 413)
        #expect(try httpRequest(port: port, method: "POST", path: "/bridge/early", headers: []).status == 411)
        // The server is still there for WebSocket clients, and for early requests.
        #expect(try early(harness, [fetch(5, url)]).status == 200)
        #expect(try await harness.fetch("/cached?cc=max-age%3D600").reply["status"]?.intValue == 200)
    }

    @Test func aPreloadedPageGetsItsStoredResourcesFromOneLineAtItsStart() async throws {
        let harness = try await CacheHarness.start { _ in }
        defer { Task { await harness.stop() } }
        let pageURL = harness.origin.url("/pageload?way=links&n=3&size=2000&max-age=600")
        let preload = try await harness.client.post("preload", ["page": .string(pageURL)])
        #expect(preload["totals"]?["stored"]?.intValue == 3)
        let asked = harness.origin.requestCount("/cached")
        let template: JSONValue = ["responseBody": "binary", "whole": 262_144, "cache": "default", "credentials": "same-origin"]
        let line: JSONValue = [
            "type": "post", "name": "page.preloaded", "id": 1,
            "body": ["page": .string(pageURL + "#top"), "firstId": 100, "fetch": template],
        ]
        let answer = try early(harness, [identity, line])
        #expect(answer.status == 200)
        let texts = answer.frames.filter { !$0.binary }.compactMap { try? JSONParser.parse($0.bytes) }
        let reply = try #require(texts.first { $0["type"]?.stringValue == "reply" && $0["id"]?.intValue == 1 })
        let list = try #require(reply["body"]?["urls"]?.arrayValue)
        let urls = list.compactMap(\.stringValue)
        #expect(urls.count == 3 && urls.allSatisfy { $0.contains("/cached?cc=max-age%3D600&size=2000&r=") })
        // One whole response per resource, under ids 100, 101, 102 in the reply's order.
        let whole = answer.frames.filter { $0.binary && $0.bytes.first == 2 }
        let ids = whole.map { $0.bytes[2..<10].reduce(0) { $0 << 8 | Int($1) } }
        #expect(ids.sorted() == [100, 101, 102])
        #expect(whole.allSatisfy { $0.bytes.count > 2000 })
        #expect(harness.origin.requestCount("/cached") == asked, "fresh-only: nothing went upstream")

        // A page never preloaded: nothing but the reply's empty list.
        let other: JSONValue = ["type": "post", "name": "page.preloaded", "id": 1, "body": ["page": "http://127.0.0.1/never", "firstId": 2]]
        let none = try early(harness, [other])
        #expect(none.frames.count == 1)
        #expect(none.frames.first.flatMap { try? JSONParser.parse($0.bytes) }?["body"]?["urls"]?.arrayValue == [])
        // Beside a fetch, or without an id, it is refused.
        #expect(try early(harness, [line, fetch(7, pageURL)]).status == 413)
        let anonymous: JSONValue = ["type": "post", "name": "page.preloaded", "body": ["page": .string(pageURL), "firstId": 2]]
        #expect(try early(harness, [anonymous]).status == 400)
    }

    @Test func aPageOpenedAfterABrokerRestartStillGetsWhatItsPreloadStored() async throws {
        let first = try await CacheHarness.start { _ in }
        let pageURL = first.origin.url("/pageload?way=links&n=2&size=1000&max-age=600")
        let preload = try await first.client.post("preload", ["page": .string(pageURL)])
        #expect(preload["totals"]?["stored"]?.intValue == 2)
        await first.stop(removing: false)
        let second = try await CacheHarness.start(directory: first.directory)
        let line: JSONValue = [
            "type": "post", "name": "page.preloaded", "id": 1,
            "body": ["page": .string(pageURL), "firstId": 10, "fetch": ["responseBody": "binary", "whole": 262_144]],
        ]
        let answer = try early(second, [identity, line])
        #expect(answer.status == 200)
        let texts = answer.frames.filter { !$0.binary }.compactMap { try? JSONParser.parse($0.bytes) }
        let reply = try #require(texts.first { $0["type"]?.stringValue == "reply" && $0["id"]?.intValue == 1 })
        #expect(reply["body"]?["urls"]?.arrayValue?.count == 2)
        // The bodies are on disk only (the new broker's memory holds none): each comes as a stream,
        // complete in the answer (the response event, its body frames, the last one ended, and an
        // ok reply counting their bytes), which the shim serves as it serves a whole response.
        for id in [10, 11] {
            let replies = texts.filter { $0["type"]?.stringValue == "reply" && $0["id"]?.intValue == id }
            let head = try #require(replies.first?["body"], "\(texts)")
            #expect(replies.first?["ok"] == true && head["status"]?.intValue == 200 && head["bodyEncoding"] == "binary")
            #expect(head["cache"]?["status"] == "hit")
            let body = answer.frames.filter { $0.binary }.map(\.bytes).filter { $0.count >= 10 && $0[0] == 1 && $0[2..<10].reduce(0) { $0 << 8 | Int($1) } == id }
            #expect(body.reduce(0) { $0 + $1.count - 10 } == 1000 && head["bodyBytes"]?.intValue == 1000)
            #expect(body.last.map { $0[1] & 1 == 1 } == true, "the last body frame ends the body")
        }
        #expect(second.origin.requestCount("/cached") == 0, "nothing went upstream")

        // Clearing the whole cache forgets the record too, for this broker and the next.
        _ = try await second.client.post("cache.clear")
        let cleared = try early(second, [identity, line])
        #expect(cleared.frames.compactMap { try? JSONParser.parse($0.bytes) }.first { $0["id"]?.intValue == 1 }?["body"]?["urls"]?.arrayValue == [])
        await second.stop(removing: false)
        let third = try await CacheHarness.start(directory: first.directory)
        defer { Task { await third.stop() } }
        let after = try early(third, [identity, line])
        #expect(after.frames.compactMap { try? JSONParser.parse($0.bytes) }.first { $0["id"]?.intValue == 1 }?["body"]?["urls"]?.arrayValue == [])
    }

    @Test func aTokenIsRequiredWhenTheBrokerHasOne() async throws {
        let base = try await BrokerHarness.start {
            $0.token = "s3cret"
            $0.earlyDeadline = .seconds(120)
        }
        defer { Task { await base.stop() } }
        let line = Array(String(decoding: fetch(1, base.origin.url("/cached")).jsonBytes, as: UTF8.self).utf8)
        let without = try httpRequest(port: base.server.port, method: "POST", path: "/bridge/early", headers: ["Origin: http://127.0.0.1:\(base.server.port)"], body: line)
        #expect(without.status == 403)
        let with = try httpRequest(port: base.server.port, method: "POST", path: "/bridge/early?token=s3cret", headers: ["Origin: http://127.0.0.1:\(base.server.port)"], body: line)
        #expect(with.status == 200)
    }
}
