/// The cache write a response decision asks storage to perform.
public enum CacheWrite: Sendable, Hashable {
    /// Write nothing.
    case none
    /// Store this new entry with the network body; evict every variant it `replaces`.
    case store(CachedResponse)
    /// Replace the metadata of the entry with this `id` (body unchanged): a 304 freshening.
    case update(CachedResponse)
    /// Delete this entry (superseded by a response that may not be stored).
    case remove(CachedResponse)
}
