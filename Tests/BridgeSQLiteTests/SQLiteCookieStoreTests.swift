import BridgeCore
import Foundation
import Synchronization
import Testing
@testable import BridgeSQLite

final class FixedClock: BrokerClock {
    let time: Mutex<Double>
    init(_ start: Double) { time = Mutex(start) }
    func now() -> Double { time.withLock { $0 } }
}

struct SQLiteCookieStoreTests {
    static let start: Double = 1_700_000_000

    func jar(_ directory: TemporaryDirectory, at time: Double = start) throws -> CookieJar {
        CookieJar(clock: FixedClock(time), persistence: try SQLiteCookieStore(directory: directory.path))
    }

    @Test func persistentCookiesSurviveAReopenAndSessionCookiesDoNot() throws {
        let directory = TemporaryDirectory()
        let url = CookieURL("https://example.com/app/page")!
        do {
            let first = try jar(directory)
            for line in [
                "keep=1; Max-Age=3600; Path=/; Secure; HttpOnly; SameSite=Strict", "session=2; Path=/",
                "domain=3; Domain=example.com; Expires=Fri, 01 Jan 2100 00:00:00 GMT", "gone=4; Max-Age=60", "gone=; Max-Age=0",
                "flip=5; Max-Age=60; Path=/", "flip=6; Path=/",  // a session cookie replacing a persistent one
            ] { first.store(line, for: url, context: CookieContext()) }
            #expect(first.header(for: url, context: CookieContext()) == "domain=3; keep=1; session=2; flip=6")
        }
        let second = try jar(directory, at: Self.start + 10)
        let cookies = second.all()
        #expect(cookies.map(\.name) == ["keep", "domain"])
        let keep = try #require(cookies.first)
        #expect(keep.secure && keep.httpOnly && keep.sameSite == .strict && keep.hostOnly && keep.path == "/")
        #expect(keep.expires == Self.start + 3600 && keep.creation == Self.start)
        #expect(cookies[1].hostOnly == false && cookies[1].path == "/app")
        // Expired by the time of a third start: dropped from the file too.
        _ = try jar(directory, at: Self.start + 4000)
        let rows = try SQLiteConnection(path: directory.path + "/" + BrokerDatabase.fileName).prepare("SELECT COUNT(*) FROM cookies")
        #expect(try rows.step() && rows.int(at: 0) == 1)
    }

    @Test func clearRemovesFromTheFile() throws {
        let directory = TemporaryDirectory()
        let first = try jar(directory)
        first.store("a=1; Max-Age=600", for: CookieURL("http://a.test/")!, context: CookieContext())
        first.store("b=1; Max-Age=600", for: CookieURL("http://b.test/")!, context: CookieContext())
        #expect(first.clear(domain: "a.test") == 1)
        #expect(try jar(directory).all().map(\.name) == ["b"])
    }

    @Test func aCacheOnlyDatabaseIsMigrated() throws {
        let directory = TemporaryDirectory()
        do {
            let old = try SQLiteConnection(path: directory.path + "/" + BrokerDatabase.fileName)
            try old.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO meta VALUES ('schema', '1')")
            try old.execute(BrokerDatabase.cacheSchema)
        }
        let jar = try jar(directory)
        jar.store("a=1; Max-Age=600", for: CookieURL("http://a.test/")!, context: CookieContext())
        let version = try SQLiteConnection(path: directory.path + "/" + BrokerDatabase.fileName).prepare("SELECT value FROM meta WHERE key = 'schema'")
        #expect(try version.step() && version.string(at: 0) == String(BrokerDatabase.schemaVersion))
        #expect(try self.jar(directory).all().count == 1)
    }

    @Test func partitionedCookiesKeepTheirPartitionAcrossAReopen() throws {
        let directory = TemporaryDirectory()
        let url = CookieURL("https://api.test/")!
        let pageA = CookieContext(site: CookieSite(scheme: "https", domain: "a.test"))
        let pageB = CookieContext(site: CookieSite(scheme: "https", domain: "b.test"))
        do {
            let first = try jar(directory)
            first.store("c=a; Secure; SameSite=None; Partitioned; Max-Age=600", for: url, context: pageA)
            first.store("c=b; Secure; SameSite=None; Partitioned; Max-Age=600", for: url, context: pageB)
            first.store("c=b2; Secure; SameSite=None; Partitioned; Max-Age=600", for: url, context: pageB)  // replaces its own only
        }
        let second = try jar(directory, at: Self.start + 10)
        #expect(second.all().count == 2)
        #expect(second.header(for: url, context: pageA) == "c=a")
        #expect(second.header(for: url, context: pageB) == "c=b2")
        #expect(second.header(for: url, context: CookieContext()) == nil)
    }

    @Test func aJarWithoutPartitionsIsMigratedAndKeepsItsCookies() throws {
        let directory = TemporaryDirectory()
        do {
            // A schema 3 database, as the broker wrote it before partitions.
            let old = try SQLiteConnection(path: directory.path + "/" + BrokerDatabase.fileName)
            try old.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO meta VALUES ('schema', '3')")
            try old.execute(BrokerDatabase.cacheSchema)
            try old.execute("""
                CREATE TABLE cookies (
                    name TEXT NOT NULL, value TEXT NOT NULL, domain TEXT NOT NULL, path TEXT NOT NULL, host_only INTEGER NOT NULL,
                    expires REAL, creation REAL NOT NULL, last_access REAL NOT NULL, secure INTEGER NOT NULL,
                    http_only INTEGER NOT NULL, same_site TEXT NOT NULL,
                    PRIMARY KEY (name, domain, path, host_only));
                INSERT INTO cookies VALUES ('old', '1', 'a.test', '/', 1, \(Self.start + 600), \(Self.start), \(Self.start), 0, 1, 'lax');
                """)
        }
        let jar = try jar(directory)
        #expect(jar.header(for: CookieURL("http://a.test/")!, context: CookieContext()) == "old=1")
        jar.store("old=1; Secure; SameSite=None; Partitioned; Max-Age=600", for: CookieURL("https://a.test/")!, context: CookieContext())
        let reopened = try self.jar(directory)
        #expect(Set(reopened.all().map { $0.partition?.serialized ?? "" }) == ["", "https://a.test"])
        let version = try SQLiteConnection(path: directory.path + "/" + BrokerDatabase.fileName).prepare("SELECT value FROM meta WHERE key = 'schema'")
        #expect(try version.step() && version.string(at: 0) == String(BrokerDatabase.schemaVersion))
    }

    @Test func anUnreadableDatabaseLeavesAnEmptyWorkingJar() throws {
        let directory = TemporaryDirectory()
        try Data("this is not a database, just text long enough to be read as a header".utf8)
            .write(to: URL(fileURLWithPath: directory.path + "/" + BrokerDatabase.fileName))
        #expect(throws: (any Error).self) { try SQLiteCookieStore(directory: directory.path) }
        let memory = CookieJar(clock: FixedClock(Self.start))
        memory.store("a=1", for: CookieURL("http://a.test/")!, context: CookieContext())
        #expect(memory.all().count == 1)
    }
}
