import Foundation

/// Maps HTTP paths to the files the broker serves: the shim and the examples.
struct StaticFiles: Sendable {
    let root: String

    init(root: String) {
        self.root = (root as NSString).standardizingPath
    }

    /// A file to serve: its path, type and extra headers.
    struct File {
        let path: String
        let mimeType: String
        let headers: String
    }

    /// What a request path resolves to.
    enum Resolution {
        case file(File)
        case redirect(String)
        case notFound
    }

    func resolve(_ requestPath: String) -> Resolution {
        let path = requestPath.split(separator: "?", maxSplits: 1).first.map(String.init) ?? requestPath
        if path == "/" { return .redirect("/examples/") }
        if path == "/bridge.js" || path == "/bridge.d.ts" {
            let file = root + "/bridge-js" + path
            guard isRegularFile(file) else { return .notFound }
            // Any page may load the shim, as a classic script or as a module (which needs CORS).
            return .file(File(path: file, mimeType: mimeType(file), headers: "Access-Control-Allow-Origin: *\r\nCache-Control: no-cache\r\n"))
        }
        guard path == "/examples" || path.hasPrefix("/examples/") else { return .notFound }
        guard let decoded = path.removingPercentEncoding, !decoded.contains("\0") else { return .notFound }
        let components = decoded.split(separator: "/", omittingEmptySubsequences: true)
        guard !components.contains(where: { $0 == ".." || $0.hasPrefix(".") }) else { return .notFound }
        var file = root + "/" + components.joined(separator: "/")
        if isDirectory(file) {
            guard decoded.hasSuffix("/") else { return .redirect(path + "/") }
            file += "/index.html"
        }
        guard isRegularFile(file) else { return .notFound }
        return .file(File(path: file, mimeType: mimeType(file), headers: "Cache-Control: no-cache\r\n"))
    }

    private func isDirectory(_ path: String) -> Bool {
        var directory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &directory) && directory.boolValue
    }

    private func isRegularFile(_ path: String) -> Bool {
        var directory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &directory) && !directory.boolValue
    }

    private func mimeType(_ path: String) -> String {
        switch (path as NSString).pathExtension.lowercased() {
        case "html", "htm": return "text/html; charset=utf-8"
        case "js", "mjs": return "text/javascript; charset=utf-8"
        case "ts": return "text/plain; charset=utf-8"
        case "css": return "text/css; charset=utf-8"
        case "json": return "application/json"
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
