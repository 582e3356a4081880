extension CookieJar {
    /// RFC 6265bis §5.7, the storage model, for one parsed line. Called under the lock.
    func apply(_ parsed: SetCookie, url: CookieURL, context: CookieContext, state: inout State) throws(CookieRejection) -> StoreOutcome {
        let now = clock.now()
        let trustworthy = url.isTrustworthy

        // Expiry: Max-Age wins over Expires; both are capped at 400 days.
        var expires: Double?
        if let maxAge = parsed.maxAge {
            expires = maxAge <= 0 ? -Double.infinity : now + min(Double(maxAge), Self.maxLifetime)
        } else if let date = parsed.expires {
            expires = min(date, now + Self.maxLifetime)
        }

        // Domain: host-only unless a Domain attribute names the host or a parent that is not a
        // public suffix. On an IP host only the host itself may be named (then host-only, as
        // Chromium treats it).
        var domain = url.host
        var hostOnly = true
        if var attribute = parsed.domain {
            attribute = Punycode.asciiDomain(attribute)
            if url.isIPAddress {
                guard attribute == url.host || attribute == "[\(url.host)]" else {
                    throw CookieRejection("Domain=\(attribute) does not match the IP host \(url.host)")
                }
            } else if suffixes.isPublicSuffix(attribute) && attribute != url.host {
                throw CookieRejection("Domain=\(attribute) is a public suffix")
            } else if attribute != url.host || !suffixes.isPublicSuffix(attribute) {
                guard url.domainMatches(attribute) else {
                    throw CookieRejection("Domain=\(attribute) does not domain-match the host \(url.host)")
                }
                domain = attribute
                hostOnly = false
            }
        }
        let domainAttributeCounts = !hostOnly || (parsed.domain != nil && !url.isIPAddress)
        let path = parsed.path ?? url.defaultPath

        if parsed.secure && !trustworthy { throw CookieRejection("Secure cookie from an insecure URL") }
        if parsed.httpOnly && context.fromScript { throw CookieRejection("HttpOnly cookie set from script") }
        if parsed.sameSite == .none && !parsed.secure { throw CookieRejection("SameSite=None without Secure") }
        let sameSite = context.isSameSite(url, suffixes)
        if parsed.sameSite != .none && !sameSite && !context.topLevelNavigation {
            throw CookieRejection("SameSite=\(parsed.sameSite == .unspecified ? "Lax (default)" : parsed.sameSite.attribute) cookie from a cross-site response")
        }
        // CHIPS: a Partitioned cookie needs Secure (Chromium refuses it otherwise) and is kept
        // under the top-level site; an unpartitioned one from another site is a third-party cookie.
        if parsed.partitioned && !parsed.secure { throw CookieRejection("Partitioned cookie without Secure") }
        if !parsed.partitioned && !sameSite && !context.topLevelNavigation && thirdPartyCookies == .block {
            throw CookieRejection("third-party cookie blocked (--third-party-cookies block)")
        }

        // Prefixes are matched case-insensitively (Chromium 156 refuses `__secure-a=1` without Secure).
        let prefixed = parsed.name.isEmpty ? parsed.value : parsed.name
        let lowered = prefixed.prefix(9).lowercased()
        if parsed.name.isEmpty && (lowered.hasPrefix("__secure-") || lowered.hasPrefix("__host-")) {
            throw CookieRejection("a nameless cookie whose value starts with a cookie prefix")
        }
        if lowered.hasPrefix("__secure-") && !parsed.secure { throw CookieRejection("__Secure- cookie without Secure") }
        if lowered.hasPrefix("__host-") && !(parsed.secure && !domainAttributeCounts && parsed.path == "/") {
            throw CookieRejection("__Host- cookie needs Secure, Path=/ and no Domain")
        }

        var cookie = Cookie(
            name: parsed.name, value: parsed.value, domain: domain, path: path, expires: expires, creation: now, lastAccess: now,
            secure: parsed.secure, httpOnly: parsed.httpOnly, sameSite: parsed.sameSite, hostOnly: hostOnly,
            partition: parsed.partitioned ? context.partition(for: url, suffixes) : nil)

        // An insecure URL may not shadow a Secure cookie of the same name (§5.7 step 16).
        if !parsed.secure && !trustworthy {
            for (candidateDomain, cookies) in state.byDomain
            where CookieURL.domain(candidateDomain, matches: domain) || CookieURL.domain(domain, matches: candidateDomain) {
                for candidate in cookies.values where candidate.secure && candidate.name == cookie.name {
                    if CookieURL.path(path, matches: candidate.path) { throw CookieRejection("it would shadow a Secure cookie") }
                }
            }
        }

        let old = state.byDomain[domain]?[cookie.key]
        if let old, old.httpOnly && context.fromScript { throw CookieRejection("script may not replace an HttpOnly cookie") }
        if let old, old.value == cookie.value {
            // Chromium keeps the creation time (the place in the Cookie header) only for the same
            // value; RFC 6265bis keeps it always. A new value sorts as a new cookie.
            cookie.creation = old.creation
        } else {
            // Unique creation times keep the Cookie header's order stable.
            cookie.creation = max(now, state.lastCreation + 0.000_001)
            state.lastCreation = cookie.creation
        }

        if let expires, expires <= now {
            if old != nil { remove([cookie.key], state: &state) }
            cookie.expires = 0
            return .deleted(cookie)
        }
        if old == nil { state.count += 1 }
        state.byDomain[domain, default: [:]][cookie.key] = cookie
        if cookie.isPersistent {
            persist(upserting: [cookie], deleting: [])
        } else if old?.isPersistent == true {
            persist(upserting: [], deleting: [cookie.key])
        }
        evict(around: cookie, now: now, state: &state)
        return .stored(cookie)
    }

    /// Keeps the jar within its caps: first expired cookies go, then the least recently accessed
    /// ones of the cookie's registrable domain, then of the whole jar.
    private func evict(around cookie: Cookie, now: Double, state: inout State) {
        // No site can be over its cap while the whole jar is under it.
        if state.count > limits.perDomain {
            let site = suffixes.registrableDomain(of: cookie.domain) ?? cookie.domain
            let siteDomains = state.byDomain.keys.filter { $0 == site || CookieURL.domain($0, matches: site) }
            if siteDomains.reduce(0, { $0 + state.byDomain[$1]!.count }) > limits.perDomain {
                let siteCookies = siteDomains.flatMap { state.byDomain[$0]!.values }
                let victims = Self.victims(in: siteCookies, over: limits.perDomain, now: now)
                logger.debug("cookie limit of \(limits.perDomain) for \(site) reached: evicting \(victims.count)")
                remove(victims, state: &state)
            }
        }
        if state.count > limits.total {
            let victims = Self.victims(in: Array(state.byDomain.values.flatMap(\.values)), over: limits.total, now: now)
            logger.debug("cookie limit of \(limits.total) in all reached: evicting \(victims.count)")
            remove(victims, state: &state)
        }
    }

    /// The keys to remove so `cookies` keeps `limit`: expired first, then least recently accessed.
    private static func victims(in cookies: [Cookie], over limit: Int, now: Double) -> [Cookie.Key] {
        let evictsFirst = { (a: Cookie, b: Cookie) -> Bool in
            let aExpired = (a.expires ?? .infinity) <= now, bExpired = (b.expires ?? .infinity) <= now
            if aExpired != bExpired { return aExpired }
            return a.lastAccess < b.lastAccess
        }
        let excess = cookies.count - limit
        // Usually one cookie too many: one pass finds it.
        if excess == 1, let first = cookies.min(by: evictsFirst) { return [first.key] }
        return cookies.sorted(by: evictsFirst).prefix(excess).map(\.key)
    }
}
