import Foundation
import Testing

/// `bridge-broker bench` refuses options it cannot run, before it starts anything.
@Suite struct BenchCommandTests {
    /// glibc's heap checking: since glibc 2.34 `MALLOC_CHECK_` is read only by this library, which
    /// must be preloaded (docs/RELIABILITY.md, the heap corruption); nil where it is not installed.
    static let mallocDebug: String? = {
        let path = "/lib/x86_64-linux-gnu/libc_malloc_debug.so.0"
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }()

    /// Runs the debug executable's `bench` with `arguments`; returns its exit status, stderr and stdout.
    ///
    /// With `heapChecking`, glibc checks every block at each `free` (`MALLOC_CHECK_=3` with its
    /// library preloaded) and aborts the process on a double free or a corrupted block.
    func bench(_ arguments: [String], heapChecking: Bool = false) throws -> (status: Int32, error: String, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: MonitorCommandTests.binary)
        process.arguments = ["bench"] + arguments
        if heapChecking, let library = Self.mallocDebug {
            var environment = ProcessInfo.processInfo.environment
            environment["LD_PRELOAD"] = library
            environment["MALLOC_CHECK_"] = "3"
            process.environment = environment
        }
        let (error, output) = (Pipe(), Pipe())
        process.standardError = error
        process.standardOutput = output
        try process.run()
        // The output is small: read it whole, then the errors (the logger's lines).
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        let data = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self), String(decoding: printed, as: UTF8.self))
    }

    /// A short fetch run prints its row: the bench's NIO client gets the broker's hello, which NIO's
    /// HTTP decoder dropped when it came in the same read as the `101` (most runs on a loaded machine).
    @Test func aShortFetchRunPrintsItsRow() throws {
        let (status, error, output) = try bench([
            "--only", "fetch", "--fetch-kib", "1", "--cache-mode", "no-store", "--in-flight", "1", "--rounds", "1", "--requests", "20",
        ])
        #expect(status == 0, "\(error)")
        #expect(output.contains("| 1 KiB | no-store | 1 | "), "\(output)")
    }

    /// A whole bench process under glibc's heap checking: libwebsockets clients against the bare
    /// echo and the broker, each closed and its context destroyed, the servers stopped, the
    /// process's exit. The release bench's unexplained "double free or corruption" (issue #17) was
    /// near the end of such a run; this keeps every teardown and the exit checked in `make test`.
    @Test func anEchoRunEndsCleanlyUnderHeapChecking() throws {
        let (status, error, output) = try bench(["--only", "echo", "--rounds", "1", "--messages", "200"], heapChecking: true)
        #expect(status == 0, "\(error)")
        #expect(output.contains("| 1 | "), "\(output)")
        #expect(output.contains("| 64 | "), "\(output)")
        for report in ["double free", "corruption", "free(): ", "malloc(): ", "malloc_check"] {
            #expect(!error.contains(report), "\(error)")
        }
    }

    @Test(arguments: [
        (["--cache-mode", "reload"], "unknown cache mode reload; use no-store or default"),
        (["--in-flight", "0"], "--in-flight must be between 1 and 256"),
        (["--side", "both"], "--side is direct or broker"),
        (["--only", "speed"], "unknown benchmark speed; use echo, fetch or cache"),
    ])
    func badOptionsAreRefusedWithTheReason(arguments: [String], reason: String) throws {
        let (status, error, _) = try bench(arguments)
        #expect(status == 64)  // EX_USAGE, as swift-argument-parser exits on a validation error
        #expect(error.contains(reason))
    }
}
