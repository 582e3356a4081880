import BridgeCore
import NIOCore
import NIOPosix

/// Runs Swift tasks on one SwiftNIO event loop: a broker connection's posts run on the loop
/// their upstream connections live on.
///
/// A task created on libwebsockets' service thread goes to whichever event loop the global
/// executor picks next (round robin), while AsyncHTTPClient leases any idle connection, which
/// lives on a loop of its own: with one request at a time, every other fetch then crossed
/// between two loops and back (two more thread wakes on its critical path,
/// docs/BENCHMARKS.md, "Thread wakes per fetch"). With the task preferring one loop, the
/// client prefers a connection on that loop too (`EventLoopGroup.any()` is the current loop),
/// and makes its new connections there, so the request, the response and the task that
/// forwards it stay on one thread.
public final class EventLoopTaskExecutor: TaskExecutor, @unchecked Sendable {
    /// The loop the jobs run on.
    public let loop: any EventLoop

    public init(loop: any EventLoop) {
        self.loop = loop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        // The frames a job queues for a WebSocket session go out with one wake of the service
        // thread, at the job's end (`WakeBatch`).
        loop.execute { WakeBatch.run { job.runSynchronously(on: self.asUnownedTaskExecutor()) } }
    }

    /// One executor per loop of the group the upstream client uses.
    public static func forUpstreamLoops() -> [EventLoopTaskExecutor] {
        MultiThreadedEventLoopGroup.singleton.makeIterator().map { EventLoopTaskExecutor(loop: $0) }
    }
}
