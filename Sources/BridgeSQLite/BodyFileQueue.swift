import BridgeCore
import Dispatch
import Synchronization

/// The serial queue on which a store writes its body files, off the path that delivers the
/// bodies to clients.
///
/// A body chunk being stored is handed over as it is (a retained frame or array, no copy) and
/// written on this queue while the delivery goes on, so at one request in flight the page-cache
/// copy inside `write(2)` runs beside the next chunk's network read and socket write instead of
/// between them. Memory is bounded: at most `limit` bytes wait to be written, store-wide (plus
/// the one chunk that found the queue empty); a producer that would go over it waits for the disk
/// (`admit`), as it did when it wrote the chunk itself. Work runs in the order it was queued, so
/// an entry's commit, queued after its last chunk, sees every chunk written.
final class BodyFileQueue: Sendable {
    private struct State {
        var queued = 0
        var waiters: [(bytes: Int, resume: CheckedContinuation<Void, Never>)] = []
    }

    /// The most bytes waiting to be written before producers wait.
    let limit: Int
    private let queue = DispatchQueue(label: "bridge.cache.body-files")
    private let state = Mutex(State())

    init(limit: Int) {
        self.limit = limit
    }

    /// Waits until `bytes` more fit under the limit (always at once when nothing is queued), then
    /// runs `work` on the queue; the bytes count against the limit until it returns.
    func write(_ bytes: Int, _ work: @escaping @Sendable () -> Void) async {
        if !state.locked({ admit(bytes, &$0) }) {
            await withCheckedContinuation { continuation in
                let now = state.locked { state -> Bool in
                    guard admit(bytes, &state) else {
                        state.waiters.append((bytes, continuation))
                        return false
                    }
                    return true
                }
                if now { continuation.resume() }
            }
        }
        queue.async {
            work()
            self.release(bytes)
        }
    }

    /// Runs `work` on the queue after everything queued before it, and waits for it.
    func run<Result: Sendable>(_ work: @escaping @Sendable () -> Result) async -> Result {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: work()) }
        }
    }

    /// Runs `work` on the queue after everything queued before it, without waiting.
    func enqueue(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }

    /// Bytes waiting to be written now (for tests).
    var queuedBytes: Int { state.locked { $0.queued } }

    /// Whether `bytes` more may be queued now: under the limit, or alone.
    private func fits(_ bytes: Int, _ state: State) -> Bool {
        state.queued == 0 || state.queued + bytes <= limit
    }

    /// Counts `bytes` as queued when they fit and no producer waits before them.
    private func admit(_ bytes: Int, _ state: inout State) -> Bool {
        guard state.waiters.isEmpty, fits(bytes, state) else { return false }
        state.queued += bytes
        return true
    }

    /// Frees `bytes` of the limit and admits the waiting producers that now fit, in order.
    private func release(_ bytes: Int) {
        let admitted = state.locked { state -> [CheckedContinuation<Void, Never>] in
            state.queued -= bytes
            var admitted: [CheckedContinuation<Void, Never>] = []
            while let first = state.waiters.first, fits(first.bytes, state) {
                state.queued += first.bytes
                admitted.append(first.resume)
                state.waiters.removeFirst()
            }
            return admitted
        }
        admitted.forEach { $0.resume() }
    }
}
