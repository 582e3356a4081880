/// Text forms of a stored response's headers and Vary key, for stores that keep them as text.
///
/// Headers are the protocol's `[[name, value]]` JSON; the Vary key is
/// `{"names": [...], "values": [string|null, ...], "wildcard": bool}`.
public enum CacheEntryCoding {
    /// The headers as JSON text.
    public static func encode(_ headers: HeaderList) -> String {
        JSONValue.array(headers.fields.map { .array([.string($0.name), .string($0.value)]) }).jsonString
    }

    /// Headers from `encode(_:)`'s text; nil when the text is not such a list.
    public static func decodeHeaders(_ text: String) -> HeaderList? {
        guard let list = (try? JSONParser.parse(text))?.arrayValue else { return nil }
        let pairs = list.compactMap { $0.arrayValue?.compactMap(\.stringValue) }
        return pairs.count == list.count ? HeaderList(pairs: pairs) : nil
    }

    /// The Vary key as JSON text.
    public static func encode(_ key: VaryKey) -> String {
        let value: JSONValue = [
            "names": .array(key.fieldNames.map(JSONValue.string)),
            "values": .array(key.values.map { $0.map(JSONValue.string) ?? .null }),
            "wildcard": .bool(key.isWildcard),
        ]
        return value.jsonString
    }

    /// A Vary key from `encode(_:)`'s text; nil when malformed.
    public static func decodeVaryKey(_ text: String) -> VaryKey? {
        guard let object = try? JSONParser.parse(text), let names = object["names"]?.arrayValue,
              let values = object["values"]?.arrayValue, names.count == values.count
        else { return nil }
        return VaryKey(
            fieldNames: names.compactMap(\.stringValue), values: values.map(\.stringValue),
            isWildcard: object["wildcard"]?.boolValue ?? false)
    }
}
