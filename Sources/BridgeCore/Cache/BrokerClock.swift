import Foundation

/// The broker's notion of now, in seconds since the Unix epoch: the cache policy's clock.
///
/// A port so that freshness tests can move time by hand (`Clock` alone would clash with the
/// standard library's `Clock` protocol, which measures durations, not wall time).
public protocol BrokerClock: Sendable {
    /// The current time in seconds since 1970-01-01 00:00:00 UTC.
    func now() -> Double
}

/// The system's wall clock.
public struct SystemClock: BrokerClock {
    /// Creates the system clock.
    public init() {}

    public func now() -> Double { Date().timeIntervalSince1970 }
}
