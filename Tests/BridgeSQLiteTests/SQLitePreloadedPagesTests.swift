import BridgeCore
import Foundation
import Testing
@testable import BridgeSQLite

/// The record of preloaded pages in the broker's database (`SQLitePreloadedPages`).
struct SQLitePreloadedPagesTests {
    @Test func theRecordSurvivesAReopenInItsOrderWithoutTheEvictedPages() throws {
        let directory = TemporaryDirectory()
        do {
            let pages = PreloadedPages(capacity: 2, persistence: try SQLitePreloadedPages(directory: directory.path))
            pages.record(page: "http://a/1", resources: ["http://a/x?q=1", "http://a/y"])
            pages.record(page: "http://a/2", resources: [])
            pages.record(page: "http://a/1", resources: ["http://a/z"])
            pages.record(page: "http://a/3", resources: ["http://a/w"])
        }
        let store = try SQLitePreloadedPages(directory: directory.path)
        let kept = try store.loadPreloadedPages()
        #expect(kept.map(\.page) == ["http://a/1", "http://a/3"], "least recently recorded first, page 2 evicted")
        #expect(kept.map(\.resources) == [["http://a/z"], ["http://a/w"]])
        let reopened = PreloadedPages(capacity: 2, persistence: store)
        #expect(reopened.resources(of: "http://a/1") == ["http://a/z"])
        #expect(reopened.resources(of: "http://a/2") == [])
        // A page that stored nothing is recorded as such.
        reopened.record(page: "http://a/4", resources: [])
        #expect(try store.loadPreloadedPages().last.map { $0.page == "http://a/4" && $0.resources.isEmpty } == true)
    }

    @Test func aDatabaseOfSchemaFiveGetsTheTable() throws {
        let directory = TemporaryDirectory()
        let connection = try BrokerDatabase.open(in: directory.path)
        try connection.execute("DROP TABLE preloaded_pages")
        try connection.execute("UPDATE meta SET value = '5' WHERE key = 'schema'")
        let store = try SQLitePreloadedPages(directory: directory.path)
        try store.savePreloadedPage("http://a/1", resources: ["http://a/x"], evicting: [])
        #expect(try store.loadPreloadedPages().map(\.page) == ["http://a/1"])
        let version = try connection.prepare("SELECT value FROM meta WHERE key = 'schema'")
        #expect(try version.step() && version.string(at: 0) == String(BrokerDatabase.schemaVersion))
    }
}
