import Synchronization

/// What a page told the broker about itself with `page.identity`, kept per connection.
public final class PageIdentity: Sendable {
    /// The page's reported facts.
    public struct Report: Sendable, Equatable {
        /// `location.href`.
        public var url: String?
        /// `navigator.userAgent`.
        public var userAgent: String?
        /// `navigator.languages`.
        public var languages: [String]?
    }

    private let state = Mutex(Report())

    init() {}

    /// The latest report (empty until `page.identity`).
    public var report: Report { state.locked { $0 } }

    /// Replaces the report.
    func update(_ report: Report) { state.locked { $0 = report } }
}

/// The identity a request is sent with: the connection's handshake facts and the page's report
/// combined into what the identity headers and the cookie rules use.
public struct RequestIdentity: Sendable {
    /// Whether the client is a page (identity headers are the broker's, the jar stays hidden).
    public var isPage: Bool
    /// The page's URL, the default referrer.
    public var pageURL: String?
    /// The page's origin: from `page.identity`, else the handshake `Origin`.
    public var pageOrigin: WebOrigin?
    /// `User-Agent` to send unless a headless client sets its own.
    public var userAgent: String
    /// `Accept-Language` to send, if any.
    public var acceptLanguage: String?

    /// The identity of requests on `connection` now.
    public init(connection: BrokerConnection) {
        let info = connection.info
        let report = connection.page.report
        let browser = info.origin != nil
        isPage = info.isPage
        pageURL = report.url
        pageOrigin = report.url.flatMap(WebOrigin.init(url:)) ?? info.origin.flatMap(WebOrigin.init(url:))
        userAgent = report.userAgent ?? (browser ? info.userAgent : nil) ?? "bridge-broker/\(BrokerConfiguration.version)"
        acceptLanguage = report.languages.flatMap(BridgeCore.acceptLanguage(from:)) ?? (browser ? info.acceptLanguage : nil)
    }

    /// The page's schemeful site, for `SameSite`; nil for a headless client (all same-site).
    public var site: CookieSite? {
        pageOrigin.flatMap { CookieURL($0.description + "/") }?.site()
    }

    /// The page's URL as the cookie rules see it.
    public var pageCookieURL: CookieURL? {
        pageURL.flatMap(CookieURL.init) ?? pageOrigin.flatMap { CookieURL($0.description + "/") }
    }
}
