import Testing
@testable import BridgeCore

struct ValidationTests {
    @Test func conditionalHeadersUseETagAndLastModifiedOnly() {
        let both = stored(["etag": "W/\"v1\"", "last-modified": httpDate(T0 - 50)])
        #expect(Validation.conditionalHeaders(for: both).pairs == [
            ["if-none-match", "W/\"v1\""], ["if-modified-since", httpDate(T0 - 50)],
        ])
        let strong = stored(["etag": "\"v1\""])
        #expect(Validation.conditionalHeaders(for: strong).pairs == [["if-none-match", "\"v1\""]])
        // Date alone is never used as If-Modified-Since.
        #expect(Validation.conditionalHeaders(for: stored([:])).isEmpty)
    }

    @Test func freshenKeepsContentTypeAndLengthAndUpdatesTheRest() {
        let entry = stored([
            "content-type": "text/html", "content-length": "100", "content-encoding": "gzip",
            "etag": "\"v1\"", "cache-control": "max-age=60", "x-foo": "a", "x-keep": "k",
        ])
        let notModified: HeaderList = [
            "content-type": "application/json", "content-length": "0", "content-encoding": "br",
            "etag": "\"v1\"", "cache-control": "max-age=600", "x-foo": "b", "X-Foo": "c",
            "date": httpDate(T0 + 1000), "set-cookie": "s=1", "connection": "x-keep",
            "x-keep": "dropped",
        ]
        let updated = Validation.freshen(
            entry, with: notModified, requestTime: T0 + 999, responseTime: T0 + 1000)
        #expect(updated.headers.first("content-type") == "text/html")
        #expect(updated.headers.first("content-length") == "100")
        #expect(updated.headers.first("content-encoding") == "gzip")
        #expect(updated.headers.values("x-foo") == ["b", "c"])
        #expect(updated.headers.values("cache-control") == ["max-age=600"])
        #expect(updated.headers.first("x-keep") == "k")  // named in Connection: not updated
        #expect(updated.headers.values("set-cookie") == ["s=1"])  // stored, as any field; never served
        #expect(updated.headers.values("date") == [httpDate(T0 + 1000)])
        #expect(updated.id == entry.id && updated.responseTime == T0 + 1000)
        // Freshness is recomputed from the new headers and response time.
        let f = updated.freshness(at: T0 + 1100)
        #expect(f.lifetime == 600 && f.currentAge == 101 && f.isFresh)  // 1 s response delay
        #expect(f.timeToLive == 499)
        #expect(!entry.freshness(at: T0 + 1100).isFresh)
    }

    @Test(arguments: [
        ("\"v1\"", "\"v1\"", true), ("\"v1\"", "\"v2\"", false), ("W/\"v1\"", "W/\"v1\"", true),
        ("W/\"v1\"", "\"v1\"", false),  // a strong 304 tag needs a strong stored tag
        ("\"v1\"", "W/\"v1\"", true),  // a weak 304 tag compares weakly
    ])
    func notModifiedMatchesEntityTags(stored tag: String, received: String, applies: Bool) {
        let entry = stored(["etag": tag])
        #expect(Validation.notModifiedApplies(to: entry, headers: ["etag": received]) == applies)
    }

    @Test func notModifiedMatchesLastModifiedOrNoValidator() {
        let entry = stored(["last-modified": httpDate(T0 - 500)])
        #expect(Validation.notModifiedApplies(to: entry, headers: ["last-modified": httpDate(T0 - 500)]))
        #expect(!Validation.notModifiedApplies(to: entry, headers: ["last-modified": httpDate(T0 - 9)]))
        #expect(Validation.notModifiedApplies(to: entry, headers: ["date": httpDate(T0)]))
    }

    @Test func selectForUpdateFollowsSection434() {
        let a = stored(["etag": "\"x\""], at: T0, id: "a")
        let b = stored(["etag": "\"x\""], at: T0 + 5, id: "b")
        let c = stored(["etag": "\"y\""], at: T0 + 9, id: "c")
        let weakA = stored(["etag": "W/\"w\""], at: T0, id: "wa")
        let weakB = stored(["etag": "W/\"w\""], at: T0 + 3, id: "wb")
        let lm = stored(["last-modified": httpDate(T0 - 100)], id: "lm")
        let bare = stored([:], id: "bare")
        func ids(_ list: [CachedResponse], _ headers: HeaderList) -> [String] {
            Validation.selectForUpdate(list, headers: headers).map(\.id)
        }
        #expect(ids([a, b, c], ["etag": "\"x\""]) == ["a", "b"])  // all strong matches
        #expect(ids([weakA, weakB, c], ["etag": "W/\"w\""]) == ["wb"])  // most recent weak
        #expect(ids([lm, a], ["last-modified": httpDate(T0 - 100)]) == ["lm"])
        #expect(ids([bare], [:]) == ["bare"])
        #expect(ids([bare, a], [:]).isEmpty)
        #expect(ids([a], [:]).isEmpty)
    }
}
