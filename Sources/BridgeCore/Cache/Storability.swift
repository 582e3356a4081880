/// Decides whether a response may be stored by a private cache (RFC 9111 §3).
///
/// Rules, in order: only `GET` is cached (HEAD and all other methods: nothing is stored);
/// the status must be final (1xx never); 206 and 304 are never stored as full responses;
/// with `must-understand` the status must be one this cache understands, and then `no-store`
/// is overridden (§5.2.2.3); otherwise `no-store` in request or response forbids storage;
/// `Vary: *` is never stored; with `Authorization` in the request (see
/// `CachePolicyOptions.restrictAuthorizedResponses`) the response needs `public`,
/// `must-revalidate` or `s-maxage`; finally the response needs `public`, `private`, `Expires`,
/// `max-age`, `s-maxage`, or a heuristically cacheable status.
public enum Storability {
    /// Why a response is not stored.
    public enum Reason: String, Sendable, Hashable {
        /// The request method is not GET.
        case method
        /// The status is informational (1xx) or out of range.
        case statusNotFinal
        /// 206 Partial Content: never stored as a full response.
        case partialContent
        /// 304 Not Modified: only used to freshen a stored response.
        case notModified
        /// `must-understand` with a status this cache does not understand.
        case statusNotUnderstood
        /// `no-store` in the response.
        case responseNoStore
        /// `no-store` in the request.
        case requestNoStore
        /// `Vary: *`.
        case varyStar
        /// The request had `Authorization` and the response did not allow storing it.
        case authorization
        /// No explicit freshness, no `public`/`private`, status not heuristically cacheable.
        case notCacheable
    }

    /// The outcome of a storability check.
    public enum Decision: Sendable, Hashable {
        /// The response may be stored.
        case store
        /// The response must not be stored, for this reason.
        case doNotStore(Reason)

        /// Whether the decision is `.store`.
        public var isStorable: Bool { self == .store }
    }

    /// The final statuses whose semantics this cache understands (for `must-understand`).
    ///
    /// Those defined by RFC 9110, minus 206 (partial responses are not cached).
    public static let understoodStatuses: Set<Int> = Set(
        [200, 201, 202, 203, 204, 205, 300, 301, 302, 303, 305, 307, 308, 421, 422, 426,
         500, 501, 502, 503, 504, 505] + Array(400...417))

    /// Whether a response to `request` with this status and headers may be stored.
    public static func evaluate(
        request: CacheRequest, status: Int, headers: HeaderList,
        options: CachePolicyOptions = CachePolicyOptions()
    ) -> Decision {
        guard request.method == "GET" else { return .doNotStore(.method) }
        guard (200...599).contains(status) else { return .doNotStore(.statusNotFinal) }
        if status == 206 { return .doNotStore(.partialContent) }
        if status == 304 { return .doNotStore(.notModified) }
        let directives = ResponseDirectives(headers: headers)
        if directives.mustUnderstand {
            guard understoodStatuses.contains(status) else {
                return .doNotStore(.statusNotUnderstood)
            }
        } else if directives.noStore {
            return .doNotStore(.responseNoStore)
        }
        if RequestDirectives(headers: request.headers).noStore {
            return .doNotStore(.requestNoStore)
        }
        if headers.listMembers("vary").contains("*") { return .doNotStore(.varyStar) }
        if options.restrictAuthorizedResponses, request.headers.contains("authorization"),
           !(directives.isPublic || directives.mustRevalidate || directives.hasSMaxAge)
        {
            return .doNotStore(.authorization)
        }
        let explicit = directives.isPublic || directives.isPrivate || headers.contains("expires")
            || directives.maxAge != nil || directives.hasSMaxAge
        guard explicit || Freshness.heuristicallyCacheableStatuses.contains(status) else {
            return .doNotStore(.notCacheable)
        }
        return .store
    }

    /// Header fields never written to storage: hop-by-hop fields (RFC 9111 §3.1).
    ///
    /// `Set-Cookie` is stored intact (a headless client may ask for it, see
    /// `CachedExchange.withheldSetCookie`) and withheld when serving (`servedCookieFields`).
    public static let unstoredFields: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
        "upgrade", "proxy-authenticate", "proxy-authentication-info", "proxy-authorization",
    ]

    /// The cookie fields kept in storage but never replayed to a client by default.
    public static let cookieFields: Set<String> = ["set-cookie", "set-cookie2"]

    /// The response headers to store: without `unstoredFields` and fields named in `Connection`.
    public static func headersForStorage(_ headers: HeaderList) -> HeaderList {
        let named = Set(headers.listMembers("connection").map { $0.lowercased() })
        return headers.removing(unstoredFields.union(named))
    }

    /// The stored fields a client is not given: cookies always, and the fields named by
    /// qualified `no-cache`/`private` unless the response was just revalidated.
    public static func withheldFields(_ stored: HeaderList, revalidated: Bool) -> Set<String> {
        revalidated ? cookieFields : cookieFields.union(ResponseDirectives(headers: stored).restrictedFields)
    }

    /// Stored headers prepared for a client: `withheldFields` removed, `Age` set.
    public static func headersForServing(_ stored: HeaderList, age: Int, revalidated: Bool = false) -> HeaderList {
        var headers = stored.removing(withheldFields(stored, revalidated: revalidated))
        headers.set("age", String(age))
        return headers
    }
}
