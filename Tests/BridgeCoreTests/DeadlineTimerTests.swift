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
        // A long one first arms the timer late; the short ones after it must re-arm it earlier.
        _ = timer.schedule(after: .seconds(30)) { fired.withLock { $0.append("late") } }
        let cancelled = timer.schedule(after: .milliseconds(50)) { fired.withLock { $0.append("cancelled") } }
        _ = timer.schedule(after: .milliseconds(150)) { fired.withLock { $0.append("second") } }
        _ = timer.schedule(after: .milliseconds(80)) { fired.withLock { $0.append("first") } }
        timer.cancel(cancelled)
        let firstAt = Mutex<Duration?>(nil)
        _ = timer.schedule(after: .milliseconds(80)) { firstAt.withLock { $0 = clock.now - start } }
        while fired.withLock({ $0.count }) < 2, clock.now - start < .seconds(10) {
            try await Task.sleep(for: .milliseconds(10))
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(fired.withLock { $0 } == ["first", "second"])
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
        try await Task.sleep(for: .milliseconds(200))
        _ = timer.schedule(after: .milliseconds(20)) { count.withLock { $0 += 1 } }
        let clock = ContinuousClock()
        let start = clock.now
        while count.withLock({ $0 }) < 2, clock.now - start < .seconds(10) {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(count.withLock { $0 } == 2)
        #expect(timer.pendingCount == 0)
    }
}
