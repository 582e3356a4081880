/// Encodes the frames the broker sends, straight to JSON bytes.
public enum ServerMessage {
    /// The `hello` frame.
    public static func hello(broker: String, handlers: [String], limits: JSONValue) -> [UInt8] {
        var writer = JSONWriter()
        writer.appendRaw("{\"type\":\"hello\",\"protocol\":1,\"broker\":")
        writer.append(broker)
        writer.appendRaw(",\"handlers\":")
        writer.append(.array(handlers.map { .string($0) }))
        writer.appendRaw(",\"limits\":")
        writer.append(limits)
        // Additions a client may use: `credit` frames (docs/PROTOCOL.md, "Flow control").
        writer.appendRaw(",\"features\":[\"credit\"]}")
        return writer.bytes
    }

    /// A successful reply.
    public static func reply(id: Int, body: JSONValue) -> [UInt8] {
        var writer = JSONWriter(capacity: 64)
        writer.appendRaw("{\"type\":\"reply\",\"id\":")
        writer.append(id)
        writer.appendRaw(",\"ok\":true,\"body\":")
        writer.append(body)
        writer.appendRaw("}")
        return writer.bytes
    }

    /// A successful reply whose body is already compact JSON text.
    public static func reply(id: Int, encodedBody: [UInt8]) -> [UInt8] {
        var writer = JSONWriter(capacity: 48 + encodedBody.count)
        writer.appendRaw("{\"type\":\"reply\",\"id\":")
        writer.append(id)
        writer.appendRaw(",\"ok\":true,\"body\":")
        writer.appendRaw(encodedBody)
        writer.appendRaw("}")
        return writer.bytes
    }

    /// A failed reply.
    public static func reply(id: Int, error: BridgeError) -> [UInt8] {
        var writer = JSONWriter(capacity: 96)
        writer.appendRaw("{\"type\":\"reply\",\"id\":")
        writer.append(id)
        writer.appendRaw(",\"ok\":false,\"error\":")
        writer.append(error.json)
        writer.appendRaw("}")
        return writer.bytes
    }

    /// An event, tied to a post when `id` is set.
    public static func event(id: Int?, name: String, body: JSONValue) -> [UInt8] {
        var writer = JSONWriter(capacity: 96)
        writer.appendRaw("{\"type\":\"event\",")
        if let id {
            writer.appendRaw("\"id\":")
            writer.append(id)
            writer.appendRaw(",")
        }
        writer.appendRaw("\"name\":")
        writer.append(name)
        writer.appendRaw(",\"body\":")
        writer.append(body)
        writer.appendRaw("}")
        return writer.bytes
    }

    /// An event of post `id` whose body is already compact JSON text.
    public static func event(id: Int, name: StaticString, encodedBody: [UInt8]) -> [UInt8] {
        var writer = JSONWriter(capacity: 64 + encodedBody.count)
        writer.appendRaw("{\"type\":\"event\",\"id\":")
        writer.append(id)
        writer.appendRaw(",\"name\":\"")
        writer.appendRaw(name)
        writer.appendRaw("\",\"body\":")
        writer.appendRaw(encodedBody)
        writer.appendRaw("}")
        return writer.bytes
    }

    /// An `error` frame not tied to a post.
    public static func error(_ error: BridgeError, duplicateID: Int? = nil) -> [UInt8] {
        var writer = JSONWriter(capacity: 96)
        writer.appendRaw("{\"type\":\"error\",\"error\":")
        writer.append(error.json)
        if let duplicateID {
            writer.appendRaw(",\"duplicateId\":")
            writer.append(duplicateID)
        }
        writer.appendRaw("}")
        return writer.bytes
    }
}
