// libFuzzer targets for what the broker reads of a WebSocket upgrade and of a plain HTTP request
// (the static files and the shim): `HandshakePolicy` and `StaticFiles` with its `Accept-Encoding`
// and `If-None-Match` parsers. scripts/fuzz.sh compiles StaticFiles.swift and Precompressed.swift
// from BridgeWebSocket into the fuzz module for the second one. See docs/RELIABILITY.md.

import Foundation

extension FuzzTargets {
    // MARK: Handshake

    /// Every byte of `text`'s UTF-8 as `%XX`: a query value that decodes to exactly `text`.
    static func percentEncoded(_ text: String) -> String {
        text.utf8.map { String(format: "%%%02X", $0) }.joined()
    }

    /// Input: one byte of flags, then lines: the request target (`path?query`), the `Origin`,
    /// the `Authorization`, the broker's token, and the origins allowed by configuration.
    /// Flags: 1 an `Origin` was sent, 2 an `Authorization` was sent, 4 the broker has a token,
    /// 8 the diagnostic echo is on.
    @Sendable static func handshake(_ bytes: UnsafeRawBufferPointer) {
        guard let flags = bytes.first else { return }
        var fields = lines(UnsafeRawBufferPointer(rebasing: bytes.dropFirst()))
        while fields.count < 4 { fields.append("") }
        let target = fields[0]
        let origin = flags & 1 != 0 ? fields[1] : nil
        let authorization = flags & 2 != 0 ? fields[2] : nil
        let token = flags & 4 != 0 ? fields[3] : nil
        let allowed = Array(fields.dropFirst(4))
        let policy = HandshakePolicy(host: "127.0.0.1", port: 8787, allowedOrigins: allowed, token: token, diagnosticEcho: flags & 8 != 0)
        // Split at the first "?" by Unicode scalars, as the request line's bytes are: by Characters,
        // a "?" after a prepended mark (U+06DD) is part of the mark's Character, which `contains`
        // found and `firstIndex(of:)` did not (input regression-target-prepend-question).
        let scalars = target.unicodeScalars
        let question = scalars.firstIndex(of: "?")
        let path = question.map { String(scalars[..<$0]) } ?? target
        let query = question.map { String(scalars[scalars.index(after: $0)...]) }

        let result = policy.check(path: path, origin: origin, query: query, authorization: authorization)
        if case .success(let endpoint) = result {
            // Only the two endpoints, at their paths.
            switch endpoint {
            case .bridge: require(path == "/bridge" || path == "/bridge/", "bridge at \(path)")
            case .echo: require(policy.diagnosticEcho && (path == "/echo" || path == "/"), "echo at \(path)")
            }
            // An accepted Origin is the broker's own or an allowed one.
            if let origin {
                let normalized = HandshakePolicy.normalize(origin)
                require(policy.ownOrigins.contains(normalized) || policy.allowedOrigins.contains(normalized) || policy.allowedOrigins.contains("*"),
                        "origin \(origin) accepted")
            }
            // An accepted handshake with a token presented exactly that token.
            if let token = policy.token {
                let presented = HandshakePolicy.queryValue("token", in: query) ?? HandshakePolicy.bearer(authorization)
                require(presented.map { Array($0.utf8) } == Array(token.utf8), "token \(presented as Any) accepted for \(token)")
            }
        }
        require(HandshakePolicy.normalize(HandshakePolicy.normalize(target)) == HandshakePolicy.normalize(target), "normalize is not idempotent")
        if let origin { require(HandshakePolicy.normalize(origin).utf8.last != UInt8(ascii: "/"), "normalized origin ends with /") }

        // The comparison is byte equality.
        let other = fields[2]
        require(HandshakePolicy.constantTimeEquals(fields[3], other) == (Array(fields[3].utf8) == Array(other.utf8)), "constantTimeEquals")

        // The right token is accepted from the query, percent-encoded byte by byte, beside other
        // pairs, and from `Authorization: Bearer` when it has no surrounding blanks; any other
        // value is refused.
        if let token = policy.token {
            let own = "http://LOCALHOST:8787/"
            let encoded = "a=b&token=\(percentEncoded(token))&token=x"
            require(policy.check(path: "/bridge", origin: own, query: encoded, authorization: nil) == .success(.bridge),
                    "the token \(token) is refused in the query")
            if token.trimmingSpaces == token {
                require(policy.check(path: "/bridge", origin: nil, query: nil, authorization: "Bearer \(token)") == .success(.bridge),
                        "the token \(token) is refused as a bearer")
            }
            for wrong in [token + "x", String(token.dropLast()), ""] {
                require(policy.check(path: "/bridge", origin: nil, query: "token=\(percentEncoded(wrong))", authorization: nil) != .success(.bridge),
                        "the wrong token \(wrong) is accepted for \(token)")
            }
            require(policy.check(path: "/bridge", origin: nil, query: query?.replacingOccurrences(of: "token", with: "tokem"), authorization: nil) != .success(.bridge),
                    "no token presented, accepted")
        } else {
            // Without a token the Origin alone decides.
            require(policy.check(path: "/bridge", origin: "http://127.0.0.1:8787", query: query, authorization: authorization) == .success(.bridge),
                    "the broker's own origin is refused without a token")
        }
        // A query value is what follows its name's first `name=` pair, decoded.
        if let query, let value = HandshakePolicy.queryValue("token", in: query) {
            // By Unicode scalars, as the parser reads (a `=` and a combining mark are one Character).
            require(query.unicodeScalars.split(separator: "&").contains { String($0) == "token" || String($0).unicodeScalars.starts(with: "token=".unicodeScalars) },
                    "token found in \(query)")
            _ = value
        }
    }

