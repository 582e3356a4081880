/// What the network produced for a forwarded request.
public enum NetworkOutcome: Sendable, Hashable {
    /// A final response with its status and headers (the body is the caller's).
    case response(status: Int, headers: HeaderList)
    /// No response: connection refused or reset, DNS failure, timeout, TLS error.
    case failure
}
