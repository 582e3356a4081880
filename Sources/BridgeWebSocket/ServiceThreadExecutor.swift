import BridgeCore
import Synchronization
import Foundation
import CLibWebSockets

/// Runs Swift tasks on libwebsockets' service thread, between its turns: a post that arrives on
/// that thread, the upstream exchange it makes through `ServiceThreadUpstream` and the frames it
/// sends back then never cross to another thread.
///
/// Jobs queue under a mutex; the first of a batch wakes the loop (a doorbell while it polls, the
/// pipe otherwise), which runs them in its drain. A job queued by a job runs in the same drain.
public final class ServiceThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let jobs = Mutex<[UnownedJob]>([])
    // Set once by the server that runs the jobs, before any post arrives.
    private let wakeLoop = Mutex<(@Sendable () -> Void)?>(nil)

    public init() {}

    func attach(wake: @escaping @Sendable () -> Void, isServiceThread: @escaping @Sendable () -> Bool) {
        wakeLoop.locked { $0 = wake }
        onServiceThread.locked { $0 = isServiceThread }
    }
    private let onServiceThread = Mutex<(@Sendable () -> Bool)?>(nil)
    /// pthread_self() of the service thread, 0 until it ran a job.
    private let serviceThread = Atomic<UInt>(0)
    // Service thread only: jobs it queued itself.
    private var local: [UnownedJob] = []

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let isService = serviceThread.load(ordering: .relaxed) == UInt(pthread_self())
        if isService {
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
    /// Returns whether any ran.
    @discardableResult
    func runJobs() -> Bool {
        var ran = false
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
            if due.isEmpty { return ran }
            ran = true
            let executor = asUnownedTaskExecutor()
            for job in due { job.runSynchronously(on: executor) }
        }
    }

    /// Whether jobs wait to run.
    var hasJobs: Bool { jobs.locked { !$0.isEmpty } }
}
