/// Conditional requests and 304 handling for stored responses (RFC 9111 §3.2, §4.3).
///
/// Validators sent: `If-None-Match` with the stored `ETag` (strong or weak) and
/// `If-Modified-Since` with the stored `Last-Modified`. Like Chromium, `Date` is never used
/// as a substitute for a missing `Last-Modified`.
public enum Validation {
    /// Whether the stored headers carry a validator (`ETag` or `Last-Modified`).
    public static func hasValidator(_ headers: HeaderList) -> Bool {
        headers.first("etag") != nil || headers.first("last-modified") != nil
    }

    /// The conditional request headers for revalidating a stored response (may be empty).
    public static func conditionalHeaders(for entry: CachedResponse) -> HeaderList {
        var headers = HeaderList()
        if let etag = entry.headers.first("etag") { headers.add("if-none-match", etag) }
        if let modified = entry.headers.first("last-modified") {
            headers.add("if-modified-since", modified)
        }
        return headers
    }

    /// Whether a 304 answering a conditional request built from `entry` applies to it.
    ///
    /// When both carry an `ETag`, a strong 304 tag must strongly match the stored one and a weak
    /// one weakly; otherwise, when both carry `Last-Modified`, the dates must be equal.
    /// A 304 without validators applies (the conditional request identified the entry) — more
    /// lenient than the §4.3.4 "single stored response without validator" rule, as browsers.
    public static func notModifiedApplies(to entry: CachedResponse, headers: HeaderList) -> Bool {
        if let newTag = headers.first("etag").map(EntityTag.init),
           let stored = entry.headers.first("etag").map(EntityTag.init)
        {
            return newTag.isWeak ? newTag.weaklyMatches(stored) : newTag.stronglyMatches(stored)
        }
        if let newModified = headers.first("last-modified").flatMap({ HTTPDate.parse($0) }),
           let storedModified = entry.headers.first("last-modified").flatMap({ HTTPDate.parse($0) })
        {
            return newModified == storedModified
        }
        return true
    }

    /// The stored responses a 304 selects for update, per RFC 9111 §4.3.4.
    ///
    /// Strong `ETag`: every candidate with a strongly matching tag. Weak `ETag` or
    /// `Last-Modified`: the most recent matching candidate. No validator: the only candidate,
    /// if it has no validator either.
    public static func selectForUpdate(_ candidates: [CachedResponse], headers: HeaderList)
        -> [CachedResponse]
    {
        if let tag = headers.first("etag").map(EntityTag.init), !tag.isWeak {
            return candidates.filter { entry in
                entry.headers.first("etag").map { tag.stronglyMatches(EntityTag($0)) } ?? false
            }
        }
        let matching: [CachedResponse]
        if let tag = headers.first("etag").map(EntityTag.init) {
            matching = candidates.filter { entry in
                entry.headers.first("etag").map { tag.weaklyMatches(EntityTag($0)) } ?? false
            }
        } else if let modified = headers.first("last-modified").flatMap({ HTTPDate.parse($0) }) {
            matching = candidates.filter { entry in
                entry.headers.first("last-modified").flatMap { HTTPDate.parse($0) } == modified
            }
        } else {
            return candidates.count == 1 && !hasValidator(candidates[0].headers) ? candidates : []
        }
        return matching.max { $0.responseTime < $1.responseTime }.map { [$0] } ?? []
    }

    /// Fields of a 304 that never replace stored ones during freshening.
    ///
    /// `Content-Length` (RFC 9111 §3.2 MUST NOT), and fields describing the stored body that a
    /// user-agent cache keeps as received (§3.2 allows this): `Content-Type`,
    /// `Content-Encoding`, `Content-Range`; plus everything never stored. A 304's `Set-Cookie`
    /// replaces the stored one, as any other field does.
    public static let fieldsNotUpdated: Set<String> = Storability.unstoredFields.union(
        ["content-length", "content-type", "content-encoding", "content-range"])

    /// The stored response freshened by a 304 (RFC 9111 §3.2, §4.3.4).
    ///
    /// Each field present in the 304 (minus `fieldsNotUpdated` and fields its `Connection`
    /// names) replaces all stored lines of that name; the request and response times become
    /// those of the validation exchange, so freshness is recomputed from the new headers.
    public static func freshen(
        _ entry: CachedResponse, with headers: HeaderList, requestTime: Double, responseTime: Double
    ) -> CachedResponse {
        let excluded = fieldsNotUpdated.union(headers.listMembers("connection").map { $0.lowercased() })
        let updates = headers.removing(excluded)
        let replaced = Set(updates.fields.map(\.name))
        var merged = entry.headers.removing(replaced)
        merged = merged.appending(updates)
        var updated = entry
        updated.headers = merged
        updated.requestTime = requestTime
        updated.responseTime = responseTime
        return updated
    }
}
