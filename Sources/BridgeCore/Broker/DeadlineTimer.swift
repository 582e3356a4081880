import Dispatch
import Synchronization

/// The posts' deadlines (`HandlerCall.withDeadline`), on one dispatch timer per broker.
///
/// A dispatch timer armed per post (`asyncAfter`) wakes libdispatch's manager thread at once,
/// on every post, to take the new timer in: a thread switch per fetch on the request's critical
/// path (docs/BENCHMARKS.md, "Thread wakes per fetch"). Here the one timer is re-armed only when
/// a deadline comes earlier than the time it is armed for; posts with the same timeout come in
/// deadline order, so after the first one none re-arms it. When the timer fires it runs what is
/// due and arms itself for the earliest deadline left, if any. A deadline that is cancelled
/// (its work ended in time) is forgotten; the timer may still fire at its time, once, and find
/// nothing to do.
final class DeadlineTimer: @unchecked Sendable {
    private let source: any DispatchSourceTimer
    private let state = Mutex(State())

    struct State {
        var due: [UInt64: (at: DispatchTime, action: @Sendable () -> Void)] = [:]
        var nextToken: UInt64 = 0
        /// When the source fires next; nil when it is not armed.
        var armedFor: DispatchTime?
    }

    /// How late a deadline may run: the timer's leeway.
    static let leeway = DispatchTimeInterval.milliseconds(1)

    init() {
        source = DispatchSource.makeTimerSource(queue: .global())
        source.setEventHandler { [weak self] in self?.fire() }
        source.activate()
    }

    deinit { source.cancel() }

    /// Runs `action` once `duration` has passed, unless `cancel` is called with the returned
    /// token first.
    func schedule(after duration: Duration, _ action: @escaping @Sendable () -> Void) -> UInt64 {
        let nanoseconds = max(0, duration.wholeNanoseconds)
        return schedule(at: DispatchTime.now() + .nanoseconds(Int(min(nanoseconds, Int64(Int.max)))), action)
    }

    /// Runs `action` once `at` has come, unless `cancel` is called with the returned token first.
    func schedule(at: DispatchTime, _ action: @escaping @Sendable () -> Void) -> UInt64 {
        state.locked { state in
            state.nextToken += 1
            state.due[state.nextToken] = (at, action)
            if state.armedFor.map({ at < $0 }) ?? true { arm(for: at, state: &state) }
            return state.nextToken
        }
    }

    /// Forgets the deadline of `token`: its action will not run (if it has not begun).
    func cancel(_ token: UInt64) {
        state.locked { _ = $0.due.removeValue(forKey: token) }
    }

    /// The number of deadlines waiting, for tests.
    var pendingCount: Int { state.locked { $0.due.count } }

    private func arm(for at: DispatchTime, state: inout State) {
        state.armedFor = at
        source.schedule(deadline: at, repeating: .never, leeway: Self.leeway)
    }

    private func fire() {
        let actions: [@Sendable () -> Void] = state.locked { state in
            let now = DispatchTime.now()
            var due: [(at: DispatchTime, token: UInt64, action: @Sendable () -> Void)] = []
            var earliest: DispatchTime?
            for (token, entry) in state.due {
                if entry.at <= now {
                    due.append((entry.at, token, entry.action))
                    state.due[token] = nil
                } else if earliest.map({ entry.at < $0 }) ?? true {
                    earliest = entry.at
                }
            }
            if let earliest { arm(for: earliest, state: &state) } else { state.armedFor = nil }
            // A timer that fired late (a busy machine) finds several deadlines due: they run in
            // the order of their deadlines (then of their scheduling), not the dictionary's.
            due.sort { ($0.at, $0.token) < ($1.at, $1.token) }
            return due.map(\.action)
        }
        for action in actions { action() }
    }
}
