import BridgeCore
import Testing

/// The fetch field `whole`: a fresh hit from memory as one whole-response frame (head and body)
/// for a client that asks, and today's frames for every other.
struct WholeResponseTests {
    /// A whole-response frame taken apart: (id, END, head, body); nil if it is not one.
    static func decode(_ frame: RecordingSink.Frame) -> (id: Int, end: Bool, head: JSONValue, body: [UInt8])? {
        let bytes = frame.bytes
        guard frame.binary, bytes.count >= 14, bytes[0] == BinaryFrameHeader.wholeResponse else { return nil }
        let id = bytes[2..<10].reduce(0) { $0 << 8 | Int($1) }
        let length = bytes[10..<14].reduce(0) { $0 << 8 | Int($1) }
        guard bytes.count >= 14 + length, let head = try? JSONParser.parse(Array(bytes[14..<(14 + length)])) else { return nil }
        return (id, bytes[1] == BinaryFrameHeader.endFlag, head, Array(bytes[(14 + length)...]))
    }

    func frames(of id: Int, in hit: HitRig) -> [RecordingSink.Frame] {
        hit.sink.frames.filter { frame in
            if let whole = Self.decode(frame) { return whole.id == id }
            if frame.binary { return BinaryFrameHeader.id(of: frame.bytes) == id }
            return frame.json?["id"]?.intValue == id
        }
    }

    @Test func aHitUnderTheLimitIsOneFrameWhoseHeadIsTheReplyBody() async throws {
        let hit = HitRig()
        _ = try await hit.fetch("/image", id: 1)
        hit.rig.clock.set(T0 + 4)
        hit.send("/image", id: 2, [("responseBody", "binary")])
        hit.send("/image", id: 3, [("responseBody", "binary"), ("whole", 5)])
        // Without `whole`: today's frames. With it: one frame, sent during `receive`.
        #expect(hit.sequence(of: 2) == ["response", "binary", "progress", "reply"])
        let mine = frames(of: 3, in: hit)
        #expect(mine.count == 1)
        let whole = try #require(mine.first.flatMap(Self.decode))
        #expect(whole.id == 3 && whole.end && whole.body == Array("\u{1}\u{2}png".utf8))
        #expect(whole.head == hit.replyNow(2)?["body"])
        #expect(whole.head["bodyEncoding"] == "binary" && whole.head["bodyBytes"] == 5 && whole.head["cache"] == ["status": "hit", "age": 4])
        #expect(hit.rig.cache.statistics.hits == 2 && hit.rig.upstream.count == 1)
        // The post is over: its id may be used again.
        hit.send("/image", id: 3, [("responseBody", "binary"), ("whole", 5)])
        #expect(frames(of: 3, in: hit).compactMap(Self.decode).count == 2)
    }

    @Test func overTheLimitNotBinaryOrAMissGetsTodaysFrames() async throws {
        let hit = HitRig()
        _ = try await hit.fetch("/image", id: 1, [("responseBody", "binary"), ("whole", .integer(1 << 20))])
        #expect(hit.sequence(of: 1).first == "response" && hit.sequence(of: 1).last == "reply", "a miss streams")
        hit.send("/image", id: 2, [("responseBody", "binary"), ("whole", 4)])
        #expect(hit.sequence(of: 2) == ["response", "binary", "progress", "reply"])
        hit.send("/image", id: 3, [("responseBody", "base64"), ("whole", .integer(1 << 20))])
        #expect(hit.sequence(of: 3) == ["response", "progress", "reply"])
        // Over binaryChunkBytes: never one frame, whatever the client takes.
        let small = HitRig { $0.binaryChunkBytes = 4 }
        _ = try await small.fetch("/image", id: 1)
        small.send("/image", id: 2, [("responseBody", "binary"), ("whole", .integer(1 << 20))])
        #expect(small.sequence(of: 2) == ["response", "binary", "binary", "progress", "reply"])
        #expect(hit.sink.frames.allSatisfy { Self.decode($0) == nil } && small.sink.frames.allSatisfy { Self.decode($0) == nil })
    }

    @Test func aGroupStillGetsItsProgressAndAnEmptyBodyIsOneFrameToo() async throws {
        let hit = HitRig()
        _ = try await hit.fetch("/fresh/0", id: 1)
        hit.send("/fresh/0", id: 2, [("responseBody", "binary"), ("whole", 0), ("group", "page")])
        let whole = try #require(frames(of: 2, in: hit).compactMap(Self.decode).first)
        #expect(whole.body.isEmpty && whole.head["bodyBytes"] == 0 && whole.head["status"] == 200)
        let progress = try await hit.sink.frames(ofType: "event").filter { $0["name"] == "group.progress" }
        #expect(progress.last?["body"]?["finished"] == 1 && progress.last?["body"]?["progress"] == 1)
    }

    @Test func aBatchFrameHoldsEachFrameAfterItsLength() {
        let first = BinaryFrameHeader.wholeResponseFrame(id: 7, head: Array("{}".utf8), body: [1, 2, 3], headroom: 16)
        let second = BinaryFrameHeader.wholeResponseFrame(id: 1 << 40, head: Array("{\"a\":1}".utf8), body: [], headroom: 0)
        let batch = BinaryFrameHeader.batchFrame(of: [first, second], headroom: 16)
        #expect(batch.headroom == 16)
        let bytes = batch.bytes
        #expect(Array(bytes[0..<10]) == [BinaryFrameHeader.batch, BinaryFrameHeader.endFlag, 0, 0, 0, 0, 0, 0, 0, 0])
        #expect(Array(bytes[10..<14]) == [0, 0, 0, UInt8(first.count)] && Array(bytes[14..<(14 + first.count)]) == first.bytes)
        let next = 14 + first.count
        #expect(Array(bytes[next..<(next + 4)]) == [0, 0, 0, UInt8(second.count)] && Array(bytes[(next + 4)...]) == second.bytes)
        #expect(bytes.count == 10 + 8 + first.count + second.count)
    }

    @Test func aBadWholeIsABadRequest() async throws {
        let hit = HitRig()
        for (id, value) in [(1, JSONValue.integer(-1)), (2, "big"), (3, .integer(1 << 41))] {
            hit.send("/image", id: id, [("whole", value)])
            let reply = try await hit.sink.reply(id)
            #expect(reply["error"]?["code"] == "bad_request", "\(value)")
        }
        hit.send("/image", id: 4, [("whole", 5), ("batch", "yes")])
        #expect(try await hit.sink.reply(4)["error"]?["code"] == "bad_request", "batch must be a boolean")
    }
}
