/// A frame a client sent, decoded.
public enum ClientMessage: Sendable, Equatable {
    /// A post to a named handler; `id` is nil for fire-and-forget.
    case post(name: String, id: Int?, body: JSONValue)
    /// Cancels the post with this id.
    case cancel(id: Int)
    /// Grants the post with this id `bytes` more of its response body (*addition*: flow control).
    case credit(id: Int, bytes: Int)
}

/// A frame that is not a valid envelope; `id` is set when the frame still names a post.
public struct EnvelopeError: Error, Sendable, Equatable {
    /// The post id the frame named, if it named one validly.
    public let id: Int?
    /// What was wrong.
    public let message: String
}

extension ClientMessage {
    /// The largest id a client may use: JavaScript's largest safe integer.
    public static let maxID = 9_007_199_254_740_991

    /// Decodes one text frame.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(EnvelopeError) -> ClientMessage {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw EnvelopeError(id: nil, message: "frame is not JSON: \(error)")
        }
        guard case .object(let object) = value else {
            throw EnvelopeError(id: nil, message: "frame is a JSON \(value.typeName), not an object")
        }
        // Decode the id first so that a post with a bad field still gets its reply.
        let id = try decodeID(object["id"])
        guard let typeValue = object["type"] else {
            throw EnvelopeError(id: id, message: "frame has no \"type\"")
        }
        guard case .string(let type) = typeValue else {
            throw EnvelopeError(id: id, message: "\"type\" must be a string, not a \(typeValue.typeName)")
        }
        switch type {
        case "post":
            guard let nameValue = object["name"] else {
                throw EnvelopeError(id: id, message: "post has no \"name\"")
            }
            guard case .string(let name) = nameValue else {
                throw EnvelopeError(id: id, message: "\"name\" must be a string, not a \(nameValue.typeName)")
            }
            return .post(name: name, id: id, body: object["body"] ?? .null)
        case "cancel":
            guard let id else { throw EnvelopeError(id: nil, message: "cancel has no \"id\"") }
            return .cancel(id: id)
        case "credit":
            guard let id else { throw EnvelopeError(id: nil, message: "credit has no \"id\"") }
            guard let bytes = object["bytes"]?.intValue, bytes >= 0, bytes <= maxID else {
                throw EnvelopeError(id: nil, message: "credit needs \"bytes\", an integer from 0 to 2^53-1")
            }
            return .credit(id: id, bytes: bytes)
        default:
            throw EnvelopeError(id: id, message: "unknown frame type \"\(type)\"")
        }
    }

    private static func decodeID(_ value: JSONValue?) throws(EnvelopeError) -> Int? {
        guard let value, !value.isNull else { return nil }
        guard let id = value.intValue, id >= 0, id <= maxID else {
            throw EnvelopeError(id: nil, message: "\"id\" must be an integer from 0 to 2^53-1, not \(value.jsonString)")
        }
        return id
    }
}
