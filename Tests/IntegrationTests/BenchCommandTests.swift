import Foundation
import Testing

/// `bridge-broker bench` refuses options it cannot run, before it starts anything.
@Suite struct BenchCommandTests {
    /// Runs the debug executable's `bench` with `arguments`; returns its exit status, stderr and stdout.
    func bench(_ arguments: [String]) throws -> (status: Int32, error: String, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: MonitorCommandTests.binary)
        process.arguments = ["bench"] + arguments
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
