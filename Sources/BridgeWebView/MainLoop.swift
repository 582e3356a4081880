import BridgeCore
import CWebKitGTK
import Foundation
import Synchronization

/// The one place where Swift concurrency meets the GLib main loop.
///
/// WebKitGTK and GTK are single-threaded: every call into them happens on the thread that runs
/// the GLib main loop (the process's main thread). The broker's handlers run in Swift tasks on the
/// cooperative pool and answer through a `ConnectionSink` from any thread. They never call WebKit:
/// they hand a closure to `MainLoop.perform`, which queues it under a mutex and, when the queue
/// was empty, schedules one idle source on the default main context (`g_idle_add` is the one
/// GLib call that is safe from any thread); the idle callback runs everything queued, in order,
/// on the main thread. "The main thread" is the thread `MainLoop.run` starts for GTK. In the other direction, WebKit's signal handlers run on the main thread
/// and hand work to the broker by calling its thread-safe `BrokerConnection` methods, which start
/// tasks of their own. Nothing else crosses: the main loop never waits on a task, and no task
/// waits on the main loop except through `MainLoop.run(_:)`, which suspends (never blocks).
public enum MainLoop {
    private static let queue = Mutex<[@Sendable () -> Void]>([])

    /// Runs `work` on the main thread, after the work queued before it. Callable from any thread.
    public static func perform(_ work: @escaping @Sendable () -> Void) {
        let first = queue.locked { queue in
            queue.append(work)
            return queue.count == 1
        }
        if first { g_idle_add_full(G_PRIORITY_DEFAULT, { _ in MainLoop.drain() }, nil, nil) }
    }

    /// Runs `body` on the main thread and returns its value to the calling task.
    public static func run<Value: Sendable>(_ body: @escaping @Sendable () -> Value) async -> Value {
        await withCheckedContinuation { continuation in
            perform { continuation.resume(returning: body()) }
        }
    }

    private static func drain() -> gboolean {
        let work = queue.locked { queue in
            defer { queue.removeAll(keepingCapacity: true) }
            return queue
        }
        for item in work { item() }
        return 0  // G_SOURCE_REMOVE: the next `perform` on an empty queue adds a new source.
    }

    /// Whether the caller is on the main thread: the thread that initialised GTK and runs the
    /// main loop, where every WebKit call must be made.
    public static var isMainThread: Bool {
        guard let owner = owner.locked({ $0 }) else { return false }
        return pthread_equal(owner, pthread_self()) != 0
    }

    /// Stops with a clear message when WebKit is about to be called off the main thread.
    static func assertMain(_ function: StaticString = #function) {
        precondition(isMainThread, "\(function) calls WebKit and must run on the main loop's thread")
    }

    /// Starts GTK and the GLib main loop on a thread of their own, runs `setup` there first, and
    /// returns when `quit()` ended the loop; false at once when no display can be opened.
    ///
    /// A thread of its own because Swift's async `main` gives up the process's first thread on
    /// Linux (the main actor's jobs run on a pool thread), and GTK needs one thread for its whole
    /// life; that thread is "the main thread" for everything in this module.
    public static func runApplication(_ setup: @escaping @Sendable () -> Void) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let thread = Thread {
                owner.locked { $0 = pthread_self() }
                guard gtk_init_check() != 0 else {
                    owner.locked { $0 = nil }
                    return continuation.resume(returning: false)
                }
                setup()
                let loop = g_main_loop_new(nil, 0)
                current.locked { $0 = UnsafeSendable(loop) }
                g_main_loop_run(loop)
                current.locked { $0 = nil }
                g_main_loop_unref(loop)
                continuation.resume(returning: true)
            }
            thread.name = "glib-main-loop"
            thread.stackSize = 8 << 20
            thread.start()
        }
    }

    /// Makes `runApplication` return once the work queued before has run. Callable from any thread.
    public static func quit() {
        perform {
            if let loop = current.locked({ $0?.value }) { g_main_loop_quit(loop) }
        }
    }

    private static let owner = Mutex<pthread_t?>(nil)
    private static let current = Mutex<UnsafeSendable<OpaquePointer?>?>(nil)
}

/// A value that is only touched on the main thread, carried through Sendable storage.
struct UnsafeSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