    // MARK: Static files

    /// The tree the static-files target serves: the shim, examples with a subdirectory, a hidden
    /// file inside and a file outside the served paths.
    static let staticRoot: String = {
        let root = NSTemporaryDirectory() + "bridge-fuzz-static-\(getpid())"
        let manager = FileManager.default
        for directory in ["bridge-js", "examples/sub", "examples/.git"] {
            try? manager.createDirectory(atPath: root + "/" + directory, withIntermediateDirectories: true)
        }
        for file in ["bridge-js/bridge.js", "bridge-js/bridge.js.map", "bridge-js/bridge.d.ts", "examples/index.html",
                     "examples/sub/page.js", "examples/.env", "examples/.git/config", "secret.txt"] {
            manager.createFile(atPath: root + "/" + file, contents: Data(file.utf8))
        }
        // A precompressed copy that does not match: never served.
        manager.createFile(atPath: root + "/bridge-js/bridge.js.gz", contents: Data([0x1f, 0x8b, 8] + [UInt8](repeating: 0, count: 20)))
        atexit { try? FileManager.default.removeItem(atPath: FuzzTargets.staticRoot) }
        return root
    }()

    /// Input lines: the request path (as libwebsockets hands it over), `Accept-Encoding`, `If-None-Match`.
    @Sendable static func staticFiles(_ bytes: UnsafeRawBufferPointer) {
        var fields = lines(bytes)
        while fields.count < 3 { fields.append("") }
        let files = StaticFiles(root: staticRoot)
        let root = files.root
        let served = Set(["bridge-js/bridge.js", "bridge-js/bridge.js.map", "bridge-js/bridge.d.ts", "examples/index.html", "examples/sub/page.js"])
            .map { root + "/" + $0 }
        switch files.resolve(fields[0], acceptEncoding: fields[1]) {
        case .file(let file):
            // Only the files meant to be served: never a hidden file or one outside them.
            let real = (file.path as NSString).standardizingPath
            require(served.contains(real), "\(fields[0]) serves \(real)")
            require(file.contentEncoding == nil && file.path == real, "\(fields[0]) served \(file.path) encoded")
            require(file.isNotModified(ifNoneMatch: file.entityTag) && file.isNotModified(ifNoneMatch: "W/" + file.entityTag)
                    && file.isNotModified(ifNoneMatch: "\"x\", \(file.entityTag)") && file.isNotModified(ifNoneMatch: "*"),
                    "\(file.entityTag) does not match itself")
            require(!file.isNotModified(ifNoneMatch: nil), "no If-None-Match matched")
            let matched = file.isNotModified(ifNoneMatch: fields[2])
            if matched {
                require(fields[2].contains(file.entityTag) || fields[2].contains("*"), "\(fields[2]) matched \(file.entityTag)")
            }
            require(!file.headers.contains("\n\n") && file.headers.hasSuffix("\r\n"), "headers \(file.headers)")
        case .redirect(let location):
            // A Location header value: no line break, no NUL; only `/` or a directory's slash.
            require(!location.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }), "redirect to \(location.debugDescription)")
            let path = fields[0].split(separator: "?", maxSplits: 1).first.map(String.init) ?? fields[0]
            require(location == "/examples/" || location == path + "/", "\(fields[0]) redirects to \(location)")
        case .notFound:
            break
        }
        // Accept-Encoding: ASCII case does not matter.
        if fields[1].utf8.allSatisfy({ $0 < 0x80 }) {
            require(acceptsGzip(fields[1]) == acceptsGzip(fields[1].uppercased()), "Accept-Encoding \(fields[1]) depends on case")
        }
        require(!acceptsGzip(nil) && acceptsGzip("gzip") && !acceptsGzip("gzip;q=0") && acceptsGzip("*"), "acceptsGzip basics")
        if !fields[1].contains(",") && !fields[1].contains(";") && fields[1].trimmingCharacters(in: .whitespaces).lowercased() != "gzip"
            && fields[1].trimmingCharacters(in: .whitespaces).lowercased() != "x-gzip" && fields[1].trimmingCharacters(in: .whitespaces) != "*" {
            require(!acceptsGzip(fields[1]), "\(fields[1]) accepts gzip")
        }
    }
}
