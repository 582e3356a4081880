import BridgeCore
import Testing

@Suite struct HandshakePolicyTests {
    @Test func ownOriginIsAlwaysAllowedAndOthersNeedTheAllowlist() {
        let policy = HandshakePolicy(host: "127.0.0.1", port: 8787, allowedOrigins: ["https://app.example"], token: nil)
        #expect(policy.check(path: "/bridge", origin: "http://127.0.0.1:8787", query: nil, authorization: nil) == .success(.bridge))
        #expect(policy.check(path: "/bridge", origin: "http://localhost:8787", query: nil, authorization: nil) == .success(.bridge))
        #expect(policy.check(path: "/bridge", origin: "https://app.example/", query: nil, authorization: nil) == .success(.bridge))
        #expect((try? policy.check(path: "/bridge", origin: "https://evil.example", query: nil, authorization: nil).get()) == nil)
        #expect(policy.check(path: "/bridge", origin: nil, query: nil, authorization: nil) == .success(.bridge))
    }

    @Test func tokenFromQueryOrBearer() {
        let policy = HandshakePolicy(host: "127.0.0.1", port: 1, allowedOrigins: [], token: "s3cret")
        #expect(policy.check(path: "/bridge", origin: nil, query: "a=1&token=s3cret", authorization: nil) == .success(.bridge))
        #expect(policy.check(path: "/bridge", origin: nil, query: nil, authorization: "Bearer s3cret") == .success(.bridge))
        #expect((try? policy.check(path: "/bridge", origin: nil, query: "token=wrong", authorization: nil).get()) == nil)
        #expect((try? policy.check(path: "/bridge", origin: nil, query: nil, authorization: nil).get()) == nil)
    }

    /// A token that starts with a combining mark: split by Characters, the space or `=` before it
    /// and the mark were one Character, and the right token was refused (the `handshake` fuzz
    /// target's input Fuzz/corpus/handshake/crash-bearer-combining-mark).
    @Test func aTokenStartingWithACombiningMarkIsFound() {
        let token = "\u{59D}b"
        let policy = HandshakePolicy(host: "127.0.0.1", port: 1, allowedOrigins: [], token: token)
        #expect(policy.check(path: "/bridge", origin: nil, query: nil, authorization: "Bearer \(token)") == .success(.bridge))
        #expect(policy.check(path: "/bridge", origin: nil, query: "token=\(token)", authorization: nil) == .success(.bridge))
        #expect(policy.check(path: "/bridge", origin: nil, query: nil, authorization: "  bearer   \(token) ") == .success(.bridge))
        #expect((try? policy.check(path: "/bridge", origin: nil, query: nil, authorization: "Bearer").get()) == nil)
        #expect((try? policy.check(path: "/bridge", origin: nil, query: nil, authorization: "Basic \(token)").get()) == nil)
    }

    /// An Origin whose last "/" follows a prepended concatenation mark: normalised by Characters,
    /// the slash stayed (the `handshake` fuzz target's input regression-origin-prepend-slash).
    @Test func anOriginsTrailingSlashesGoEvenAfterAPrependedMark() {
        let policy = HandshakePolicy(host: "127.0.0.1", port: 1, allowedOrigins: ["http://x\u{6DD}"], token: nil)
        #expect(policy.check(path: "/bridge", origin: "http://x\u{6DD}/", query: nil, authorization: nil) == .success(.bridge))
    }

    @Test func pathsAndTheDiagnosticEcho() {
        let off = HandshakePolicy(host: "127.0.0.1", port: 1, allowedOrigins: [], token: nil)
        #expect((try? off.check(path: "/echo", origin: nil, query: nil, authorization: nil).get()) == nil)
        #expect((try? off.check(path: "/other", origin: nil, query: nil, authorization: nil).get()) == nil)
        let on = HandshakePolicy(host: "127.0.0.1", port: 1, allowedOrigins: ["*"], token: nil, diagnosticEcho: true)
        #expect(on.check(path: "/echo", origin: "https://any.example", query: nil, authorization: nil) == .success(.echo))
        #expect(on.check(path: "/", origin: nil, query: nil, authorization: nil) == .success(.echo))
        #expect((try? off.check(path: "/", origin: nil, query: nil, authorization: nil).get()) == nil)
    }
}
