#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Happens-before edges that ThreadSanitizer cannot see for itself (docs/RELIABILITY.md).
///
/// `Synchronization.Mutex` locks with a futex from the standard library, which is not built with
/// ThreadSanitizer, so TSan sees neither its acquire nor its release: two accesses to a value a
/// Mutex guards, or a write before one thread's unlock and a read after another's lock (a frame
/// filled, queued under the lock, written by the service thread), look unordered to it.
/// `__tsan_release(address)` on one thread and a later `__tsan_acquire(address)` on another tell
/// it that everything the first did before is visible to the second: exactly what a lock does.
///
/// The two functions are looked up once at run time. Only a process built with
/// `-sanitize=thread` has them (its runtime exports them); anywhere else both calls are a load
/// and a test of nil.
public enum ThreadSanitizer {
    typealias Annotation = @convention(c) (UnsafeRawPointer?) -> Void

    nonisolated(unsafe) private static let acquireFunction: Annotation? = lookup("__tsan_acquire")
    nonisolated(unsafe) private static let releaseFunction: Annotation? = lookup("__tsan_release")

    private static func lookup(_ name: String) -> Annotation? {
        // RTLD_DEFAULT (a null handle in glibc): the executable and every library it loaded.
        guard let symbol = dlsym(nil, name) else { return nil }
        return unsafeBitCast(symbol, to: Annotation.self)
    }

    /// Whether the process runs under ThreadSanitizer.
    public static var isActive: Bool { acquireFunction != nil }

    /// What this thread did so far happens before whatever a later `acquire(address)` is followed by.
    @inline(__always)
    public static func release(_ address: UnsafeRawPointer) {
        if let releaseFunction { releaseFunction(address) }
    }

    /// What a thread did before its `release(address)` happens before what this thread does next.
    @inline(__always)
    public static func acquire(_ address: UnsafeRawPointer) {
        if let acquireFunction { acquireFunction(address) }
    }
}

extension Mutex where Value: ~Copyable {
    /// `withLock`, with the lock's ordering made visible to ThreadSanitizer: an acquire on the
    /// Mutex's address when `body` starts and a release when it ends. Use it instead of
    /// `withLock` for every Mutex in this project (`make test-tsan` then needs no suppression for
    /// the Mutex's own ordering); without ThreadSanitizer it is `withLock`.
    @inline(__always)
    public borrowing func locked<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        // The Mutex's own address: taking the value's (`&value`) would be an access to it that
        // TSan records before the acquire, and reports.
        let address = withUnsafePointer(to: self) { UnsafeRawPointer($0) }
        return try withLock { (value: inout sending Value) throws(E) -> sending Result in
            ThreadSanitizer.acquire(address)
            defer { ThreadSanitizer.release(address) }
            return try body(&value)
        }
    }
}
