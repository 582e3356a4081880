import ArgumentParser
import Foundation
import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

/// The `bridge-broker` command: serve by default, and the client tools.
@main
struct BridgeBrokerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bridge-broker",
        abstract: "A request broker for web pages: fetch, XHR and postMessage over a WebSocket.",
        subcommands: [ServeCommand.self, FetchCommand.self, PreloadCommand.self, MonitorCommand.self, CacheCommand.self, CookiesCommand.self, BenchCommand.self, BareEchoCommand.self, OpenCommand.self],
        defaultSubcommand: ServeCommand.self
    )

    static func main() async {
        // A peer that goes away must give EPIPE, not kill the process.
        signal(SIGPIPE, SIG_IGN)
        keepFreedMemory()
        runTasksOnEventLoops()
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }

    /// Makes the process's tasks run on SwiftNIO's event loops (the threads of the upstream
    /// client, the test origin and the bench's clients) instead of Swift's cooperative pool.
    ///
    /// A fetch's task waits on AsyncHTTPClient for the response head and every body chunk; each
    /// of those waits ends on an event loop thread, and with the cooperative pool the task then
    /// continues on another thread: a thread switch each time, several per request. On the event
    /// loops the task continues on the loop that resumed it (`EventLoopGroup.any()` is sticky).
    /// `BRIDGE_BROKER_SWIFT_POOL=1` keeps Swift's pool, to compare (docs/BENCHMARKS.md).
    static func runTasksOnEventLoops() {
        guard ProcessInfo.processInfo.environment["BRIDGE_BROKER_SWIFT_POOL"] != "1" else { return }
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
    }

    /// Keeps memory the process frees for reuse instead of giving it back to the kernel at once.
    ///
    /// Response bodies pass through in chunks of 64 KiB to 1 MiB that are allocated and freed
    /// continuously. With glibc's defaults, freed chunks at the top of a thread's heap are
    /// returned to the kernel and the next allocation faults every page in again: about 150 page
    /// faults per MiB fetched, measured with `perf stat` on `bench --only fetch`. With these limits
    /// the process keeps up to 64 MiB free per heap, and page faults fall to a few per MiB
    /// (docs/BENCHMARKS.md).
    static func keepFreedMemory() {
        #if canImport(Glibc)
        // <malloc.h> is not in Swift's Glibc module: look mallopt up, with glibc's option numbers.
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
        let (trimThreshold, mmapThreshold): (Int32, Int32) = (-1, -3)  // M_TRIM_THRESHOLD, M_MMAP_THRESHOLD
        _ = mallopt(mmapThreshold, 4 * 1024 * 1024)
        _ = mallopt(trimThreshold, 64 * 1024 * 1024)
        #endif
    }
}
