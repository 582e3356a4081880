#if canImport(Glibc)
import Glibc
#endif

/// Formatting for the CLI's terminal displays: sizes, bars, and what the terminal is.
enum TerminalText {
    /// Whether standard output is a terminal (escape codes are only written to one).
    static var isTerminal: Bool { isatty(1) != 0 }

    /// The terminal's columns and rows, or 80 x 24 when unknown.
    static var size: (columns: Int, rows: Int) {
        var window = winsize()
        guard ioctl(1, UInt(TIOCGWINSZ), &window) == 0, window.ws_col > 0 else { return (80, 24) }
        return (Int(window.ws_col), Int(window.ws_row))
    }

    /// `1.5 KB`, `12.0 MB`: decimal units, one decimal place from KB up.
    static func bytes(_ count: Int) -> String {
        let units = ["B", "KB", "MB", "GB", "TB"]
        var value = Double(count)
        var unit = 0
        while value >= 1000, unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return unit == 0 ? "\(count) B" : "\(fixed(value, 1)) \(units[unit])"
    }

    /// `value` with `digits` decimals, without Foundation's formatters.
    static func fixed(_ value: Double, _ digits: Int) -> String {
        let scale = (0..<digits).reduce(1.0) { value, _ in value * 10 }
        let scaled = Int((value * scale).rounded())
        let whole = scaled / Int(scale)
        let fraction = abs(scaled % Int(scale))
        guard digits > 0 else { return String(whole) }
        let padded = String(fraction)
        return "\(whole).\(String(repeating: "0", count: digits - padded.count))\(padded)"
    }

    /// A bar of `width` cells filled to `fraction` (0 ... 1); an unknown fraction shows an
    /// empty bar.
    static func bar(_ fraction: Double?, width: Int) -> String {
        let filled = Int(((fraction ?? 0).clamped(to: 0...1) * Double(width)).rounded(.down))
        return "[" + String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled) + "]"
    }

    /// `text` cut to `width` characters, with `…` when cut.
    static func fit(_ text: String, _ width: Int) -> String {
        guard text.count > width, width > 1 else { return text }
        return String(text.prefix(width - 1)) + "…"
    }

    /// `text` padded with spaces, or cut, to exactly `width` characters.
    static func pad(_ text: String, _ width: Int) -> String {
        let fitted = fit(text, width)
        return fitted + String(repeating: " ", count: max(0, width - fitted.count))
    }
}

extension Double {
    func clamped(to range: ClosedRange<Double>) -> Double { Swift.min(range.upperBound, Swift.max(range.lowerBound, self)) }
}
