import Foundation

/// The Fetch standard's cache mode of a request (https://fetch.spec.whatwg.org/#concept-request-cache-mode).
///
/// What each mode does in `CachePlanner` (reads / network / writes):
/// - `default`: use a fresh stored response; validate a stale one (or serve it within
///   `stale-while-revalidate`, revalidating in the background); store the network response.
///   A request carrying its own precondition headers is treated as `no-store`.
/// - `noStore`: never read, never write; adds `Pragma: no-cache` and `Cache-Control: no-cache`.
/// - `reload`: never read, but write; adds the same two headers.
/// - `noCache`: always validate a stored response (conditional request), write the result;
///   adds `Cache-Control: max-age=0` (fresh `immutable` responses are exempt — see `CachePlanner`).
/// - `forceCache`: use any stored response, stale or not, without validation; else fetch and write.
/// - `onlyIfCached`: like `forceCache` but never the network: no stored response → `notCached`.
/// - `freshOnly` (`fresh-only`, the broker's own, not the Fetch standard's): what `default`
///   would serve without the network and nothing else: a fresh stored response, never a stale
///   one (not within `stale-while-revalidate` either); anything that would need the network →
///   `notCached`. For a client that has another way to ask later (the shim's early posts).
public enum CacheMode: String, Sendable, Hashable, CaseIterable {
    case `default`, noStore = "no-store", reload, noCache = "no-cache", forceCache = "force-cache", onlyIfCached = "only-if-cached"
    case freshOnly = "fresh-only"

    /// Parses a Fetch mode name or one of Apple's `URLRequest.CachePolicy` names.
    ///
    /// Returns the mode and whether `Cache-Control: no-cache` must also be sent upstream
    /// (`reloadIgnoringLocalAndRemoteCacheData`).
    public static func parse(_ name: String) -> (mode: CacheMode, noCacheUpstream: Bool)? {
        if let mode = CacheMode(rawValue: name) { return (mode, false) }
        switch name {
        case "useProtocolCachePolicy": return (.default, false)
        case "reloadIgnoringLocalCacheData": return (.reload, false)
        case "reloadIgnoringLocalAndRemoteCacheData": return (.reload, true)
        case "returnCacheDataElseLoad": return (.forceCache, false)
        case "returnCacheDataDontLoad": return (.onlyIfCached, false)
        case "reloadRevalidatingCacheData": return (.noCache, false)
        default: return nil
        }
    }
}

/// How a fetch reply carries the response body.
public enum ResponseBodyMode: String, Sendable {
    case text, base64, binary, none
}

/// How response header values and the reason phrase are written in the reply and the `response`
/// event: `utf8` decodes their bytes as UTF-8 (the default, as the broker always did); `latin1`
/// gives one character per byte, as a browser's `Headers` and `statusText` do (*addition*).
public enum HeaderEncoding: String, Sendable {
    case utf8, latin1
}

/// What a fetch does with a redirect.
public enum RedirectMode: String, Sendable {
    case follow, manual, error
}

/// A `fetch` post's body, validated.
public struct FetchRequest: Sendable {
    /// The normalised absolute URL.
    public var url: String
    /// The method, normalised.
    public var method: String
    /// The request headers, sanitised.
    public var headers: HeaderList
    /// The request body.
    public var body: Body
    /// The cache mode.
    public var cache: CacheMode
    /// The redirect mode.
    public var redirect: RedirectMode
    /// The time for the whole exchange.
    public var timeout: Duration
    /// How the reply carries the body; nil chooses by content type.
    public var responseBody: ResponseBodyMode?
    /// Whether to send progress events.
    public var progress: Bool
    /// The page load this request belongs to.
    public var group: String?
    /// How header values and the reason phrase are written back.
    public var headerEncoding: HeaderEncoding = .utf8
    /// The credentials mode; nil takes the default (`include` for headless clients,
    /// `same-origin`, fetch's default, for pages).
    public var credentials: CredentialsMode?
    /// The request mode, for `Origin` and `SameSite`.
    public var mode: RequestMode
    /// The referrer the request names.
    public var referrer: RequestReferrer
    /// The referrer policy.
    public var referrerPolicy: ReferrerPolicy
    /// The page's `document.cookie` when the request was made (pages only).
    public var documentCookie: String?
    /// Keep `Set-Cookie` in the response headers (headless clients only).
    public var exposeSetCookie: Bool
    /// The flow-control window for a binary response body, in bytes; nil sends it as fast as it comes.
    public var window: Int?
    /// The largest body the client takes in one whole-response frame (head and body in one binary
    /// frame instead of the `response` event, body frames and reply); nil: never (*addition*).
    public var whole: Int?
    /// With `whole`: the whole-response frame may come joined with others in one batch frame
    /// (*addition*, docs/PROTOCOL.md "Batches of whole responses").
    public var batch = false

