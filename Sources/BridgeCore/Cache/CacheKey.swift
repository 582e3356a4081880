/// Derives cache keys from URLs.
public enum CacheKey {
    /// The primary cache key for a URL: the URL without its fragment.
    ///
    /// Storage should key entries by this string (for GET only) and keep several Vary variants
    /// under it. The fragment starts at the first `#` byte, as a URL parser sees it: a search of
    /// the UTF-8 bytes, not of `Character`s, which would also cost every cache lookup a grapheme
    /// walk of the whole URL (4% of the broker's CPU answering a preloaded page's 30 hits).
    public static func primary(for url: String) -> String {
        guard let hash = url.utf8.firstIndex(of: UInt8(ascii: "#")) else { return url }
        return String(url[..<hash])
    }
}
