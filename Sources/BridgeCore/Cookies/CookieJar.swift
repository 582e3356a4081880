import Logging
import Synchronization

/// The broker's cookie jar: RFC 6265bis storage and retrieval, as Chromium applies it.
///
/// One jar serves every connection, as a browser profile does. Persistent cookies are written
/// through to `persistence` (when given) as they change; session cookies live in memory only,
/// so a restart drops them. Times come from `clock`, so expiry is testable.
public final class CookieJar: Sendable {
    /// The most cookies kept for one registrable domain (Chromium's limit).
    public static let perDomainLimit = 180
    /// The most cookies kept in all.
    public static let totalLimit = 3000
    /// The longest a cookie may live (RFC 6265bis §5.6.1 and §5.6.2: 400 days).
    public static let maxLifetime: Double = 400 * 86_400

    /// How many cookies this jar keeps per registrable domain and in all.
    public let limits: (perDomain: Int, total: Int)
    /// Whether a page's cross-site requests store and send unpartitioned cookies.
    public let thirdPartyCookies: ThirdPartyCookies
    let clock: any BrokerClock
    private let givenSuffixes: PublicSuffixList?
    /// The public suffix list: the given one, else the shared one, read on first use (a jar that
    /// only ever serves headless clients and host-only cookies never reads it).
    var suffixes: PublicSuffixList { givenSuffixes ?? .shared }
    let persistence: (any CookiePersistence)?
    let logger: Logger
    let state: Mutex<State>

    struct State {
        /// Cookies by domain, then key.
        var byDomain: [String: [Cookie.Key: Cookie]] = [:]
        var count = 0
        var lastCreation: Double = 0
    }

    /// Creates a jar, loading what `persistence` holds (a store that fails to load is logged and
    /// the jar starts empty).
    public init(
        clock: any BrokerClock = SystemClock(), suffixes: PublicSuffixList? = nil, persistence: (any CookiePersistence)? = nil,
        logger: Logger = Logger(label: "bridge.cookies"), limits: (perDomain: Int, total: Int) = (perDomainLimit, totalLimit),
        thirdPartyCookies: ThirdPartyCookies = .block
    ) {
        self.limits = limits
        self.thirdPartyCookies = thirdPartyCookies
        self.clock = clock
        givenSuffixes = suffixes
        self.persistence = persistence
        self.logger = logger
        var state = State()
        if let persistence {
            do {
                let now = clock.now()
                var expired: [Cookie.Key] = []
                for cookie in try persistence.loadCookies() {
                    if let expires = cookie.expires, expires <= now { expired.append(cookie.key); continue }
                    state.byDomain[cookie.domain, default: [:]][cookie.key] = cookie
                    state.count += 1
                    state.lastCreation = max(state.lastCreation, cookie.creation)
                }
                if !expired.isEmpty { try persistence.save(upserting: [], deleting: expired) }
            } catch {
                logger.error("the cookie jar could not be read, starting empty: \(error)")
            }
        }
        self.state = Mutex(state)
    }

    /// The outcome of one `Set-Cookie` line or `document.cookie` write.
    public enum StoreOutcome: Sendable, Equatable {
        /// The cookie was stored (new or replacing one with the same key).
        case stored(Cookie)
        /// The line expired the cookie: it was removed (if there was one) and nothing stored.
        case deleted(Cookie)
        /// The line was ignored.
        case rejected(CookieRejection)

        /// The cookie the line named, unless it was rejected.
        public var cookie: Cookie? {
            switch self {
            case .stored(let cookie), .deleted(let cookie): return cookie
            case .rejected: return nil
            }
        }
    }

    /// Applies one `Set-Cookie` line (or a `document.cookie` assignment, with `context.fromScript`)
    /// received for `url`. A rejected line is logged at debug level without its value.
    @discardableResult
    public func store(_ line: String, for url: CookieURL, context: CookieContext) -> StoreOutcome {
        let outcome: StoreOutcome
        do {
            let parsed = try SetCookie(parsing: line)
            outcome = try state.locked { state throws(CookieRejection) in
                try apply(parsed, url: url, context: context, state: &state)
            }
        } catch {
            outcome = .rejected(error)
        }
        if case .rejected(let rejection) = outcome {
            logger.debug("cookie from \(url.host) ignored: \(rejection.reason)")
        }
        return outcome
    }

