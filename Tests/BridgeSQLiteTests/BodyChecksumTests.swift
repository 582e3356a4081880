import BridgeCore
import Foundation
import Synchronization
import Testing
@testable import BridgeSQLite

/// Body files are not fsynced: their rows keep a length and an XXH64, checked when they are read.
struct BodyChecksumTests {
    /// The reference implementation's published values (xxhsum, python-xxhash) and, for the
    /// longer inputs, values from an independent implementation (seed 0).
    @Test(arguments: [
        ("", 0xEF46_DB37_51D8_E999 as UInt64), ("a", 0xD24E_C4F1_A98C_6E5B), ("abc", 0x44BC_2CF5_AD77_0999),
        ("Nobody inspects the spammish repetition", 0xFBCE_A83C_8A37_8BF1),
    ])
    func matchesTheReferenceVectors(text: String, expected: UInt64) {
        var checksum = BodyChecksum()
        checksum.update(Array(text.utf8))
        #expect(checksum.value == expected)
    }

    @Test(arguments: [(31, 0xF9C8_15C5_99CB_B32D as UInt64), (32, 0xBA7B_AFD4_7342_62DD), (33, 0x791C_BE85_7E7F_A007),
                      (100, 0x2BDD_AAD0_EE8A_2178), (1000, 0xB128_0F64_2812_6532), (300_001, 0x3B3B_2FA3_04B4_A3DE)])
    func anyChunkingGivesTheSameValue(size: Int, expected: UInt64) {
        let bytes = pattern(size)
        for chunk in [1, 7, 32, 33, 4096, size + 1] {
            var checksum = BodyChecksum()
            var offset = 0
            while offset < bytes.count {
                let end = min(bytes.count, offset + chunk)
                checksum.update(Array(bytes[offset..<end]))
                offset = end
            }
            #expect(checksum.value == expected, "chunks of \(chunk)")
            #expect(checksum.length == size)
        }
    }

    /// Flips one byte in the middle of the only body file (same length: only the checksum sees it).
    func damageTheBodyFile(in directory: TemporaryDirectory, truncating: Bool = false) throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path + "/bodies")
        try #require(names.count == 1)
        let path = directory.path + "/bodies/" + names[0]
        var bytes = try #require(FileManager.default.contents(atPath: path))
        if truncating { bytes.removeLast(4096) } else { bytes[bytes.count / 2] ^= 0x01 }
        try bytes.write(to: URL(fileURLWithPath: path))
    }

    @Test(arguments: [false, true])
    func aDamagedBodyFileReadWholeIsAMissThatDeletesTheEntry(truncated: Bool) async throws {
        let directory = TemporaryDirectory()
        let url = "https://a.test/damaged"
        #expect(await store(SQLiteCacheStore(configuration: configuration(directory)), entry(url), pattern(400_000)))
        try damageTheBodyFile(in: directory, truncating: truncated)
        // A store opened afterwards, as after the crash that lost the file's last writes.
        let logged = Mutex<[String]>([])
        let cache = SQLiteCacheStore(configuration: configuration(directory)) { message in logged.withLock { $0.append(message) } }
        let found = try #require(await cache.entries(for: url).first)
        #expect(await cache.body(of: found) == nil)
        #expect(await cache.entries(for: url).isEmpty)
        let stats = await cache.stats()
        #expect(stats.damaged == 1 && stats.diskEntries == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/bodies").isEmpty)
        #expect(logged.withLock { $0.contains { $0.contains(url) && $0.contains("dropping the entry") } })
        // Stored again, it reads back whole.
        #expect(await store(cache, entry(url), pattern(400_000)))
        #expect(try await read(cache, url) == pattern(400_000))
    }

    @Test func aStreamedBodyFileIsCheckedAtItsEnd() async throws {
        let directory = TemporaryDirectory()
        let url = "https://a.test/streamed"
        // A memory tier of 1 MiB holds entries up to 128 KiB: this 600 KB file is streamed.
        let small = configuration(directory, memory: 1 << 20)
        #expect(await store(SQLiteCacheStore(configuration: small), entry(url), pattern(600_000)))
        #expect(try await read(SQLiteCacheStore(configuration: small), url) == pattern(600_000))
        try damageTheBodyFile(in: directory)
        let cache = SQLiteCacheStore(configuration: small)
        let found = try #require(await cache.entries(for: url).first)
        let body = try #require(await cache.body(of: found))
        await #expect(throws: DamagedBodyError.self) { while try await body.next() != nil {} }
        try await waitAWhile { await cache.entries(for: url).isEmpty }
        #expect(await cache.entries(for: url).isEmpty)
        #expect(await cache.stats().damaged == 1)

        // A truncated one is found before anything is served.
        #expect(await store(cache, entry(url), pattern(600_000)))
        try damageTheBodyFile(in: directory, truncating: true)
        let reopened = SQLiteCacheStore(configuration: small)
        #expect(await reopened.body(of: try #require(await reopened.entries(for: url).first)) == nil)
        #expect(await reopened.entries(for: url).isEmpty)
        #expect(await reopened.stats().damaged == 1)
    }

    @Test func aDatabaseWithoutTheChecksumColumnGetsIt() async throws {
        let directory = TemporaryDirectory()
        try writeOldDatabase(in: directory, without: ", checksum INTEGER")
        let cache = SQLiteCacheStore(configuration: configuration(directory))
        #expect(cache.disabledReason == nil)
        #expect(try await read(cache, "https://a.test/old") == [1, 2, 3])
        #expect(await store(cache, entry("https://a.test/new"), pattern(300_000)))
        #expect(try await read(SQLiteCacheStore(configuration: configuration(directory)), "https://a.test/new") == pattern(300_000))
    }
}
