/// Standard reason phrases, for responses the cache makes up (ranges, 416) and for stored entries
/// that predate stored phrases.
enum HTTPReasonPhrase {
    static let phrases: [Int: String] = [
        200: "OK", 201: "Created", 202: "Accepted", 203: "Non-Authoritative Information", 204: "No Content",
        300: "Multiple Choices", 301: "Moved Permanently", 302: "Found", 303: "See Other", 304: "Not Modified",
        307: "Temporary Redirect", 308: "Permanent Redirect", 400: "Bad Request", 401: "Unauthorized",
        403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 410: "Gone", 414: "URI Too Long",
        500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable",
        504: "Gateway Timeout",
    ]

    /// The phrase for `status`, or "" for one without a standard phrase here.
    static func phrase(for status: Int) -> String { phrases[status] ?? "" }
}
