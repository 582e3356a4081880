import BridgeCore
import Synchronization
import Testing

/// Group progress when a page's requests are answered one by one (cache hits): the final event
/// is not repeated for each of them.
@Suite struct GroupProgressTests {
    /// Work a test's `GroupProgress` scheduled, run when the test says.
    final class Scheduled: Sendable {
        let list = Mutex<[(Duration, @Sendable () -> Void)]>([])
        func add(_ delay: Duration, _ work: @escaping @Sendable () -> Void) { list.withLock { $0.append((delay, work)) } }
        var count: Int { list.withLock { $0.count } }
        var firstDelay: Duration? { list.withLock { $0.first?.0 } }
        func take() -> [@Sendable () -> Void] {
            list.withLock { items in
                defer { items.removeAll() }
                return items.map(\.1)
            }
        }
    }

    let sink = RecordingSink()
    let scheduled = Scheduled()

    func groups(interval: Duration = .seconds(60)) -> GroupProgress {
        let scheduled = scheduled
        return GroupProgress(sink: sink, interval: interval) { delay, work in scheduled.add(delay, work) }
    }

    var events: [JSONValue] { sink.jsonFrames.filter { $0["name"] == "group.progress" }.compactMap { $0["body"] } }

    func runScheduled() {
        for item in scheduled.take() { item() }
    }

    func hit(_ groups: GroupProgress) {
        let token = groups.start(group: "page")
        groups.update(group: "page", token: token, loaded: 10, total: 10)
        groups.finish(group: "page", token: token)
    }

    @Test func thirtyHitsGetOneFinalEventAfterTheFirst() {
        let groups = groups()
        for _ in 0..<30 { hit(groups) }
        #expect(events.map { $0["finished"]?.intValue ?? -1 } == [0, 1])
        #expect(scheduled.count == 1)
        #expect((scheduled.firstDelay ?? .seconds(61)) <= .seconds(60))
        runScheduled()
        let last = events.last
        #expect(events.count == 3)
        #expect(last?["requests"] == 30 && last?["finished"] == 30 && last?["loaded"] == 300 && last?["progress"] == 1.0)
    }

    @Test func aRequestThatStartsBeforeTheScheduledEventTakesItsPlace() {
        let groups = groups()
        hit(groups)
        hit(groups)  // the scheduled final
        let open = groups.start(group: "page")
        runScheduled()
        #expect(events.count == 2, "no final event while a request is in flight")
        groups.finish(group: "page", token: open)
        // Finishing again inside the interval after the last final event: scheduled again.
        runScheduled()
        #expect(events.last?["finished"] == 3 && events.last?["progress"] == 1.0)
    }

    @Test func aLoneRequestStillGetsItsFinalEventAtOnce() {
        let groups = groups()
        hit(groups)
        #expect(events.last?["progress"] == 1.0 && events.last?["finished"] == 1)
        #expect(scheduled.count == 0)
    }

    @Test func afterTheIntervalTheFinalEventGoesAtOnceAgain() async throws {
        let groups = groups(interval: .milliseconds(20))
        hit(groups)
        try await Task.sleep(for: .milliseconds(40))
        hit(groups)
        #expect(events.last?["finished"] == 2 && events.last?["progress"] == 1.0)
        #expect(scheduled.count == 0)
    }
}
