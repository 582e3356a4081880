import BridgeCore
import CLibWebSockets
import Foundation
import Synchronization

/// The one thread that owns a libwebsockets context and makes every lws call on it.
///
/// Other threads hand work over through `wake()`, which queues nothing itself: owners keep their
/// own mutex-protected outboxes and drain them on `LWS_CALLBACK_EVENT_WAIT_CANCELLED`.
final class ServiceLoop: @unchecked Sendable {
    // Written once before the thread starts, then read-only.
    private(set) var context: OpaquePointer?
    private let stopRequested = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    // pthread_self() of the service thread, 0 until it runs: read on every send, so no lock.
    private let threadID = Atomic<UInt>(0)
    // Guards the context against a wake() racing its destruction.
    private let alive = Mutex(false)
    private let name: String

    init(name: String) {
        self.name = name
        ServiceLoop.quietLibrary()
    }

    /// Starts servicing `context` on a new thread; `onStop` runs on that thread before the
    /// context is destroyed.
    func start(context: OpaquePointer, onStop: @escaping @Sendable () -> Void = {}) {
        self.context = context
        alive.locked { $0 = true }
        nonisolated(unsafe) let context = context
        let started = DispatchSemaphore(value: 0)
        let name = name
        let thread = Thread { [self] in
            // Foundation names the thread only on Darwin; on Linux it kept the name of the thread
            // that started it (an event loop's), which made traces and `perf stat --per-thread`
            // mix it up with that loop.
            bridge_name_thread(name)
            threadID.store(UInt(pthread_self()), ordering: .releasing)
            started.signal()
            while !stopRequested.load(ordering: .acquiring) {
                if lws_service(context, 0) < 0 { break }
            }
            onStop()
            alive.locked { value in
                value = false
                ServiceLoop.lifecycle.withLock { lws_context_destroy(context) }
            }
            finished.signal()
        }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
        started.wait()
    }

    /// Whether the caller is the service thread.
    var isServiceThread: Bool {
        threadID.load(ordering: .acquiring) == UInt(pthread_self())
    }

    /// Makes the service thread return from its wait and drain outboxes.
    func wake() {
        alive.locked { alive in
            if alive, let context { lws_cancel_service(context) }
        }
    }

    /// Asks the loop to end after its current turn.
    func requestStop() {
        stopRequested.store(true, ordering: .releasing)
        wake()
    }

    var isStopping: Bool { stopRequested.load(ordering: .acquiring) }

    /// Waits until the thread has destroyed the context.
    func waitUntilFinished() {
        guard context != nil else { return }
        finished.wait()
        finished.signal()
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
