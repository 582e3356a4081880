import BridgeCore
import CLibWebSockets
import Foundation
import Synchronization

/// The one thread that owns a libwebsockets context and makes every lws call on it.
///
/// Other threads hand work over through `wake()`, which queues nothing itself: owners keep their
/// own mutex-protected outboxes and drain them on `LWS_CALLBACK_EVENT_WAIT_CANCELLED`, or, while
/// the loop polls (below), in the `drain` given to `start`.
///
/// **Bounded polling before blocking** (`idlePoll`, 0 = off). Waking a thread that sleeps in
/// `poll()` costs a pipe write (`lws_cancel_service`) and, when its CPU has gone idle, the
/// scheduler's wake-up of that CPU: on a VM whose idle vCPUs halt at once (no guest halt polling)
/// an interrupt to another vCPU and a VM exit and entry, tens of microseconds
/// (docs/BENCHMARKS.md, "Polling before blocking"). With a budget, the thread, after every event,
/// keeps servicing without blocking (`lws_service(context, -1)`, a `poll()` with a zero timeout,
/// and `sched_yield()` so a thread waiting for this CPU gets it first) for that many microseconds
/// past the last event, then blocks as before. While it polls, `wake()` only rings a doorbell
/// the loop reads between turns: no pipe write, no wake-up. An idle context blocks in `poll()`
/// after at most one budget, so an idle broker burns no CPU. It polls only while the machine has
/// a CPU to spare (`SpareCPU`: no more runnable tasks than CPUs), and a turn that shows the CPU
/// is wanted (`contendedTurnNanoseconds`) stops polling for a while: on a busy machine a poll
/// takes a CPU from the threads the request waits for, and the wake-ups it would save are cheap
/// there (no CPU is idle). Polling the upstream event loops too was tried and not kept
/// (docs/BENCHMARKS.md).
///
/// The lost-wake-up protocol (a Dekker handshake, both sides sequentially consistent):
/// `wake()` rings the doorbell, then reads `polling`; it writes the pipe only when the loop is
/// not polling. The loop clears `polling`, then reads the doorbell one last time before it
/// blocks. So either the waker sees `polling` false and writes the pipe (which a later `poll()`
/// sees: the pipe is level-triggered), or the loop sees the doorbell and drains. Both may
/// happen; then the drain finds nothing the second time.
/// `IdlePollTests.noWakeIsLostAtTheEndOfAPollingSpell` fails (a reply never sent) without the
/// last read.
final class ServiceLoop: @unchecked Sendable {
    // Written once before the thread starts, then read-only.
    private(set) var context: OpaquePointer?
    private let stopRequested = Atomic<Bool>(false)
    /// Whether the thread has destroyed the context, and what waits for it: suspended tasks
    /// (`finish()`) and blocked threads (`waitUntilFinished()`) alike.
    private let ended = Mutex<(done: Bool, waiters: [@Sendable () -> Void])>((false, []))
    // pthread_self() of the service thread, 0 until it runs: read on every send, so no lock.
    private let threadID = Atomic<UInt>(0)
    /// The service thread's kernel id, 0 until it runs (`/proc/self/task/ID`: tests read its CPU time).
    let kernelThreadID = Atomic<Int32>(0)
    // Guards the context against a wake() racing its destruction.
    private let alive = Mutex(false)
    private let name: String
    /// Nanoseconds the loop keeps polling after its last event; 0 blocks at once.
    let idlePollNanoseconds: UInt64
    // True while the loop polls without blocking: a wake() then rings only the doorbell.
    private let polling = Atomic<Bool>(false)
    // Rung by wake() while the loop polls; the loop drains when it finds it rung.
    private let doorbell = Atomic<Bool>(false)
    // Service thread: an event was handled during the current turn (`noteEvent`).
    private var sawEvent = false
    private let pipeWakes = Atomic<Int>(0)
    private let doorbellWakes = Atomic<Int>(0)
    private let contendedSpells = Atomic<Int>(0)

