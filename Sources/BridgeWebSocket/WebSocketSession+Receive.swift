import CLibWebSockets

extension WebSocketSession {
    /// Reassembles fragments into whole messages and hands each to `deliver` (bytes, binary).
    ///
    /// Returns false when the message would pass `maxBytes`: the caller closes with 1009.
    func receiveFragment(
        _ wsi: OpaquePointer?, _ input: UnsafeMutableRawPointer?, _ length: Int, maxBytes: Int,
        deliver: (UnsafeRawBufferPointer, Bool) -> Void
    ) -> Bool {
        let final = lws_is_final_fragment(wsi) != 0
        let bytes = UnsafeRawBufferPointer(start: input, count: input == nil ? 0 : length)
        if receiving.isEmpty, !receivingBinaryPending {
            receivingBinary = lws_frame_is_binary(wsi) != 0
        }
        if receiving.isEmpty, final, !receivingBinaryPending {
            guard bytes.count <= maxBytes else { return false }
            deliver(bytes, receivingBinary)
            return true
        }
        guard receiving.count + bytes.count <= maxBytes else {
            receiving = []
            return false
        }
        receivingBinaryPending = !final
        receiving.append(contentsOf: bytes)
        if final {
            let message = receiving
            receiving = []
            message.withUnsafeBytes { deliver($0, receivingBinary) }
        }
        return true
    }
}