    /// A request body as the client gave it.
    public enum Body: Sendable, Equatable {
        case none
        case bytes([UInt8])
        case stream(length: Int?)
    }

    /// The default timeout in milliseconds.
    public static let defaultTimeoutMilliseconds = 60_000

    /// Validates a `fetch` body; throws `bad_request` with the first problem found. From a
    /// page (`page`), the Fetch standard's forbidden request headers are dropped.
    public init(json: JSONValue, page: Bool = false) throws(BridgeError) {
        guard case .object(let object) = json else {
            throw BridgeError(.badRequest, "fetch body must be an object, not \(json.typeName)")
        }
        guard let urlValue = object["url"] else { throw BridgeError(.badRequest, "fetch needs a \"url\"") }
        guard let rawURL = urlValue.stringValue else { throw BridgeError(.badRequest, "\"url\" must be a string") }
        url = try FetchRequest.normalize(url: rawURL)

        let rawMethod = try FetchRequest.string(object, "method") ?? "GET"
        guard HeaderRules.isToken(rawMethod) else { throw BridgeError(.badRequest, "method \"\(rawMethod)\" is not a valid token") }
        let upper = rawMethod.uppercased()
        method = ["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"].contains(upper) ? upper : rawMethod
        if HeaderRules.forbiddenMethods.contains(upper) { throw BridgeError(.badRequest, "method \(upper) is forbidden") }

        headers = try HeaderRules.sanitize(try FetchRequest.headers(object["headers"]), page: page)
        body = try FetchRequest.body(object["body"])
        if body != .none, method == "GET" || method == "HEAD" {
            throw BridgeError(.badRequest, "a \(method) request cannot have a body")
        }

        let cacheName = try FetchRequest.string(object, "cache") ?? "default"
        guard let (mode, noCacheUpstream) = CacheMode.parse(cacheName) else {
            throw BridgeError(.badRequest, "unknown cache mode \"\(cacheName)\"")
        }
        cache = mode
        if noCacheUpstream, !headers.contains("cache-control") { headers.add("Cache-Control", "no-cache") }

        let redirectName = try FetchRequest.string(object, "redirect") ?? "follow"
        guard let redirectMode = RedirectMode(rawValue: redirectName) else {
            throw BridgeError(.badRequest, "unknown redirect mode \"\(redirectName)\"")
        }
        redirect = redirectMode

        let milliseconds = try FetchRequest.integer(object, "timeout") ?? FetchRequest.defaultTimeoutMilliseconds
        guard (1...86_400_000).contains(milliseconds) else {
            throw BridgeError(.badRequest, "\"timeout\" must be 1 to 86400000 milliseconds")
        }
        timeout = .milliseconds(milliseconds)

        if let name = try FetchRequest.string(object, "responseBody") {
            guard let mode = ResponseBodyMode(rawValue: name) else {
                throw BridgeError(.badRequest, "unknown responseBody \"\(name)\"; use text, base64, binary or none")
            }
            responseBody = mode
        }
        progress = try FetchRequest.bool(object, "progress") ?? true
        group = try FetchRequest.string(object, "group")
        if let name = try FetchRequest.string(object, "headerEncoding") {
            guard let encoding = HeaderEncoding(rawValue: name) else {
                throw BridgeError(.badRequest, "unknown headerEncoding \"\(name)\"; use utf8 or latin1")
            }
            headerEncoding = encoding
        }

        if let name = try FetchRequest.string(object, "credentials") {
            guard let mode = CredentialsMode(rawValue: name) else {
                throw BridgeError(.badRequest, "unknown credentials \"\(name)\"; use omit, same-origin or include")
            }
            credentials = mode
        }
        let modeName = try FetchRequest.string(object, "mode") ?? "cors"
        guard let requestMode = RequestMode(rawValue: modeName) else {
            throw BridgeError(.badRequest, "unknown mode \"\(modeName)\"; use cors, same-origin, no-cors or navigate")
        }
        self.mode = requestMode
        switch try FetchRequest.string(object, "referrer") {
        case nil, "about:client"?: referrer = .client
        case ""?: referrer = .none
        case let text?:
            guard let stripped = FetchRequest.referrerForm(of: text) else {
                throw BridgeError(.badRequest, "\"referrer\" must be an absolute http(s) URL or \"\"")
            }
            referrer = .url(stripped)
        }
        let policyName = try FetchRequest.string(object, "referrerPolicy") ?? ""
        guard let policy = policyName.isEmpty ? .strictOriginWhenCrossOrigin : ReferrerPolicy(rawValue: policyName) else {
            throw BridgeError(.badRequest, "unknown referrerPolicy \"\(policyName)\"")
        }
        referrerPolicy = policy
        documentCookie = try FetchRequest.string(object, "documentCookie")
        let expose = try FetchRequest.bool(object, "exposeSetCookie") ?? false
        exposeSetCookie = !page && expose
        if let bytes = try FetchRequest.integer(object, "window") {
            guard (1...(1 << 40)).contains(bytes) else { throw BridgeError(.badRequest, "\"window\" must be 1 to 2^40 bytes") }
            window = bytes
        }
        if let bytes = try FetchRequest.integer(object, "whole") {
            guard (0...(1 << 40)).contains(bytes) else { throw BridgeError(.badRequest, "\"whole\" must be 0 to 2^40 bytes") }
            whole = bytes
        }
        batch = try FetchRequest.bool(object, "batch") ?? false
    }

