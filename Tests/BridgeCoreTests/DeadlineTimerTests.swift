@testable import BridgeCore
import Dispatch
import Synchronization
import Testing

/// The broker's one timer for the posts' deadlines (`DeadlineTimer`).
struct DeadlineTimerTests {
    @Test func deadlinesFireInTimeAndCancelledOnesNever() async throws {
        let timer = DeadlineTimer()
        let fired = Mutex<[String]>([])
        let clock = ContinuousClock()
        let start = clock.now
        // Instants from one base, not relative deadlines taken one by one: on a loaded machine
        // (make test-asan) the calls below can be tens of ms apart, which would reorder "first"
        // and "second".
        let base = DispatchTime.now()
        // A long one first arms the timer late; the short ones after it must re-arm it earlier.
        _ = timer.schedule(at: base + .seconds(30)) { fired.withLock { $0.append("late") } }
        let cancelledAt = base + .milliseconds(50)
        let cancelled = timer.schedule(at: cancelledAt) { fired.withLock { $0.append("cancelled") } }
        _ = timer.schedule(at: base + .milliseconds(150)) { fired.withLock { $0.append("second") } }
        _ = timer.schedule(at: base + .milliseconds(80)) { fired.withLock { $0.append("first") } }
        timer.cancel(cancelled)
        // A machine that stalled past its deadline before the cancel may rightly have run it:
        // only a cancel in time must keep it from running.
        let cancelledInTime = DispatchTime.now() < cancelledAt
        let firstAt = Mutex<Duration?>(nil)
        _ = timer.schedule(at: base + .milliseconds(80)) { firstAt.withLock { $0 = clock.now - start } }
        while fired.withLock({ $0.count }) < 2, clock.now - start < .seconds(10) {
            try await Task.sleep(for: .milliseconds(10))
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(fired.withLock { $0 }.filter { cancelledInTime || $0 != "cancelled" } == ["first", "second"])
        let at = try #require(firstAt.withLock { $0 })
        #expect(at >= .milliseconds(80) && at < .seconds(5))
        // The long one is still waiting, and can be cancelled.
        #expect(timer.pendingCount == 1)
    }

    /// A timer that fires late finds several deadlines due at once: they run in deadline order,
    /// then in the order they were scheduled (a make test-asan run on a loaded machine once saw
    /// "second" before "first" when they came out of the dictionary in its order).
    @Test func deadlinesDueTogetherRunInDeadlineOrder() async throws {
        let timer = DeadlineTimer()
        let fired = Mutex<[Int]>([])
        // Two groups of five deadlines, each group due at one instant, scheduled scrambled: one
        // firing finds a whole group (or both) due together.
        // The deadlines are instants from one base: relative ones, taken one by one, would drift
        // apart on a loaded machine (an ASan run once scheduled the first 1 ms before the rest,
        // so its 21 ms deadline came before their 20 ms ones).
        let order = [7, 3, 9, 0, 5, 1, 8, 2, 6, 4]
        let base = DispatchTime.now()
        for index in order {
            let at = base + .milliseconds(20 + index / 5)
            _ = timer.schedule(at: at) { fired.withLock { $0.append(index) } }
        }
        let clock = ContinuousClock()
        let start = clock.now
        while fired.withLock({ $0.count }) < order.count, clock.now - start < .seconds(10) {
            try await Task.sleep(for: .milliseconds(10))
        }
        let ran = fired.withLock { $0 }
        #expect(ran.count == order.count)
        // Deadline order: every index of the 20 ms group (0-4) before the 21 ms group's (5-9);
        // within a group, the order of scheduling.
        #expect(ran == order.filter { $0 < 5 } + order.filter { $0 >= 5 })
    }

    @Test func aDeadlineAfterTheTimerFiredEmptyStillFires() async throws {
        let timer = DeadlineTimer()
        let count = Mutex(0)
        _ = timer.schedule(after: .milliseconds(20)) { count.withLock { $0 += 1 } }
        // Until the first one ran and the timer found nothing left (not a fixed sleep, which a
        // loaded machine can outlast), then a second deadline.
        let clock = ContinuousClock()
        var start = clock.now
        while count.withLock({ $0 }) < 1 || timer.pendingCount > 0, clock.now - start < .seconds(10) {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(count.withLock { $0 } == 1)
        _ = timer.schedule(after: .milliseconds(20)) { count.withLock { $0 += 1 } }
        start = clock.now
        while count.withLock({ $0 }) < 2, clock.now - start < .seconds(10) {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(count.withLock { $0 } == 2)
        #expect(timer.pendingCount == 0)
    }
}
