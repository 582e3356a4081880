import Foundation

/// Which stored URLs a response to an unsafe request invalidates (RFC 9111 §4.4).
///
/// A non-error final status (200–399) to an unsafe method (anything but GET, HEAD, OPTIONS,
/// TRACE; unknown methods included) invalidates the target URI and the `Location` and
/// `Content-Location` URIs (resolved against the target) when they share its origin
/// (scheme, host, port — default ports filled in). Error statuses invalidate nothing.
public enum Invalidation {
    /// The primary keys to invalidate (all variants under each), deduplicated, target first.
    public static func urlsToInvalidate(
        request: CacheRequest, status: Int, responseHeaders: HeaderList
    ) -> [String] {
        guard !request.isSafe, (200...399).contains(status) else { return [] }
        var result = [CacheKey.primary(for: request.url)]
        guard let base = URL(string: request.url), let origin = Origin(base) else { return result }
        for name in ["location", "content-location"] {
            guard let reference = responseHeaders.first(name).map(ByteString.utf8Text),
                  let target = URL(string: reference, relativeTo: base)?.absoluteURL,
                  Origin(target) == origin
            else { continue }
            let key = CacheKey.primary(for: target.absoluteString)
            if !result.contains(key) { result.append(key) }
        }
        return result
    }

    /// Whether two absolute URLs have the same origin (scheme, host, port).
    public static func sameOrigin(_ first: String, _ second: String) -> Bool {
        guard let a = URL(string: first).flatMap(Origin.init),
              let b = URL(string: second).flatMap(Origin.init)
        else { return false }
        return a == b
    }
}

/// A URL origin: lowercase scheme and host and an explicit port.
struct Origin: Hashable {
    let scheme: String
    let host: String
    let port: Int

    init?(_ url: URL) {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else {
            return nil
        }
        let defaults = ["http": 80, "https": 443, "ws": 80, "wss": 443]
        guard let port = url.port ?? defaults[scheme] else { return nil }
        self.scheme = scheme
        self.host = host
        self.port = port
    }
}
