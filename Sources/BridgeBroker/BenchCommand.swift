import ArgumentParser

/// `bridge-broker bench`: side-by-side benchmarks (see docs/BENCHMARKS.md).
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "bench", abstract: "Run the benchmarks and print figures.")
    func run() async throws {}
}