    /// `headers` (values as byte strings, `ByteString`) as this request asks them written.
    func written(_ headers: HeaderList) -> HeaderList {
        headerEncoding == .latin1 ? headers : ByteString.utf8Text(headers)
    }

    /// A reason phrase (a byte string) as this request asks it written.
    func written(statusText: String) -> String {
        headerEncoding == .latin1 ? statusText : ByteString.utf8Text(statusText)
    }

    /// A URL stripped for use as a referrer (Referrer Policy §8.4): no fragment, no credentials;
    /// nil when it is not an absolute http(s) URL.
    public static func referrerForm(of text: String) -> String? {
        // A URL the ASCII path reads has no credentials, and its fragment is what normalising drops.
        if URLParts.ascii(text) != nil { return try? normalize(url: text) }
        return foundationReferrerForm(of: text)
    }

    /// `referrerForm(of:)` through `URLComponents`, for any URL (`URLPartsTests` compares).
    static func foundationReferrerForm(of text: String) -> String? {
        guard var components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", components.host?.isEmpty == false
        else { return nil }
        components.fragment = nil
        components.user = nil
        components.password = nil
        guard let string = components.string else { return nil }
        return try? normalize(url: string)
    }

    /// Normalises an absolute http(s) URL as a browser serialises it: lower-case scheme and host,
    /// no default port, no fragment, `/` for an empty path.
    public static func normalize(url text: String) throws(BridgeError) -> String {
        try normalized.value(for: text) { text throws(BridgeError) in
            let (scheme, host, port, rest) = try parts(of: text)
            let defaultPort = scheme == "https" ? 443 : 80
            let url = "\(scheme)://\(host)\(port == defaultPort ? "" : ":\(port)")\(rest)"
            // The normalised URL has the same parts: its rule form, which every hop asks for, is
            // remembered now instead of parsed again.
            ruleForms.remember("\(scheme)://\(host):\(port)\(rest)", for: url)
            return url
        }
    }

    /// The form the URL rules match: `scheme://host:port/path?query`, the port always written.
    public static func ruleForm(of url: String) -> String {
        (try? ruleForms.value(for: url) { url throws(BridgeError) in
            let (scheme, host, port, rest) = try parts(of: url)
            return "\(scheme)://\(host):\(port)\(rest)"
        }) ?? url
    }

