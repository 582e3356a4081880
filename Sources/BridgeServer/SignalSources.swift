import BridgeCore
import Dispatch
import Synchronization

/// Keeps signal sources alive for the life of the process.
enum SignalSources {
    nonisolated(unsafe) private static var kept: [DispatchSourceSignal] = []
    private static let lock = Mutex(())

    static func keep(_ sources: [DispatchSourceSignal]) {
        lock.locked { _ in kept += sources }
    }
}

/// A flag that can be claimed once.
final class OnceFlag: Sendable {
    private let claimed = Atomic<Bool>(false)

    func claim() -> Bool {
        claimed.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
    }
}
