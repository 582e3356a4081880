extension CachedResponse {
    /// Whether this is a stored partial response (a 206 holding one span of a representation).
    public var isPartial: Bool { status == 206 }

    /// The span a partial response holds and the representation's length; nil for whole ones.
    public var contentRange: ContentRange? { isPartial ? ContentRange(headers: headers) : nil }

    /// Whether byte ranges can be served from the stored body: the stored bytes are the
    /// representation's own, with no content coding. (A coded body is stored decoded, so its
    /// byte positions are not the representation's.)
    public var isRangeServable: Bool {
        headers.listMembers("content-encoding").allSatisfy { $0.lowercased() == "identity" }
    }

    /// The strong validator that `If-Range` may carry (RFC 9110 §13.1.5): a strong `ETag`, or,
    /// without any `ETag`, a `Last-Modified` at least 60 seconds before `Date` (§8.8.2.2).
    public var ifRangeValidator: String? {
        Validation.strongValidator(headers)
    }
}

extension Validation {
    /// The strong validator of a response's headers, as `If-Range` would carry it; nil when it
    /// has only weak ones.
    public static func strongValidator(_ headers: HeaderList) -> String? {
        if let etag = headers.first("etag") {
            return EntityTag(etag).isWeak ? nil : etag
        }
        guard let modifiedText = headers.first("last-modified"), let modified = HTTPDate.parse(modifiedText),
              let date = headers.first("date").flatMap({ HTTPDate.parse($0) }), date - modified >= 60
        else { return nil }
        return modifiedText
    }

    /// Whether two responses are the same representation by a strong comparison of their
    /// validators (RFC 9111 §3.4): both strong, and equal.
    public static func sameRepresentation(_ stored: HeaderList, _ received: HeaderList) -> Bool {
        guard let a = strongValidator(stored), let b = strongValidator(received) else { return false }
        if stored.first("etag") != nil || received.first("etag") != nil {
            guard let tagA = stored.first("etag"), let tagB = received.first("etag") else { return false }
            return EntityTag(tagA).stronglyMatches(EntityTag(tagB))
        }
        return HTTPDate.parse(a) == HTTPDate.parse(b)
    }
}