    private static let normalized = URLMemo()
    private static let ruleForms = URLMemo()

    private static func parts(of text: String) throws(BridgeError) -> (scheme: String, host: String, port: Int, rest: String) {
        guard let components = URLParts(text), let scheme = components.scheme else {
            throw BridgeError(.badRequest, "\"\(text)\" is not an absolute URL")
        }
        guard scheme == "http" || scheme == "https" else {
            throw BridgeError(.badRequest, "\"\(text)\" is not an http or https URL")
        }
        guard let host = components.host, !host.isEmpty else {
            throw BridgeError(.badRequest, "\"\(text)\" has no host")
        }
        guard !components.hasCredentials else {
            throw BridgeError(.badRequest, "\"\(text)\" has credentials in it; send an Authorization header instead")
        }
        let port = components.port ?? (scheme == "https" ? 443 : 80)
        guard (1...65535).contains(port) else { throw BridgeError(.badRequest, "\"\(text)\" has an invalid port") }
        let hostPart = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        let path = components.path.isEmpty ? "/" : components.path
        let query = components.query.map { "?\($0)" } ?? ""
        return (scheme, hostPart, port, path + query)
    }

    static func string(_ object: JSONObject, _ key: String) throws(BridgeError) -> String? {
        guard let value = object[key], !value.isNull else { return nil }
        guard let string = value.stringValue else { throw BridgeError(.badRequest, "\"\(key)\" must be a string, not \(value.typeName)") }
        return string
    }

    static func bool(_ object: JSONObject, _ key: String) throws(BridgeError) -> Bool? {
        guard let value = object[key], !value.isNull else { return nil }
        guard let flag = value.boolValue else { throw BridgeError(.badRequest, "\"\(key)\" must be a boolean") }
        return flag
    }

    static func integer(_ object: JSONObject, _ key: String) throws(BridgeError) -> Int? {
        guard let value = object[key], !value.isNull else { return nil }
        guard let integer = value.intValue else { throw BridgeError(.badRequest, "\"\(key)\" must be an integer, not \(value.jsonString)") }
        return integer
    }

    static func headers(_ value: JSONValue?) throws(BridgeError) -> HeaderList {
        var list = HeaderList()
        switch value {
        case nil, .null?: break
        case .array(let pairs)?:
            for pair in pairs {
                guard case .array(let parts) = pair, parts.count == 2, let name = parts[0].stringValue, let value = parts[1].stringValue else {
                    throw BridgeError(.badRequest, "each header must be a [name, value] pair of strings, not \(pair.jsonString)")
                }
                list.add(name, value)
            }
        case .object(let object)?:
            for member in object.members {
                guard let value = member.value.stringValue else {
                    throw BridgeError(.badRequest, "header \"\(member.key)\" must have a string value")
                }
                list.add(member.key, value)
            }
        case let other?:
            throw BridgeError(.badRequest, "\"headers\" must be a list of [name, value] pairs or an object, not \(other.typeName)")
        }
        return list
    }

    static func body(_ value: JSONValue?) throws(BridgeError) -> Body {
        guard let value, !value.isNull else { return .none }
        guard case .object(let object) = value else {
            throw BridgeError(.badRequest, "\"body\" must be {\"text\"}, {\"base64\"} or {\"binary\": true}")
        }
        if let text = object["text"] {
            guard let string = text.stringValue else { throw BridgeError(.badRequest, "body.text must be a string") }
            return .bytes(Array(string.utf8))
        }
        if let encoded = object["base64"] {
            guard let string = encoded.stringValue, let data = Data(base64Encoded: string) else {
                throw BridgeError(.badRequest, "body.base64 must be a valid base64 string")
            }
            return .bytes([UInt8](data))
        }
        if object["binary"]?.boolValue == true {
            let length = try integer(object, "length")
            if let length, length < 0 { throw BridgeError(.badRequest, "body.length must not be negative") }
            return .stream(length: length)
        }
        throw BridgeError(.badRequest, "\"body\" must be {\"text\"}, {\"base64\"} or {\"binary\": true}")
    }
}
