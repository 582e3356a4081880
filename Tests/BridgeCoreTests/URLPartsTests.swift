import Foundation
import Testing

@testable import BridgeCore

/// The ASCII fast path of `URLParts` against `URLComponents`: wherever the fast path answers,
/// its answer is `URLComponents`' own (the property the `url` fuzz target also checks).
@Suite struct URLPartsTests {
    /// Checks the property for one input; true when the fast path answered.
    @discardableResult
    static func agree(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        guard let fast = URLParts.ascii(text) else { return false }
        #expect(URLParts.foundation(text) == fast, "\(text.debugDescription)", sourceLocation: sourceLocation)
        #expect(FetchRequest.referrerForm(of: text) == FetchRequest.foundationReferrerForm(of: text), "\(text.debugDescription)",
                sourceLocation: sourceLocation)
        return true
    }

    @Test func theFastPathReadsPlainURLsAsURLComponentsDoes() throws {
        let plain = [
            "http://127.0.0.1:8080/bytes/1024?mode=no-store&i=3", "HTTPS://Example.COM:443/a/b?q=1#frag", "http://a",
            "http://a?", "http://a#", "http://a/?#", "https://x.example/%41%7e?%2F=%2f",
            "http://host.example:65535/p;a=b/c@d:e/!$&'()*+,=~_-.", "http://a/b?c/d?e@f:g", "http://a.b.c./x",
            "http://localhost:1/", "http://0.0.0.0/", "http://a..b/", "http://-a-/",
        ]
        for url in plain { #expect(Self.agree(url), "the fast path does not read \(url)") }
        let parts = try #require(URLParts.ascii("HTTP://Example.COM:8080/A/b?Q=1#F"))
        #expect(parts == URLParts(scheme: "http", host: "example.com", port: 8080, hasCredentials: false, path: "/A/b", query: "Q=1"))
        #expect(try FetchRequest.normalize(url: "HTTP://Example.COM:80?Q") == "http://example.com/?Q")
        #expect(FetchRequest.ruleForm(of: "https://Example.COM/x#y") == "https://example.com:443/x")
        #expect(CookieURL("http://Example.COM./a/b?c") == CookieURL("http://example.com/a/b"))
    }

    @Test func anythingUnusualIsLeftToURLComponents() {
        let unusual = [
            "ftp://a/", "http:/a/", "http:a", "http://", "http://:80/", "http://user@a/", "http://u:p@a/", "http://[::1]/",
            "http://a:/", "http://a:0/", "http://a:080/", "http://a:65536/", "http://a:123456/", "http://a:8x/", "http://a_b/",
            "http://a%41/", "http://xn--bcher-kva.example/", "http://a.XN--p1ai/", "http://a/ b", "http://a/\u{7f}", "http://a/%",
            "http://a/%4", "http://a/%4g", "http://a/\"", "http://a/<>", "http://a/{}", "http://a/|", "http://a/\\", "http://a/^",
            "http://a/`", "http://a/#a#b", "http://a/[", " http://a/", "http://a/ ", "http://a/\t", "http://bücher.example/",
            "http://a/é", "http:// a/", "http://a b/", "https:/", "https", "",
        ]
        for url in unusual {
            #expect(URLParts.ascii(url) == nil, "the fast path reads \(url.debugDescription)")
            #expect(URLParts(url) == URLParts.foundation(url))
        }
    }

    /// Every committed fuzz input (the URL corpus and every other target's), whole, line by
    /// line, and placed in the path, query and host of a URL.
    @Test func theFuzzCorporaAgree() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fuzz/corpus")
        let files = try #require(FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)?.allObjects as? [URL])
        var inputs = 0
        var answered = 0
        for file in files where !file.hasDirectoryPath {
            guard let data = try? Data(contentsOf: file) else { continue }
            let text = String(decoding: data, as: UTF8.self)
            for line in [text] + text.split(separator: "\n").prefix(50).map(String.init) {
                for url in [line, "http://example.com/" + line, "https://example.com/p?" + line, "http://" + line] {
                    inputs += 1
                    if Self.agree(url) { answered += 1 }
                }
            }
        }
        #expect(inputs > 10000 && answered > 1000, "\(inputs) inputs, \(answered) read by the fast path")
    }

    /// URLs put together from pieces chosen to sit on the fast path's every boundary.
    @Test func generatedURLsAgree() {
        var random = SplitMix(seed: 14)
        let schemes = ["http", "https", "HTTP", "hTtPs", "ftp", "htt", "httpss", "h+p", ""]
        let separators = ["://", ":/", ":", "//", ":///"]
        let hosts = [
            "a", "example.com", "EXAMPLE.com", "127.0.0.1", "0x7f.1", "localhost", "a-b.c", "-", ".", "..", "a.", "xn--a",
            "a.xn--b", "axn--b", "u@a", "u:p@a", "[::1]", "[v1.x]", "a_b", "a%2eb", "a~b", "a!b", "",
        ]
        let ports = ["", ":", ":0", ":1", ":80", ":443", ":8080", ":65535", ":65536", ":099", ":8a", ":123456", ":+1"]
        let validBytes = Array("abcXYZ019-._~!$&'()*+,;=:@/?#".utf8)
        let otherBytes = Array("%\"<>[]\\^`{|} \t".utf8) + [0x7f, 0x01]
        let pieces = ["%41", "%7e", "%zz", "%4", "/./", "/../", "é", "//"]
        var answered = 0
        for _ in 0..<20000 {
            // Mostly what the fast path reads, with one unusual piece now and then.
            func pick(_ choices: [String], usual: Int) -> String { choices[random.below(4) == 0 ? random.below(choices.count) : random.below(usual)] }
            var url = pick(schemes, usual: 4) + pick(separators, usual: 1) + pick(hosts, usual: 6) + pick(ports, usual: 8)
            for _ in 0..<random.below(12) {
                switch random.below(20) {
                case 0: url += pieces[random.below(pieces.count)]
                case 1: url.unicodeScalars.append(Unicode.Scalar(otherBytes[random.below(otherBytes.count)]))
                default: url.unicodeScalars.append(Unicode.Scalar(validBytes[random.below(validBytes.count)]))
                }
            }
            if Self.agree(url) { answered += 1 }
        }
        #expect(answered > 1000, "\(answered) of 20000 read by the fast path")
    }
}

/// A seeded generator (SplitMix64), so a failing input can be found again.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}
