import Foundation
import Testing

/// `bridge-broker bench` refuses options it cannot run, before it starts anything.
@Suite struct BenchCommandTests {
    /// Runs the debug executable's `bench` with `arguments`; returns its exit status and stderr.
    func bench(_ arguments: [String]) throws -> (status: Int32, error: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: MonitorCommandTests.binary)
        process.arguments = ["bench"] + arguments
        let error = Pipe()
        process.standardError = error
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let data = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test(arguments: [
        (["--cache-mode", "reload"], "unknown cache mode reload; use no-store or default"),
        (["--in-flight", "0"], "--in-flight must be between 1 and 256"),
        (["--side", "both"], "--side is direct or broker"),
        (["--only", "speed"], "unknown benchmark speed; use echo, fetch or cache"),
    ])
    func badOptionsAreRefusedWithTheReason(arguments: [String], reason: String) throws {
        let (status, error) = try bench(arguments)
        #expect(status == 64)  // EX_USAGE, as swift-argument-parser exits on a validation error
        #expect(error.contains(reason))
    }
}
