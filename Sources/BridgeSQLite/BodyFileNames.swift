import Synchronization

/// Names of body files: a random 64-bit prefix per process (stores of several processes may share
/// the `bodies/` directory) and a counter. A name taken anyway fails the file's `O_EXCL` open,
/// which drops that one entry.
final class BodyFileNames: Sendable {
    /// The names of this process's stores (cheap: no UUID, which Foundation makes from three
    /// system calls on `/dev/urandom` on Linux).
    static let shared = BodyFileNames()

    private let prefix = String(UInt64.random(in: 0...UInt64.max), radix: 16)
    private let counter = Mutex(0)

    func next() -> String {
        let number = counter.locked { counter in
            counter += 1
            return counter
        }
        return prefix + "-" + String(number, radix: 16)
    }
}
