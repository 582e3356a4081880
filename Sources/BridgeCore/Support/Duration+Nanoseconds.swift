extension Duration {
    /// The duration in whole nanoseconds, truncated toward zero (what a timer API that counts
    /// nanoseconds takes). Traps, as the multiplication would, for durations beyond ±292 years.
    public var wholeNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