    /// The cookies a request to `url` carries, in `Cookie` header order (longer paths first, then
    /// older first); marks them accessed.
    public func cookies(for url: CookieURL, context: CookieContext, includeHttpOnly: Bool = true) -> [Cookie] {
        let now = clock.now()
        let sameSite = context.isSameSite(url, suffixes)
        let blockUnpartitioned = !sameSite && !context.topLevelNavigation && thirdPartyCookies == .block
        let partition = context.partition(for: url, suffixes)
        let trustworthy = url.isTrustworthy
        return state.locked { state in
            var found: [Cookie] = []
            var expired: [Cookie.Key] = []
            for domain in Self.domainCandidates(of: url.host) {
                guard var cookies = state.byDomain[domain] else { continue }
                for (key, cookie) in cookies {
                    if let expires = cookie.expires, expires <= now { expired.append(key); continue }
                    if cookie.hostOnly ? cookie.domain != url.host : !url.domainMatches(cookie.domain) { continue }
                    guard url.pathMatches(cookie.path) else { continue }
                    if let cookiePartition = cookie.partition {
                        guard cookiePartition == partition else { continue }
                    } else if blockUnpartitioned {
                        continue
                    }
                    if cookie.secure && !trustworthy { continue }
                    if cookie.httpOnly && (context.fromScript || !includeHttpOnly) { continue }
                    if !sameSite {
                        switch cookie.sameSite {
                        case .none: break
                        case .strict: continue
                        case .lax, .unspecified: guard context.topLevelNavigation && context.isSafeMethod else { continue }
                        }
                    }
                    cookies[key]?.lastAccess = now
                    found.append(cookie)
                }
                state.byDomain[domain] = cookies
            }
            remove(expired, state: &state)
            return found.sorted { a, b in
                a.path.utf8.count != b.path.utf8.count ? a.path.utf8.count > b.path.utf8.count : a.creation < b.creation
            }
        }
    }

    /// The `Cookie` header value for a request to `url`, or nil when no cookie goes.
    public func header(for url: CookieURL, context: CookieContext) -> String? {
        let cookies = cookies(for: url, context: context)
        return cookies.isEmpty ? nil : cookies.map(\.pair).joined(separator: "; ")
    }

    /// Every unexpired cookie, by domain, then path, then name.
    public func all() -> [Cookie] {
        let now = clock.now()
        return state.locked { state in
            state.byDomain.values.flatMap(\.values).filter { ($0.expires ?? .infinity) > now }
        }.sorted { ($0.domain, $0.path, $0.name) < ($1.domain, $1.path, $1.name) }
    }

    /// Removes cookies: all, or those whose domain is `domain` or under it, and (with `since`)
    /// only those created at or after `since`. Returns how many were removed.
    @discardableResult
    public func clear(domain: String? = nil, since: Double? = nil) -> Int {
        let domain = domain.map { Punycode.asciiDomain($0.lowercased().hasPrefix(".") ? String($0.lowercased().dropFirst()) : $0.lowercased()) }
        return state.locked { state in
            var keys: [Cookie.Key] = []
            for (cookieDomain, cookies) in state.byDomain {
                if let domain, !CookieURL.domain(cookieDomain, matches: domain) { continue }
                for (key, cookie) in cookies where since.map({ cookie.creation >= $0 }) ?? true { keys.append(key) }
            }
            remove(keys, state: &state)
            return keys.count
        }
    }

    /// The domains a cookie sent to `host` can be stored under: the host and its parents.
    static func domainCandidates(of host: String) -> [String] {
        if IPAddress(host) != nil { return [host] }
        var result = [host]
        var rest = Substring(host)
        while let dot = rest.firstIndex(of: ".") {
            rest = rest[rest.index(after: dot)...]
            if !rest.isEmpty { result.append(String(rest)) }
        }
        return result
    }

    /// Removes `keys` from memory and the store. Called under the lock.
    func remove(_ keys: [Cookie.Key], state: inout State) {
        guard !keys.isEmpty else { return }
        var persisted: [Cookie.Key] = []
        for key in keys {
            if let cookie = state.byDomain[key.domain]?.removeValue(forKey: key) {
                state.count -= 1
                if cookie.isPersistent { persisted.append(key) }
            }
            if state.byDomain[key.domain]?.isEmpty == true { state.byDomain[key.domain] = nil }
        }
        persist(upserting: [], deleting: persisted)
    }

    func persist(upserting cookies: [Cookie], deleting keys: [Cookie.Key]) {
        guard let persistence, !cookies.isEmpty || !keys.isEmpty else { return }
        do {
            try persistence.save(upserting: cookies, deleting: keys)
        } catch {
            logger.error("the cookie jar could not be written: \(error)")
        }
    }
}
