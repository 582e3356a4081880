import ArgumentParser
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
