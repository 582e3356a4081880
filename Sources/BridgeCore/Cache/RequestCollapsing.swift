import Synchronization

/// Identical requests in flight: the first leads, the others wait for it to finish.
final class RequestCollapsing: Sendable {
    private struct State {
        var waiters: [String: [Int: CheckedContinuation<Void, Never>]] = [:]
        var nextWaiter = 0
    }

    private let state = Mutex(State())

    /// Leads the request under `key`, or, when another one leads, waits until it finishes and
    /// returns nil (also when the waiting task is cancelled).
    func lead(_ key: String) async -> CollapsingLeader? {
        let leads = state.locked { state -> Bool in
            guard state.waiters[key] == nil else { return false }
            state.waiters[key] = [:]
            return true
        }
        if leads { return CollapsingLeader(collapsing: self, key: key) }
        let waiter = state.locked { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let queued = state.locked { state -> Bool in
                    // The leader may have finished (or the task been cancelled) since `leads`.
                    guard state.waiters[key] != nil, !Task.isCancelled else { return false }
                    state.waiters[key]?[waiter] = continuation
                    return true
                }
                if !queued { continuation.resume() }
            }
        } onCancel: {
            state.locked { $0.waiters[key]?.removeValue(forKey: waiter) }?.resume()
        }
        return nil
    }

    /// Ends the lead under `key`, waking every waiter.
    func finish(_ key: String) {
        let waiting = state.locked { $0.waiters.removeValue(forKey: key) } ?? [:]
        for continuation in waiting.values { continuation.resume() }
    }
}

/// The leading request's handle: finishing it (once) wakes the requests waiting for it.
final class CollapsingLeader: Sendable {
    let collapsing: RequestCollapsing
    let key: String
    private let state = Mutex((finished: false, handedOver: false))

    init(collapsing: RequestCollapsing, key: String) {
        self.collapsing = collapsing
        self.key = key
    }

    /// Marks that a streaming body will finish the lead when it ends.
    func handOver() { state.locked { $0.handedOver = true } }

    /// Finishes the lead unless a body took it over.
    func finishUnlessHandedOver() {
        if !state.locked({ $0.handedOver }) { finish() }
    }

    /// Finishes the lead; later calls do nothing.
    func finish() {
        let first = state.locked { state -> Bool in
            defer { state.finished = true }
            return !state.finished
        }
        if first { collapsing.finish(key) }
    }

    deinit { finish() }
}

/// Work that runs after the reply: at most one task per key at a time, and a way to wait for all.
final class BackgroundTasks: Sendable {
    private let state = Mutex((running: Set<String>(), tasks: [Int: Task<Void, Never>](), next: 0))

    /// Runs `work` in the background unless work under `key` is already running (nil: always).
    func start(key: String? = nil, _ work: @escaping @Sendable () async -> Void) {
        state.locked { state in
            if let key, !state.running.insert(key).inserted { return }
            state.next += 1
            let id = state.next
            state.tasks[id] = Task {
                await work()
                self.state.locked { state in
                    if let key { state.running.remove(key) }
                    state.tasks.removeValue(forKey: id)
                }
            }
        }
    }

    /// Waits until no background work is left.
    func waitForAll() async {
        while let task = state.locked({ $0.tasks.values.first }) {
            await task.value
        }
    }

    /// How many tasks are running.
    var count: Int { state.locked { $0.tasks.count } }
}

/// Commits of stored responses still in flight, by primary cache key.
///
/// A reply leaves before its response is committed; a lookup of the same URL waits for the
/// commit so that a request made after a reply sees what that reply stored.
final class PendingCommits: Sendable {
    private let state = Mutex((tasks: [String: [Int: Task<Void, Never>]](), next: 0))

    /// Runs `commit` in the background, known under `key` until it ends.
    func run(key: String, _ commit: @escaping @Sendable () async -> Void) {
        state.locked { state in
            state.next += 1
            let id = state.next
            // On the global executor, not the post's: the broker server runs posts on the
            // WebSocket service thread, where the end of a commit would wait behind the frames
            // that arrived meanwhile, and a hit asked for right after the reply would find it
            // still pending (and go the slow way instead of being answered at once).
            state.tasks[key, default: [:]][id] = Task(executorPreference: globalConcurrentExecutor) {
                await commit()
                self.state.locked { state in
                    state.tasks[key]?[id] = nil
                    if state.tasks[key]?.isEmpty == true { state.tasks[key] = nil }
                }
            }
        }
    }

    /// Whether a commit under `key` is still running.
    func isPending(_ key: String) -> Bool {
        state.locked { $0.tasks[key] != nil }
    }

    /// Waits for the commits under `key` started so far.
    func wait(for key: String) async {
        let pending = state.locked { Array(($0.tasks[key] ?? [:]).values) }
        for task in pending { await task.value }
    }

    /// Waits until no commit is left.
    func waitForAll() async {
        while let task = state.locked({ $0.tasks.values.first?.values.first }) {
            await task.value
        }
    }
}
