import Synchronization

/// The resources the last `preload` of each page stored, by page URL, for `page.preloaded`.
///
/// Kept in memory for the broker's life, the most recent `capacity` pages: a host preloads a
/// page, then opens it, and the page's shim asks for them before its script runs.
public final class PreloadedPages: Sendable {
    /// The most pages remembered.
    public let capacity: Int
    /// The most resources remembered per page (what one early request may ask for).
    public static let maxResources = EarlyPosts.maxFetches

    private struct State {
        var resources: [String: [String]] = [:]
        /// Page URLs, least recently recorded first.
        var order: [String] = []
    }

    private let state = Mutex(State())

    /// An empty record of at most `capacity` pages.
    public init(capacity: Int = 256) {
        self.capacity = capacity
    }

    /// Records `resources` (normalized URLs, in preload order) as what `page` preloaded last.
    public func record(page: String, resources: [String]) {
        let kept = Array(resources.prefix(Self.maxResources))
        state.withLock { state in
            if state.resources.updateValue(kept, forKey: page) != nil { state.order.removeAll { $0 == page } }
            state.order.append(page)
            if state.order.count > capacity { state.resources[state.order.removeFirst()] = nil }
        }
    }

    /// What `page` (a normalized URL) preloaded last; empty when it never was.
    public func resources(of page: String) -> [String] {
        state.withLock { $0.resources[page] ?? [] }
    }
}
