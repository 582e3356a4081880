import Synchronization

/// Flow control for one post's response body (docs/PROTOCOL.md, "Flow control"): the client
/// grants bytes with `credit` frames, and the body's sender waits while the grant is used up, so
/// it stops reading the upstream body and a slow reader holds a bounded amount in the broker and
/// in the page. Other posts on the connection are not held up.
public final class CreditWindow: Sendable {
    private struct State {
        var available: Int
        var waiter: CheckedContinuation<Void, Never>?
        var closed = false
    }

    private let state: Mutex<State>

    /// A window that starts with `initial` bytes of credit.
    public init(initial: Int) {
        state = Mutex(State(available: initial))
    }

    /// Grants `bytes` more.
    public func grant(_ bytes: Int) {
        let waiter: CheckedContinuation<Void, Never>? = state.locked { state in
            state.available += bytes
            guard state.available > 0 else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Stops waiting for good (the post ended or was cancelled).
    public func close() {
        let waiter: CheckedContinuation<Void, Never>? = state.locked { state in
            state.closed = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Waits until some credit is left; throws `CancellationError` when the task is cancelled.
    public func waitForRoom() async throws {
        while true {
            try Task.checkCancellation()
            if state.locked({ $0.available > 0 || $0.closed }) { return }
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let now = state.locked { state in
                        if state.available > 0 || state.closed { return true }
                        state.waiter = continuation
                        return false
                    }
                    if now { continuation.resume() }
                }
            } onCancel: {
                self.close()
            }
        }
    }

    /// Uses `bytes` of the credit (the last frame may take it below zero: by at most one frame).
    public func spend(_ bytes: Int) {
        state.locked { $0.available -= bytes }
    }
}
