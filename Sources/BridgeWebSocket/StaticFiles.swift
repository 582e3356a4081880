import Foundation

/// Maps HTTP paths to the files the broker serves: the shim and the examples.
struct StaticFiles: Sendable {
    let root: String
    /// Seconds a browser may reuse the shim (and its map and types) without asking again; 0 makes
    /// it revalidate on every load (see `File.headers`).
    let shimMaxAge: Int
    /// Which `bridge.js.gz` files were checked against their `bridge.js`.
    private let precompressed = PrecompressedCopies()

    init(root: String, shimMaxAge: Int = 0) {
        self.root = (root as NSString).standardizingPath
        self.shimMaxAge = max(0, shimMaxAge)
    }

    /// A file to serve: its path, type, entity tag and extra headers.
    struct File {
        var path: String
        let mimeType: String
        /// A strong validator from the file's size and modification time, so a browser can
        /// revalidate with `If-None-Match` and keep its cached copy (and V8's compiled code).
        var entityTag: String
        /// Whether any origin may read it (the shim, which pages also import as a module).
        let allowsAnyOrigin: Bool
        /// Seconds the browser may reuse it without asking; 0 for `no-cache`.
        let maxAge: Int
        /// `gzip` when `path` is the precompressed copy of the file asked for.
        var contentEncoding: String? = nil
        /// Whether the response depends on `Accept-Encoding` (a file with a precompressed copy).
        var variesByEncoding = false

        /// Header lines beside the status and type, for a 200 and for a 304 alike. By default
        /// `no-cache` with an ETag: the browser asks on every load and a 304 lets it reuse what it
        /// has (and the code V8 compiled from it). With a max-age, a returning page skips that round
        /// trip for so long, at the price of running the copy it has for up to that long after
        /// the file changed.
        var headers: String {
            (allowsAnyOrigin ? "access-control-allow-origin: *\r\n" : "")
                + (maxAge > 0 ? "cache-control: max-age=\(maxAge)\r\n" : "cache-control: no-cache\r\n")
                + "etag: \(entityTag)\r\n"
                + (contentEncoding.map { "content-encoding: \($0)\r\n" } ?? "")
                + (variesByEncoding ? "vary: accept-encoding\r\n" : "")
        }

        /// Whether an `If-None-Match` request header names this file's current version.
        func isNotModified(ifNoneMatch: String?) -> Bool {
            guard let ifNoneMatch else { return false }
            return ifNoneMatch.split(separator: ",").contains { candidate in
                let tag = candidate.trimmingCharacters(in: .whitespaces)
                // Weak comparison, as RFC 9110 section 13.1.2 asks for If-None-Match.
                return tag == "*" || (tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag) == entityTag
            }
        }
    }

    /// What a request path resolves to.
    enum Resolution {
        case file(File)
        case redirect(String)
        case notFound
    }

    /// `acceptEncoding` is the request's `Accept-Encoding`: the shim goes gzipped where it allows.
    func resolve(_ requestPath: String, acceptEncoding: String? = nil) -> Resolution {
        let path = requestPath.split(separator: "?", maxSplits: 1).first.map(String.init) ?? requestPath
        if path == "/" { return .redirect("/examples/") }
        if path == "/bridge.js" {
            return shim(root + "/bridge-js/bridge.js", gzip: acceptsGzip(acceptEncoding))
        }
        if path == "/bridge.js.map" || path == "/bridge.d.ts" || path == "/bridge-snippet.js" || path == "/bridge-boot.js"
            || path == "/bridge-boot.js.map" {
            // Any page may load the shim, as a classic script or as a module (which needs CORS);
            // its source map (built with it from bridge-js/src) goes with it for DevTools, the
            // bootstrap snippet's text (an inline script: this copy is for templates and tools),
            // and the boot script a host injects at document start, with its map.
            return served(root + "/bridge-js" + path, allowsAnyOrigin: true, maxAge: shimMaxAge)
        }
        guard path == "/examples" || path.hasPrefix("/examples/") else { return .notFound }
        // On bytes, not characters: a combining mark after a NUL, a slash or a dot makes one
        // character of them, which a character test misses and the file system does not (a NUL
        // ends the path it is given).
        guard let decoded = path.removingPercentEncoding, !decoded.utf8.contains(0) else { return .notFound }
        let components = decoded.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true)
        // No `..`, and no hidden file or directory.
        guard !components.contains(where: { $0.first == UInt8(ascii: ".") }) else { return .notFound }
        var file = root + "/" + components.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "/")
        if isDirectory(file) {
            guard decoded.utf8.last == UInt8(ascii: "/") else { return .redirect(path + "/") }
            file += "/index.html"
        }
        return served(file, allowsAnyOrigin: false, maxAge: 0)
    }

    /// The shim, or its precompressed copy `bridge.js.gz` when the request accepts gzip and the copy
    /// holds the shim as it is now. Each encoding has its own ETag (the copy's is the shim's with
    /// `-gzip`), and both say `Vary: Accept-Encoding`, so a cache keeps them apart.
    private func shim(_ file: String, gzip: Bool) -> Resolution {
        guard case .file(var plain) = served(file, allowsAnyOrigin: true, maxAge: shimMaxAge) else { return .notFound }
        plain.variesByEncoding = true
        let copy = file + ".gz"
        guard gzip, let copyTag = version(copy),
              precompressed.matches(compressed: copy, original: file, key: plain.entityTag + copyTag)
        else { return .file(plain) }
        var compressed = plain
        compressed.path = copy
        compressed.entityTag = String(plain.entityTag.dropLast()) + "-gzip\""
        compressed.contentEncoding = "gzip"
        return .file(compressed)
    }

    /// The regular file at `file` with its ETag, from one look at its attributes; else 404.
    private func served(_ file: String, allowsAnyOrigin: Bool, maxAge: Int) -> Resolution {
        guard let tag = version(file) else { return .notFound }
        return .file(File(path: file, mimeType: mimeType(file), entityTag: tag, allowsAnyOrigin: allowsAnyOrigin, maxAge: maxAge))
    }

    /// A strong validator for the regular file at `file` (through symbolic links, as serving it
    /// does), from its size and modification time; nil when there is no such file.
    private func version(_ file: String) -> String? {
        let target = (file as NSString).resolvingSymlinksInPath
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: target),
              attributes[.type] as? FileAttributeType == .typeRegular
        else { return nil }
        let size = (attributes[.size] as? NSNumber)?.uint64Value ?? 0
        let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
        return "\"\(String(size, radix: 16))-\(String(UInt64(max(0, modified * 1_000_000)), radix: 16))\""
    }

    private func isDirectory(_ path: String) -> Bool {
        var directory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &directory) && directory.boolValue
    }

    private func mimeType(_ path: String) -> String {
        switch (path as NSString).pathExtension.lowercased() {
        case "html", "htm": return "text/html; charset=utf-8"
        case "js", "mjs": return "text/javascript; charset=utf-8"
        case "ts": return "text/plain; charset=utf-8"
        case "css": return "text/css; charset=utf-8"
        case "json", "map": return "application/json"
        case "svg": return "image/svg+xml"
        case "png": return "image/png"
        case "jpg", "jpeg": return "image/jpeg"
        case "gif": return "image/gif"
        case "webp": return "image/webp"
        case "ico": return "image/x-icon"
        case "txt", "md": return "text/plain; charset=utf-8"
        case "woff2": return "font/woff2"
        case "wasm": return "application/wasm"
        default: return "application/octet-stream"
        }
    }
}
