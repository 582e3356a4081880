/// The Fetch standard's credentials mode of a request.
public enum CredentialsMode: String, Sendable {
    /// No `Cookie` sent, `Set-Cookie` ignored.
    case omit
    /// Cookies only for requests same-origin with the page (judged per redirect hop).
    case sameOrigin = "same-origin"
    /// Cookies for every request.
    case include
}

/// The Fetch standard's request mode, used for `Origin` and `SameSite` (CORS itself is not
/// enforced through the bridge).
public enum RequestMode: String, Sendable {
    case cors, sameOrigin = "same-origin", noCors = "no-cors", navigate
}

/// The eight policies of the Referrer Policy specification.
public enum ReferrerPolicy: String, Sendable, CaseIterable {
    case noReferrer = "no-referrer"
    case noReferrerWhenDowngrade = "no-referrer-when-downgrade"
    case sameOrigin = "same-origin"
    case origin
    case strictOrigin = "strict-origin"
    case originWhenCrossOrigin = "origin-when-cross-origin"
    case strictOriginWhenCrossOrigin = "strict-origin-when-cross-origin"
    case unsafeURL = "unsafe-url"

    /// The `Referer` value for a request to `target` with `referrer` (Referrer Policy §8.3), or
    /// nil when none is sent. `referrer` is already stripped of its fragment and credentials.
    public func referer(for target: String, referrer: String) -> String? {
        guard let referrerOrigin = WebOrigin(url: referrer), let targetOrigin = WebOrigin(url: target) else { return nil }
        // Chromium sends the origin alone for a referrer longer than 4096 bytes.
        let full = referrer.utf8.count > 4096 ? "\(referrerOrigin)/" : referrer
        let originOnly = "\(referrerOrigin)/"
        let sameOrigin = referrerOrigin == targetOrigin
        let downgrade = referrerOrigin.isPotentiallyTrustworthy && !targetOrigin.isPotentiallyTrustworthy
        switch self {
        case .noReferrer: return nil
        case .unsafeURL: return full
        case .origin: return originOnly
        case .noReferrerWhenDowngrade: return downgrade ? nil : full
        case .sameOrigin: return sameOrigin ? full : nil
        case .originWhenCrossOrigin: return sameOrigin ? full : originOnly
        case .strictOrigin: return downgrade ? nil : originOnly
        case .strictOriginWhenCrossOrigin: return sameOrigin ? full : (downgrade ? nil : originOnly)
        }
    }
}

/// What a `fetch` names as its referrer.
public enum RequestReferrer: Sendable, Equatable {
    /// Absent: the page's URL (none for a headless client).
    case client
    /// `""`: no referrer.
    case none
    /// An absolute URL, stripped for use as a referrer.
    case url(String)
}

/// Builds Chromium's `Accept-Language` from `navigator.languages`: the first as it is, each next
/// with a q-value 0.1 lower (floor 0.1), e.g. `en-US,en;q=0.9,de;q=0.8`.
public func acceptLanguage(from languages: [String]) -> String? {
    var parts: [String] = []
    for language in languages where HeaderRules.isValidValue(language) && !language.isEmpty {
        let tenths = max(1, 10 - parts.count)
        parts.append(parts.isEmpty ? language : "\(language);q=\(tenths == 10 ? "1" : "0.\(tenths)")")
    }
    return parts.isEmpty ? nil : parts.joined(separator: ",")
}
