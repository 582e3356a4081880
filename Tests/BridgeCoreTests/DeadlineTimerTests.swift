@testable import BridgeCore
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