    /// Whether polling waits for a spare CPU (`SpareCPU`); tests of the hand-over turn it off,
    /// so that the loop polls on a busy machine too.
    let pollsOnlyWithSpareCPU: Bool

    /// A loop that blocks at once when idle, or, with `idlePoll` > 0, polls that long after its
    /// last event first.
    init(name: String, idlePoll: Duration = .zero, pollsOnlyWithSpareCPU: Bool = true) {
        self.name = name
        self.pollsOnlyWithSpareCPU = pollsOnlyWithSpareCPU
        idlePollNanoseconds = UInt64(max(0, idlePoll.wholeNanoseconds))
        ServiceLoop.quietLibrary()
    }

    /// Starts servicing `context` on a new thread; `drain` runs on that thread when a wake()
    /// came while the loop polled (what `LWS_CALLBACK_EVENT_WAIT_CANCELLED` does otherwise);
    /// `onStop` runs on that thread before the context is destroyed.
    func start(context: OpaquePointer, drain: @escaping () -> Void = {}, onStop: @escaping @Sendable () -> Void = {}) {
        self.context = context
        alive.locked { $0 = true }
        nonisolated(unsafe) let context = context
        nonisolated(unsafe) let drain = drain
        let started = DispatchSemaphore(value: 0)
        let name = name
        let thread = Thread { [self] in
            // Foundation names the thread only on Darwin; on Linux it kept the name of the thread
            // that started it (an event loop's), which made traces and `perf stat --per-thread`
            // mix it up with that loop.
            bridge_name_thread(name)
            threadID.store(UInt(pthread_self()), ordering: .releasing)
            kernelThreadID.store(bridge_gettid(), ordering: .releasing)
            started.signal()
            if idlePollNanoseconds == 0 {
                while !stopRequested.load(ordering: .acquiring) {
                    if lws_service(context, 0) < 0 { break }
                }
            } else {
                runPolling(context, drain: drain)
            }
            onStop()
            alive.locked { value in
                value = false
                ServiceLoop.lifecycle.withLock { lws_context_destroy(context) }
            }
            let waiters = ended.locked { ended in
                ended.done = true
                defer { ended.waiters = [] }
                return ended.waiters
            }
            waiters.forEach { $0() }
        }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
        started.wait()
    }

    /// A turn of polling that found nothing to do but took longer than this (the thread was
    /// preempted, or its yield ran another thread that long) means the CPU is wanted by other
    /// work: polling would only delay it, and this thread, runnable but not running, would see a
    /// doorbell late. The loop then blocks and starts no polling spell for
    /// `contendedBackoffNanoseconds`.
    static let contendedTurnNanoseconds: UInt64 = 300_000
    static let contendedBackoffNanoseconds: UInt64 = 50_000_000
    /// How often a polling loop looks at the machine's runnable tasks (`SpareCPU`).
    static let loadSampleNanoseconds: UInt64 = 2_000_000

    /// The service loop with a polling budget (see the type's comment).
    private func runPolling(_ context: OpaquePointer, drain: () -> Void) {
        var pollUntil: UInt64 = 0
        var quietUntil: UInt64 = 0
        var spare = SpareCPU(enabled: pollsOnlyWithSpareCPU)
        defer { spare.finish() }
        while !stopRequested.load(ordering: .acquiring) {
            let start = bridge_monotonic_ns()
            if start < pollUntil, spare.available(at: start) {
                polling.store(true, ordering: .sequentiallyConsistent)
                sawEvent = false
                if doorbell.exchange(false, ordering: .sequentiallyConsistent) {
                    drain()
                    sawEvent = true
                }
                if lws_service(context, -1) < 0 { break }
                if sawEvent {
                    pollUntil = bridge_monotonic_ns() &+ idlePollNanoseconds
                    continue
                }
                // Another thread waiting for this CPU (the origin, a client, an event loop) runs
                // first: a poll must not delay the work it waits for.
                sched_yield()
                let end = bridge_monotonic_ns()
                if end &- start > Self.contendedTurnNanoseconds {
                    pollUntil = 0
                    quietUntil = end &+ Self.contendedBackoffNanoseconds
                    contendedSpells.add(1, ordering: .relaxed)
                }
                continue
            }
            // About to block: stop taking doorbells, then read it one last time.
            polling.store(false, ordering: .sequentiallyConsistent)
            if doorbell.exchange(false, ordering: .sequentiallyConsistent) {
                drain()
                if start >= quietUntil { pollUntil = bridge_monotonic_ns() &+ idlePollNanoseconds }
                continue
            }
            sawEvent = false
            if lws_service(context, 0) < 0 { break }
            // Woken: by traffic, a wake() or a timer of lws's. Only the first two start a polling
            // spell, and none while the CPU was found contended.
            if sawEvent {
                let now = bridge_monotonic_ns()
                if now >= quietUntil { pollUntil = now &+ idlePollNanoseconds }
            }
        }
        polling.store(false, ordering: .sequentiallyConsistent)
    }

