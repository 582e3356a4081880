#if canImport(Glibc)
import Glibc
#endif

/// Unbuffered writes to standard output and error that survive a closed pipe.
///
/// `FileHandle.write` traps on EPIPE; a CLI piped into `head` must just stop instead.
enum StandardOutput {
    /// Writes bytes to standard output; exits quietly if the reader went away.
    static func write(_ bytes: [UInt8]) {
        write(bytes, to: 1)
    }

    /// Writes a line to standard output.
    static func line(_ text: String) {
        write(Array((text + "\n").utf8))
    }

    /// Writes a line to standard error.
    static func error(_ text: String) {
        write(Array((text + "\n").utf8), to: 2)
    }

    private static func write(_ bytes: [UInt8], to descriptor: Int32) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                if errno == EPIPE { exit(0) }
                return
            }
            offset += written
        }
    }
}
