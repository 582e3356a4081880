import BridgeCore
import Foundation
import Synchronization

/// Runs Swift tasks on libwebsockets' service thread: a post that arrives on that thread, the
/// upstream exchange it makes through `ServiceThreadUpstream` and the frames it sends back then
/// never cross to another thread.
///
/// A job queued on the service thread itself (a task a received frame started, one a response's
/// bytes resumed) waits in a list of that thread's own and runs when the lws callback that queued
/// it returns (`WebSocketServer.handle` and the upstream callback end with `runJobs()`): no lock,
/// no wake. A job queued by another thread (a cache read finished on its queue, a timer) goes
/// under a mutex, and the first of a batch wakes the loop (a doorbell while it polls, the pipe
/// otherwise), whose drain runs it. Jobs queued by jobs run in the same `runJobs()`.
public final class ServiceThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let jobs = Mutex<[UnownedJob]>([])
    // Set once by the server that runs the jobs, before any post arrives.
    private let wakeLoop = Mutex<(@Sendable () -> Void)?>(nil)
    /// pthread_self() of the service thread, 0 until its first `runJobs()`.
    private let serviceThread = Atomic<UInt>(0)
    // Service thread only: the jobs it queued itself.
    private var local: [UnownedJob] = []

    public init() {}

    func attach(wake: @escaping @Sendable () -> Void) {
        wakeLoop.locked { $0 = wake }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if serviceThread.load(ordering: .relaxed) == UInt(pthread_self()) {
            local.append(job)
            return
        }
        let first = jobs.locked { jobs -> Bool in
            jobs.append(job)
            return jobs.count == 1
        }
        if first { wakeLoop.locked { $0 }?() }
    }

    /// Service thread: runs the queued jobs, and those they queue, until none is left.
    func runJobs() {
        if serviceThread.load(ordering: .relaxed) == 0 { serviceThread.store(UInt(pthread_self()), ordering: .relaxed) }
        while true {
            var due = jobs.locked { jobs -> [UnownedJob] in
                defer { jobs = [] }
                return jobs
            }
            if !local.isEmpty {
                due += local
                local.removeAll(keepingCapacity: true)
            }
            if due.isEmpty { return }
            let executor = asUnownedTaskExecutor()
            for job in due { job.runSynchronously(on: executor) }
        }
    }
}