    /// Whether the machine has a CPU to spare for polling: at most as many runnable tasks as
    /// CPUs, this thread included (`/proc/loadavg`, looked at every `loadSampleNanoseconds`).
    /// When every CPU has work (the broker's own threads under load, or other processes), a
    /// poll only takes a CPU from a thread that needs it, and the wake-ups it saves are cheap
    /// anyway: the CPUs are not idle. Where /proc/loadavg cannot be read, it always has.
    struct SpareCPU {
        private let fd: Int32
        private let cpus = Int32(ProcessInfo.processInfo.activeProcessorCount)
        private var nextSample: UInt64 = 0
        private var spare = true

        init(enabled: Bool = true) {
            fd = enabled ? open("/proc/loadavg", O_RDONLY) : -1
        }

        /// The machine's runnable tasks now, the caller included; nil where /proc/loadavg cannot be read.
        static func runnableTasks() -> Int? {
            let fd = open("/proc/loadavg", O_RDONLY)
            guard fd >= 0 else { return nil }
            defer { _ = close(fd) }
            let count = bridge_runnable_tasks(fd)
            return count < 0 ? nil : Int(count)
        }

        mutating func available(at now: UInt64) -> Bool {
            guard fd >= 0 else { return true }
            if now >= nextSample {
                let runnable = bridge_runnable_tasks(fd)
                spare = runnable < 0 || runnable <= cpus
                nextSample = now &+ ServiceLoop.loadSampleNanoseconds
            }
            return spare
        }

        func finish() { if fd >= 0 { _ = close(fd) } }
    }

    /// Service thread: the owner's callback handled traffic or a wake-up (not a timer), which
    /// starts or extends a polling spell.
    func noteEvent() { sawEvent = true }

    /// Whether the caller is the service thread.
    var isServiceThread: Bool {
        threadID.load(ordering: .acquiring) == UInt(pthread_self())
    }

    /// Makes the service thread return from its wait and drain outboxes.
    func wake() {
        if idlePollNanoseconds > 0 {
            doorbell.store(true, ordering: .sequentiallyConsistent)
            // Polling: it reads the doorbell before its next turn, or once more before it blocks.
            if polling.load(ordering: .sequentiallyConsistent) {
                doorbellWakes.add(1, ordering: .relaxed)
                return
            }
        }
        pipeWakes.add(1, ordering: .relaxed)
        alive.locked { alive in
            if alive, let context { lws_cancel_service(context) }
        }
    }

    /// The wake() calls that wrote lws's pipe, and those that only rang the doorbell of a
    /// polling loop, since start.
    var wakeCounts: (pipe: Int, doorbell: Int) {
        (pipeWakes.load(ordering: .relaxed), doorbellWakes.load(ordering: .relaxed))
    }

    /// Polling spells ended early because the CPU was wanted by other work.
    var contendedSpellCount: Int { contendedSpells.load(ordering: .relaxed) }

