import BridgeCore
import CNIOExtrasZlib

/// Decodes a `gzip` or `deflate` response body as it arrives, with the zlib that SwiftNIO's
/// HTTP decompression (and so AsyncHTTPClient) uses, set up the same way: the zlib or gzip
/// wrapper detected from the first bytes (window bits 15 + 32), no size limit. Used by the
/// service thread's upstream client (`ServiceThreadUpstream`), whose bodies must read as
/// AsyncHTTPClient's do.
public final class ZlibBodyDecoder: BodyDecoder {
    private let stream: UnsafeMutablePointer<cnioextras_z_stream>
    private var initialized = false
    private var complete = false

    /// A decoder for `coding` ("gzip", "x-gzip", "deflate"), nil for any other.
    public static func make(_ coding: String) -> (any BodyDecoder)? {
        guard ["gzip", "x-gzip", "deflate"].contains(coding) else { return nil }
        return try? ZlibBodyDecoder()
    }

    init() throws {
        stream = .allocate(capacity: 1)
        stream.initialize(to: cnioextras_z_stream())
        let rc = CNIOExtrasZlib_inflateInit2(stream, 15 + 32)
        guard rc == CNIOEXTRAS_Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            throw BridgeError(.internal, "zlib could not start (\(rc))")
        }
        initialized = true
    }

    deinit {
        if initialized { cnioextras_z_inflateEnd(stream) }
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    public func decode(_ bytes: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard !complete, let base = bytes.baseAddress, !bytes.isEmpty else { return [] }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: max(16 * 1024, bytes.count * 4))
        stream.pointee.next_in = CNIOExtrasZlib_voidPtr_to_BytefPtr(UnsafeMutableRawPointer(mutating: base))
        stream.pointee.avail_in = UInt32(bytes.count)
        defer {
            stream.pointee.next_in = nil
            stream.pointee.avail_in = 0
            stream.pointee.next_out = nil
            stream.pointee.avail_out = 0
        }
        while true {
            var rc: Int32 = CNIOEXTRAS_Z_OK
            let written = chunk.withUnsafeMutableBytes { out -> Int in
                stream.pointee.next_out = CNIOExtrasZlib_voidPtr_to_BytefPtr(out.baseAddress!)
                stream.pointee.avail_out = UInt32(out.count)
                rc = cnioextras_z_inflate(stream, CNIOEXTRAS_Z_NO_FLUSH)
                return out.count - Int(stream.pointee.avail_out)
            }
            if rc == CNIOEXTRAS_Z_BUF_ERROR, written == 0 { break }  // Needs more input.
            guard rc == CNIOEXTRAS_Z_OK || rc == CNIOEXTRAS_Z_STREAM_END else {
                throw BridgeError(.network, "the body's content coding is corrupt (zlib \(rc))")
            }
            output.append(contentsOf: chunk[..<written])
            if rc == CNIOEXTRAS_Z_STREAM_END {
                complete = true
                break
            }
            if stream.pointee.avail_in == 0, stream.pointee.avail_out > 0 { break }
        }
        return output
    }

    /// Bytes after the end of a truncated stream are not an error, as in SwiftNIO's decompressor.
    public func finish() throws -> [UInt8] { [] }
}
