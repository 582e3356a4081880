#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Wakes of another thread held back until the current job of a task is over, so the frames a
/// job produces reach the thread that sends them in one wake.
///
/// A fetch's task usually sends its `response` event, the body and the reply in one run (the
/// job between two suspensions): AsyncHTTPClient hands over the head and the body of a small
/// response from one read. Each frame queued on a WebSocket session from another thread woke
/// libwebsockets' service thread (`lws_cancel_service`) at once, which on two cores ran and
/// drained the first frame before the second was queued: three wakes per response instead of
/// one (docs/BENCHMARKS.md, "Thread wakes per fetch"). An executor that runs jobs inside
/// `run(_:)` (`EventLoopTaskExecutor`) makes the wakes asked for with `deferIfBatching` wait
/// for the end of the job; a job that waits (suspends) has ended, so nothing waits longer than
/// the work that produced it.
public enum WakeBatch {
    final class Pending {
        var active = false
        var wakes: [() -> Void] = []
    }

    nonisolated(unsafe) private static let key: pthread_key_t = {
        var key = pthread_key_t()
        // The per-thread object lives as long as its thread (event loops live as long as the process).
        pthread_key_create(&key) { pointer in
            #if canImport(Darwin)
            Unmanaged<Pending>.fromOpaque(pointer).release()
            #else
            if let pointer { Unmanaged<Pending>.fromOpaque(pointer).release() }
            #endif
        }
        return key
    }()

    private static var current: Pending {
        if let pointer = pthread_getspecific(key) { return Unmanaged<Pending>.fromOpaque(pointer).takeUnretainedValue() }
        let pending = Pending()
        pthread_setspecific(key, Unmanaged.passRetained(pending).toOpaque())
        return pending
    }

    /// Runs `job`; the wakes deferred during it run right after it, in order.
    public static func run(_ job: () -> Void) {
        let pending = current
        guard !pending.active else { return job() }
        pending.active = true
        job()
        pending.active = false
        while !pending.wakes.isEmpty {
            let wakes = pending.wakes
            pending.wakes = []
            for wake in wakes { wake() }
        }
    }

    /// Inside `run(_:)` on this thread, keeps `wake` for the end of the job and returns true;
    /// elsewhere returns false (the caller wakes now).
    public static func deferIfBatching(_ wake: @escaping () -> Void) -> Bool {
        guard let pointer = pthread_getspecific(key) else { return false }
        let pending = Unmanaged<Pending>.fromOpaque(pointer).takeUnretainedValue()
        guard pending.active else { return false }
        pending.wakes.append(wake)
        return true
    }
}