    /// Asks the loop to end after its current turn.
    func requestStop() {
        stopRequested.store(true, ordering: .releasing)
        // On the service thread (a callback, a drain) the loop reads the flag when the turn
        // returns: no wake is needed, and none may be made while the context is being destroyed
        // (a close callback then runs with `alive` held by this very thread).
        if isServiceThread { return }
        wake()
    }

    /// Asks the loop to end once `delay` has passed (a shutdown's grace, a close never answered);
    /// nothing if it has ended by then.
    func requestStop(after delay: Duration) {
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(max(.zero, delay).wholeNanoseconds))) { [self] in
            requestStop()
        }
    }

    var isStopping: Bool { stopRequested.load(ordering: .acquiring) }

    /// Blocks the calling thread until the thread has destroyed the context.
    func waitUntilFinished() {
        guard context != nil else { return }
        let semaphore = DispatchSemaphore(value: 0)
        whenEnded { semaphore.signal() }
        semaphore.wait()
    }

    /// Suspends until the thread has destroyed the context, holding no thread meanwhile.
    func finish() async {
        guard context != nil else { return }
        await withCheckedContinuation { continuation in whenEnded { continuation.resume() } }
    }

    /// Runs `waiter` once the thread has destroyed the context: at once if it has.
    private func whenEnded(_ waiter: @escaping @Sendable () -> Void) {
        let now = ended.locked { ended in
            if !ended.done { ended.waiters.append(waiter) }
            return ended.done
        }
        if now { waiter() }
    }

    // libwebsockets keeps process-wide state (platform and TLS library set-up) that creating and
    // destroying contexts touch; it does not say that may happen on several threads at once, and
    // a process here runs many contexts (the server, clients, the bench's bare echo).
    static let lifecycle = NSLock()

    /// Creates a context while no other context is being created or destroyed.
    static func createContext(_ info: inout lws_context_creation_info) -> OpaquePointer? {
        lifecycle.withLock { lws_create_context(&info) }
    }

    private static let quiet: Void = {
        lws_set_log_level(Int32(LLL_ERR), nil)
    }()

    static func quietLibrary() { _ = quiet }
}

/// A C string that lives as long as its owner: lws keeps pointers to names and paths.
final class CString: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<CChar>

    init(_ string: String) { pointer = strdup(string)! }
    deinit { free(pointer) }
}

extension UnsafeMutablePointer where Pointee == lws_protocols {
    /// Allocates a zero-terminated protocol table.
    static func table(_ protocols: [lws_protocols]) -> UnsafeMutablePointer<lws_protocols> {
        let table = UnsafeMutablePointer<lws_protocols>.allocate(capacity: protocols.count + 1)
        for (index, entry) in protocols.enumerated() { (table + index).initialize(to: entry) }
        (table + protocols.count).initialize(to: lws_protocols())
        return table
    }
}

/// The request's whole query string (its arguments joined by `&`), or nil when it has none.
func query(_ wsi: OpaquePointer) -> String? {
    var buffer = [CChar](repeating: 0, count: 4096)
    return bridge_lws_query(wsi, &buffer, 4096) > 0 ? String(cString: buffer) : nil
}

/// Reads one request header of `wsi`, nil when absent.
func header(_ wsi: OpaquePointer?, _ token: lws_token_indexes, limit: Int = 4096) -> String? {
    var buffer = [CChar](repeating: 0, count: limit)
    let length = bridge_lws_header(wsi, token, &buffer, Int32(limit))
    guard length >= 0 else { return nil }
    return String(cString: buffer)
}

/// The object a context was created for (its `user` pointer), seen from a callback's `wsi`.
///
/// Callbacks are C functions with no captures: the owner comes back through the context.
func contextOwner<Owner: AnyObject>(of wsi: OpaquePointer?, as type: Owner.Type) -> Owner? {
    guard let wsi, let context = lws_get_context(wsi), let raw = lws_context_user(context) else { return nil }
    return Unmanaged<Owner>.fromOpaque(raw).takeUnretainedValue()
}
