/// The limits and names a broker announces in `hello` and enforces.
public struct BrokerConfiguration: Sendable {
    /// The largest message a client may send, after reassembly; larger ones close with 1009.
    public var maxMessageBytes: Int = 16 * 1024 * 1024
    /// The most posts a connection may have in flight at once.
    public var maxInFlight: Int = 256
    /// The payload size of the binary frames the broker sends.
    public var binaryChunkBytes: Int = 256 * 1024
    /// Unread request-body bytes of one post beyond which reading from the client pauses.
    public var requestBodyHighWater: Int = 4 * 1024 * 1024
    /// The name and version announced in `hello`.
    public var brokerName: String = "bridge-broker \(BrokerConfiguration.version)"

    /// The broker's version.
    public static let version = "0.1.0"

    /// Creates the default configuration.
    public init() {}

    /// The `limits` object of `hello`.
    public var limitsJSON: JSONValue {
        [
            "maxMessageBytes": .integer(maxMessageBytes),
            "maxInFlight": .integer(maxInFlight),
            "binaryChunkBytes": .integer(binaryChunkBytes),
        ]
    }
}
