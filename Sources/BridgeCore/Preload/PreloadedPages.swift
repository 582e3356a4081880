import Synchronization

/// Where `PreloadedPages` keeps its record across restarts: the broker's database
/// (`SQLitePreloadedPages`), so that a page opened after the broker restarted still gets what a
/// `preload` before the restart stored.
public protocol PreloadedPagesPersistence: Sendable {
    /// Every recorded page with its resources, least recently recorded first.
    func loadPreloadedPages() throws -> [(page: String, resources: [String])]
    /// Records `resources` as what `page` preloaded last, and forgets the pages of `evicted`, at once.
    func savePreloadedPage(_ page: String, resources: [String], evicting evicted: [String]) throws
    /// Forgets every page.
    func deleteAllPreloadedPages() throws
}

/// The resources the last `preload` of each page stored, by page URL, for `page.preloaded`.
///
/// The most recent `capacity` pages: a host preloads a page, then opens it, and the page's shim
/// asks for them before its script runs. Read from memory; with a persistence, every record is
/// also written there and the record is read back at start.
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
    private let persistence: (any PreloadedPagesPersistence)?
    private let report: @Sendable (String) -> Void

    /// A record of at most `capacity` pages: empty, or what `persistence` kept. A persistence that
    /// fails is reported through `report` and leaves the record in memory only, as it was.
    public init(capacity: Int = 256, persistence: (any PreloadedPagesPersistence)? = nil,
                report: @escaping @Sendable (String) -> Void = { _ in }) {
        self.capacity = max(1, capacity)
        self.persistence = persistence
        self.report = report
        guard let persistence else { return }
        do {
            let kept = try persistence.loadPreloadedPages()
            state.withLock { state in
                for (page, resources) in kept.suffix(self.capacity) where state.resources[page] == nil {
                    state.resources[page] = Array(resources.prefix(Self.maxResources))
                    state.order.append(page)
                }
            }
        } catch {
            report("the record of preloaded pages could not be read, it starts empty: \(error)")
        }
    }

    /// Records `resources` (normalized URLs, in preload order) as what `page` preloaded last.
    public func record(page: String, resources: [String]) {
        let kept = Array(resources.prefix(Self.maxResources))
        state.withLock { state in
            if state.resources.updateValue(kept, forKey: page) != nil { state.order.removeAll { $0 == page } }
            state.order.append(page)
            var evicted: [String] = []
            while state.order.count > capacity {
                let oldest = state.order.removeFirst()
                state.resources[oldest] = nil
                evicted.append(oldest)
            }
            // Under the lock: two records of the same page reach the database in their order.
            guard let persistence else { return }
            do {
                try persistence.savePreloadedPage(page, resources: kept, evicting: evicted)
            } catch {
                report("the preloaded page \(page) is recorded in memory only: \(error)")
            }
        }
    }

    /// Forgets every page (`cache.clear` of the whole cache): what the record names is gone.
    public func clear() {
        state.withLock { state in
            state = State()
            guard let persistence else { return }
            do {
                try persistence.deleteAllPreloadedPages()
            } catch {
                report("the record of preloaded pages could not be cleared in the database: \(error)")
            }
        }
    }

    /// What `page` (a normalized URL) preloaded last; empty when it never was.
    public func resources(of page: String) -> [String] {
        state.withLock { $0.resources[page] ?? [] }
    }
}
