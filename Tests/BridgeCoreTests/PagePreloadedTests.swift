import Synchronization
import BridgeCore
import Testing

/// `page.preloaded`: the fresh stored resources of a page's last preload, asked for at once.
struct PagePreloadedTests {
    private func rig(_ pages: PreloadedPages) -> HitRig {
        let hit = HitRig()
        hit.broker.register("page.preloaded", PagePreloadedHandler(pages: pages))
        return hit
    }

    private func ask(_ hit: HitRig, id: Int, _ body: JSONValue) {
        post(hit.connection, ["type": "post", "name": "page.preloaded", "id": .integer(id), "body": body])
    }

    @Test func eachResourceIsAFreshOnlyFetchUnderTheIdsTheClientGave() async throws {
        let pages = PreloadedPages()
        let hit = rig(pages)
        pages.record(page: "http://a.example/page", resources: ["http://a.example/fresh/5", "http://a.example/fresh/7"])
        _ = try await hit.fetch("/fresh/5", id: 1)
        // The template's cache mode and body are the broker's to set: fresh-only, none.
        ask(hit, id: 10, ["page": "http://a.example/page#section", "firstId": 20, "fetch": ["cache": "reload", "body": "x", "responseBody": "text"]])
        let reply = try #require(hit.replyNow(10))
        #expect(reply["body"]?["urls"] == ["http://a.example/fresh/5", "http://a.example/fresh/7"])
        // The stored one is a hit served at once; the other fails as fresh-only does, with no upstream request.
        #expect(hit.replyNow(20)?["body"]?["body"] == "xxxxx" && hit.replyNow(20)?["body"]?["cache"]?["status"] == "hit")
        #expect(hit.replyNow(21)?["error"]?["code"] == "not_cached")
        #expect(hit.rig.upstream.count == 1)
    }

    @Test func aPageNeverPreloadedGetsAnEmptyListAndBadBodiesAreRefused() async throws {
        let hit = rig(PreloadedPages())
        ask(hit, id: 1, ["page": "http://a.example/other", "firstId": 5])
        #expect(hit.replyNow(1)?["body"]?["urls"] == [])
        #expect(hit.replyNow(5) == nil)
        ask(hit, id: 2, ["page": "http://a.example/other"])
        #expect(hit.replyNow(2)?["error"]?["code"] == "bad_request")
        ask(hit, id: 3, ["firstId": 1])
        #expect(hit.replyNow(3)?["error"]?["code"] == "bad_request")
        ask(hit, id: 4, ["page": "http://a.example/other", "firstId": 1, "fetch": "x"])
        #expect(hit.replyNow(4)?["error"]?["code"] == "bad_request")
        post(hit.connection, ["type": "post", "name": "page.preloaded", "body": ["page": "http://a.example/other", "firstId": 1]])
        #expect(hit.sink.jsonFrames.last?["type"] == "error")
    }

    @Test func theRecordKeepsTheLatestPreloadOfTheMostRecentPages() {
        let pages = PreloadedPages(capacity: 2)
        pages.record(page: "http://a/1", resources: ["http://a/x"])
        pages.record(page: "http://a/2", resources: ["http://a/y"])
        pages.record(page: "http://a/1", resources: ["http://a/z"])
        pages.record(page: "http://a/3", resources: Array(repeating: "http://a/w", count: 100))
        #expect(pages.resources(of: "http://a/1") == ["http://a/z"])
        #expect(pages.resources(of: "http://a/2") == [], "the least recently recorded went")
        #expect(pages.resources(of: "http://a/3").count == PreloadedPages.maxResources)
    }

    @Test func aPersistenceKeepsEveryRecordAndGivesItBackAtStart() {
        let kept = MemoryPreloadedPages()
        let pages = PreloadedPages(capacity: 2, persistence: kept)
        pages.record(page: "http://a/1", resources: ["http://a/x"])
        pages.record(page: "http://a/2", resources: ["http://a/y"])
        pages.record(page: "http://a/1", resources: ["http://a/z"])
        pages.record(page: "http://a/3", resources: ["http://a/w"])
        #expect(kept.pages.withLock { $0.map(\.page) } == ["http://a/1", "http://a/3"], "the evicted page left the database too")
        // A restart: the same record, the most recently recorded kept when the capacity is smaller.
        let again = PreloadedPages(capacity: 2, persistence: kept)
        #expect(again.resources(of: "http://a/1") == ["http://a/z"] && again.resources(of: "http://a/3") == ["http://a/w"])
        let smaller = PreloadedPages(capacity: 1, persistence: kept)
        #expect(smaller.resources(of: "http://a/1") == [] && smaller.resources(of: "http://a/3") == ["http://a/w"])
        // Cleared with the whole cache: in memory and in the database.
        again.clear()
        #expect(again.resources(of: "http://a/1") == [] && kept.pages.withLock { $0.isEmpty })
        again.record(page: "http://a/5", resources: ["http://a/v"])
        #expect(again.resources(of: "http://a/5") == ["http://a/v"])
    }

    @Test func aFailingPersistenceIsReportedAndTheRecordStaysInMemory() {
        let kept = MemoryPreloadedPages()
        kept.failing.withLock { $0 = true }
        let reports = Mutex<[String]>([])
        let pages = PreloadedPages(persistence: kept) { message in reports.withLock { $0.append(message) } }
        pages.record(page: "http://a/1", resources: ["http://a/x"])
        #expect(pages.resources(of: "http://a/1") == ["http://a/x"])
        let messages = reports.withLock { $0 }
        #expect(messages.count == 2 && messages[0].contains("could not be read") && messages[1].contains("in memory only"), "\(messages)")
    }
}

/// A `PreloadedPagesPersistence` in memory, which may fail on demand.
final class MemoryPreloadedPages: PreloadedPagesPersistence {
    struct Failure: Error {}
    let pages = Mutex<[(page: String, resources: [String])]>([])
    let failing = Mutex(false)

    func loadPreloadedPages() throws -> [(page: String, resources: [String])] {
        if failing.withLock({ $0 }) { throw Failure() }
        return pages.withLock { $0 }
    }

    func deleteAllPreloadedPages() throws {
        if failing.withLock({ $0 }) { throw Failure() }
        pages.withLock { $0.removeAll() }
    }

    func savePreloadedPage(_ page: String, resources: [String], evicting evicted: [String]) throws {
        if failing.withLock({ $0 }) { throw Failure() }
        pages.withLock { pages in
            pages.removeAll { $0.page == page || evicted.contains($0.page) }
            pages.append((page, resources))
        }
    }
}
