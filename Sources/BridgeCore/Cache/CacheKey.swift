/// Derives cache keys from URLs.
public enum CacheKey {
    /// The primary cache key for a URL: the URL without its fragment.
    ///
    /// Storage should key entries by this string (for GET only) and keep several Vary variants
    /// under it.
    public static func primary(for url: String) -> String {
        guard let hash = url.firstIndex(of: "#") else { return url }
        return String(url[..<hash])
    }
}
