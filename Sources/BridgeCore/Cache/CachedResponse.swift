/// A stored response's metadata: what the policy needs to decide freshness, reuse and updates.
///
/// The body lives in storage under `id`; the policy never touches it. `requestTime` and
/// `responseTime` are the RFC 9111 §4.2.3 `request_time` / `response_time` (seconds since the
/// Unix epoch, the caller's clock). `headers` are the stored header fields (already without
/// `Set-Cookie` and hop-by-hop fields when produced by `CachePlanner`).
public struct CachedResponse: Sendable, Hashable {
    /// Opaque storage identifier, chosen by storage; the policy only copies it.
    public var id: String
    /// The primary key (URL without fragment) this response was stored under.
    public var url: String
    /// The status code of the stored response.
    public var status: Int
    /// The stored response header fields.
    public var headers: HeaderList
    /// The secondary key: request header values selected by the response's `Vary`.
    public var varyKey: VaryKey
    /// When the request that produced (or last validated) this response was sent.
    public var requestTime: Double
    /// When that response was received.
    public var responseTime: Double
    /// The reason phrase the origin sent with the status (each byte one character, as received;
    /// "" when it sent none, as over HTTP/2), nil when not known (an entry stored before the cache
    /// kept phrases): a hit then answers the standard phrase for `status`.
    public var statusText: String?

    /// Creates stored-response metadata.
    public init(
        id: String = "", url: String, status: Int, headers: HeaderList, varyKey: VaryKey,
        requestTime: Double, responseTime: Double, statusText: String? = nil
    ) {
        self.id = id
        self.url = url
        self.status = status
        self.headers = headers
        self.varyKey = varyKey
        self.requestTime = requestTime
        self.responseTime = responseTime
        self.statusText = statusText
    }

    /// Creates stored-response metadata, computing the Vary key from the request headers sent.
    public init(
        id: String = "", url: String, status: Int, headers: HeaderList,
        requestHeaders: HeaderList, requestTime: Double, responseTime: Double, statusText: String? = nil
    ) {
        self.init(
            id: id, url: CacheKey.primary(for: url), status: status, headers: headers,
            varyKey: VaryKey(responseHeaders: headers, requestHeaders: requestHeaders),
            requestTime: requestTime, responseTime: responseTime, statusText: statusText)
    }

    /// The reason phrase a hit answers: the stored one, else the standard one for `status`.
    public var servedStatusText: String { statusText ?? HTTPReasonPhrase.phrase(for: status) }

    /// The response `Cache-Control` directives of this stored response.
    public var directives: ResponseDirectives { ResponseDirectives(headers: headers) }

    /// Whether this stored response can be selected for a request with these headers.
    public func matches(requestHeaders: HeaderList) -> Bool { varyKey.matches(requestHeaders) }

    /// Whether storing `self` should evict `other` from the same URL.
    ///
    /// True when both select the same request header values, or when the two `Vary` field
    /// sets differ (the origin changed how it negotiates, so older variants are outdated).
    /// Storage should call this on every existing variant when writing a new response.
    public func replaces(_ other: CachedResponse) -> Bool {
        guard url == other.url else { return false }
        return varyKey.fieldNames != other.varyKey.fieldNames || varyKey.values == other.varyKey.values
    }

    /// The freshness of this response at `now`.
    public func freshness(at now: Double, options: CachePolicyOptions = CachePolicyOptions())
        -> Freshness
    {
        Freshness(response: self, now: now, options: options)
    }
}
