// libFuzzer targets for every BridgeCore parser that reads bytes from outside the broker.
//
// scripts/fuzz.sh compiles this file together with BridgeCore's sources into one module (so
// internal parsers are reachable) with `-sanitize=fuzzer,address`; the target to run is named by
// BRIDGE_FUZZ_TARGET. Each target checks properties of what the parser returns, not only that it
// returns: a property that fails prints why and aborts, which libFuzzer records as a crash and
// saves the input. See docs/RELIABILITY.md.

#if canImport(Glibc)
import Glibc
#endif

/// Fails the run with `message` when `condition` is false.
func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() {
        print("property failed: \(message())")
        fflush(nil)
        abort()
    }
}

/// The input as text (invalid UTF-8 becomes U+FFFD, as the broker's own decoding does).
func text(_ bytes: UnsafeRawBufferPointer) -> String { String(decoding: bytes, as: UTF8.self) }

/// The input's lines, split on LF; empty lines kept.
func lines(_ bytes: UnsafeRawBufferPointer) -> [String] {
    text(bytes).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
}

/// Header fields from `name: value` lines; a line without a colon is skipped.
func headerFields(_ lines: some Sequence<String>) -> HeaderList {
    var headers = HeaderList()
    for line in lines {
        guard let colon = line.firstIndex(of: ":") else { continue }
        headers.add(String(line[..<colon]), String(line[line.index(after: colon)...]))
    }
    return headers
}

enum FuzzTargets {
    static let all: [(name: String, run: @Sendable (UnsafeRawBufferPointer) -> Void)] = [
        ("json", json), ("envelope", envelope), ("frame", frame), ("cache-control", cacheControl),
        ("vary", vary), ("http-date", httpDate), ("etag", etag), ("range", range),
        ("html-links", htmlLinks), ("manifest", manifest), ("url", url), ("glob", glob),
        ("set-cookie", setCookie), ("cookie-date", cookieDate), ("public-suffix", publicSuffix),
        ("response-head", responseHead), ("ip-address", ipAddress),
        ("handshake", handshake), ("static-files", staticFiles),
    ]

    // MARK: JSON

    /// The value with every non-finite double replaced by null: what writing it gives, as
    /// JSON.stringify does (`1e400` parses to infinity, as in JavaScript).
    static func finite(_ value: JSONValue) -> JSONValue {
        switch value {
        case .double(let d) where !d.isFinite: return .null
        case .array(let elements): return .array(elements.map(finite))
        case .object(let object): return .object(JSONObject(object.members.map { ($0.key, finite($0.value)) }))
        default: return value
        }
    }

    static func depth(_ value: JSONValue) -> Int {
        switch value {
        case .array(let elements): return 1 + (elements.map(depth).max() ?? 0)
        case .object(let object): return 1 + (object.members.map { depth($0.value) }.max() ?? 0)
        default: return 0
        }
    }

    /// Parse, write, parse gives the same value; writing is then a fixed point; nesting is bounded.
    static func json(_ bytes: UnsafeRawBufferPointer) {
        guard let value = try? JSONParser.parse(bytes) else { return }
        require(depth(value) <= JSONParser.maxDepth, "nesting \(depth(value)) over the limit was accepted")
        let written = value.jsonBytes
        guard let again = try? JSONParser.parse(written) else {
            return require(false, "the writer's output does not parse: \(String(decoding: written, as: UTF8.self))")
        }
        require(again == finite(value), "parse(write(v)) != v for \(String(decoding: written, as: UTF8.self))")
        require(again.jsonBytes == written, "write(parse(write(v))) != write(v)")
    }

    // MARK: Client envelopes

    /// A decoded envelope has a valid id; re-encoding it decodes to the same message; a refused
    /// one names a valid id or none.
    static func envelope(_ bytes: UnsafeRawBufferPointer) {
        let message: ClientMessage
        do {
            message = try ClientMessage.decode(bytes)
        } catch {
            if let id = error.id { require((0...ClientMessage.maxID).contains(id), "error names id \(id)") }
            require(!error.message.isEmpty, "an envelope error without a message")
            return
        }
        var object = JSONObject()
        switch message {
        case .post(let name, let id, let body):
            if let id { require((0...ClientMessage.maxID).contains(id), "post id \(id) out of range") }
            object["type"] = "post"
            object["name"] = .string(name)
            object["id"] = id.map(JSONValue.integer) ?? .null
            object["body"] = body
        case .cancel(let id):
            require((0...ClientMessage.maxID).contains(id), "cancel id \(id) out of range")
            object["type"] = "cancel"
            object["id"] = .integer(id)
        case .credit(let id, let bytes):
            require((0...ClientMessage.maxID).contains(id), "credit id \(id) out of range")
            require((0...ClientMessage.maxID).contains(bytes), "credit bytes \(bytes) out of range")
            object["type"] = "credit"
            object["id"] = .integer(id)
            object["bytes"] = .integer(bytes)
        }
        let frame = JSONValue.object(object).jsonBytes
        let again = frame.withUnsafeBytes { try? ClientMessage.decode($0) }
        let expected: ClientMessage
        if case .post(let name, let id, let body) = message {
            expected = .post(name: name, id: id, body: finite(body))
        } else {
            expected = message
        }
        require(again == expected, "re-encoded envelope decodes differently: \(String(decoding: frame, as: UTF8.self))")
    }

    // MARK: Binary frame headers

    /// A header that parses writes back the same 10 bytes; one that does not has a reason that
    /// the bytes show (short, unknown kind or flags, id over 2^53-1).
    static func frame(_ bytes: UnsafeRawBufferPointer) {
        do {
            let header = try BinaryFrameHeader.parse(bytes)
            require((0...ClientMessage.maxID).contains(header.id), "frame id \(header.id) out of range")
            let payload = bytes[BinaryFrameHeader.size...]
            require(header.frame(payload: payload).elementsEqual(bytes), "a parsed frame writes different bytes")
            let headroom = Int(bytes.count % 17)
            let buffer = header.frame(payload: payload, headroom: headroom)
            require(buffer.bytes.elementsEqual(bytes) && buffer.headroom == headroom, "a frame buffer holds different bytes")
            // A header prepended in front of a payload already in place (the upstream body path).
            let prepended = FrameBuffer(headroom: headroom + BinaryFrameHeader.size, capacity: payload.count)
            prepended.append(contentsOf: payload)
            prepended.prepend(BinaryFrameHeader.size) { header.write(to: $0) }
            require(prepended.bytes.elementsEqual(bytes), "a prepended header gives different bytes")
        } catch {
            var id: UInt64 = 0
            if bytes.count >= BinaryFrameHeader.size { for offset in 2..<10 { id = id << 8 | UInt64(bytes[offset]) } }
            let explained = bytes.count < BinaryFrameHeader.size || bytes[0] != BinaryFrameHeader.bodyChunk
                || bytes[1] & ~BinaryFrameHeader.endFlag != 0 || id > UInt64(ClientMessage.maxID)
            require(explained, "a valid header was refused: \(error)")
        }
    }

    // MARK: Cache-Control

    static func isSpaceOrSeparator(_ c: Character) -> Bool { c == " " || c == "\t" || c == "," || c == "\"" }

    /// Names are lower-case and never empty; a valid token value is a token; writing the valid
    /// directives back and parsing them gives the same directives; their interpretation stays in
    /// range.
    static func cacheControl(_ bytes: UnsafeRawBufferPointer) {
        let fieldValues = lines(bytes)
        let parsed = CacheControl(fieldValues: fieldValues)
        for directive in parsed.directives {
            require(!directive.name.isEmpty, "an empty directive name")
            require(directive.name == directive.name.lowercased(), "name \(directive.name) is not lower-case")
            require(!directive.name.contains(where: { isSpaceOrSeparator($0) || $0 == "=" }), "name \(directive.name) holds a separator")
            if directive.isValid, !directive.isQuoted, let value = directive.value {
                require(!value.isEmpty && !value.contains(where: isSpaceOrSeparator), "invalid token value \(value) kept as valid")
            }
            if directive.isQuoted { require(directive.isValid, "a quoted directive marked invalid") }
        }
        let valid = parsed.directives.filter(\.isValid)
        let line = valid.map { directive -> String in
            guard let value = directive.value else { return directive.name }
            guard directive.isQuoted else { return "\(directive.name)=\(value)" }
            var quoted = "\""
            // By scalar: `\` or `"` followed by a combining mark is one Character, and the parser reads bytes.
            for c in value.unicodeScalars { if c == "\"" || c == "\\" { quoted.append("\\") }; quoted.unicodeScalars.append(c) }
            return "\(directive.name)=\(quoted)\""
        }.joined(separator: ", ")
        let reparsed = CacheControl(fieldValues: [line]).directives
        require(reparsed == valid, "directives written as \(line) parse differently")

        let response = ResponseDirectives(parsed)
        let request = RequestDirectives(headers: HeaderList(fieldValues.map { ("Cache-Control", $0) }))
        for seconds in [response.maxAge, response.staleWhileRevalidate, response.staleIfError, request.maxAge, request.minFresh, request.staleIfError] {
            if let seconds { require(seconds >= 0 && seconds <= DeltaSeconds.maximum, "delta-seconds \(seconds) out of range") }
        }
        for value in fieldValues {
            if let seconds = DeltaSeconds.parse(value) {
                require(seconds >= 0 && seconds <= DeltaSeconds.maximum && seconds == seconds.rounded(), "DeltaSeconds(\(value)) = \(seconds)")
            }
        }
    }

    // MARK: Vary

    /// Line 1 is the response's `Vary`, the rest request headers. The key's names are sorted,
    /// unique, lower-case, without `*`; a key matches the request it was made from unless it is
    /// a wildcard; a normalised value normalises to itself.
    static func vary(_ bytes: UnsafeRawBufferPointer) {
        let all = lines(bytes)
        let response = HeaderList([("Vary", all.first ?? "")])
        let request = headerFields(all.dropFirst())
        let key = VaryKey(responseHeaders: response, requestHeaders: request)
        require(key.fieldNames == Array(Set(key.fieldNames)).sorted(), "names not sorted and unique: \(key.fieldNames)")
        require(!key.fieldNames.contains("*"), "* kept as a name")
        require(key.values.count == key.fieldNames.count, "values and names differ in count")
        require(key.matches(request) == !key.isWildcard, "a key does not match its own request")
        for (name, value) in zip(key.fieldNames, key.values) {
            guard let value else { continue }
            let again = VaryKey.normalizedValue(of: name, in: HeaderList([(name, value)]))
            require(again == value, "normalising \(value) again gives \(again ?? "nil")")
        }
    }

    // MARK: HTTP-date, Age, Expires

    static let earliest = -62_167_219_200.0  // 0000-01-01T00:00:00Z
    static let latest = 253_402_300_799.0  // 9999-12-31T23:59:59Z

    /// A date that parses is whole seconds and formats to a date that parses to it; any time in
    /// the four-digit years formats to a date that parses back; `Age` is in range.
    static func httpDate(_ bytes: UnsafeRawBufferPointer) {
        let value = text(bytes)
        for now in [nil, 1_700_000_000.0] {
            guard let seconds = HTTPDate.parse(value, now: now) else { continue }
            require(seconds == seconds.rounded() && seconds >= earliest && seconds <= latest, "\(value) gives \(seconds)")
            let formatted = HTTPDate.format(seconds)
            require(HTTPDate.parse(formatted) == seconds, "\(value) -> \(seconds) -> \(formatted) does not parse back")
        }
        if bytes.count >= 8 {
            var raw: Int64 = 0
            for offset in 0..<8 { raw = raw << 8 | Int64(bytes[offset]) }
            let span = Int64(latest - earliest) + 1
            let seconds = earliest + Double((raw % span + span) % span)
            let formatted = HTTPDate.format(seconds)
            require(HTTPDate.parse(formatted) == seconds, "\(seconds) formats as \(formatted), which does not parse back")
        }
        let age = Freshness.ageValue(headers: ["Age": value])
        require(age >= 0 && age <= DeltaSeconds.maximum, "Age \(value) gives \(age)")
        let date = Freshness.dateValue(headers: ["Date": value], responseTime: 1_700_000_000)
        require(date.isFinite, "Date \(value) gives \(date)")
    }

    // MARK: ETag

    /// A tag is weak exactly when it starts `W/`; matching is reflexive where it should be.
    static func etag(_ bytes: UnsafeRawBufferPointer) {
        let value = text(bytes)
        let tag = EntityTag(value)
        require(tag.isWeak == value.trimmingSpaces.hasPrefix("W/"), "weakness of \(value)")
        require(tag.weaklyMatches(tag), "a tag does not weakly match itself")
        require(tag.stronglyMatches(tag) == !tag.isWeak, "strong self-match of \(value)")
        if tag.isWeak { require(EntityTag("W/" + tag.opaque) == tag, "W/ + opaque is another tag") }
        let other = EntityTag(lines(bytes).last ?? "")
        if tag.stronglyMatches(other) { require(tag.weaklyMatches(other), "strong match without a weak one") }
        require(tag.weaklyMatches(other) == other.weaklyMatches(tag), "weak matching is not symmetric")
    }

    // MARK: Range, Content-Range

    /// Parsed ranges are ordered, resolve inside the representation, and write back to
    /// themselves; a parsed Content-Range fits its length and writes back to itself.
    static func range(_ bytes: UnsafeRawBufferPointer) {
        let value = text(bytes)
        let specs: [ByteRangeSpec]
        switch RangeRequest(value) {
        case .none: specs = []
        case .single(let spec): specs = [spec]
        case .multiple(let list):
            require(list.count >= 2, "multiple with \(list.count) ranges")
            specs = list
        }
        for spec in specs {
            if case .from(let first, let last) = spec {
                require(first >= 0 && (last.map { $0 >= first } ?? true), "range \(spec) out of order")
            }
            if case .suffix(let length) = spec { require(length >= 0, "negative suffix") }
            require(RangeRequest(spec.headerValue) == .single(spec), "\(spec.headerValue) parses differently")
            for length in [0, 1, 2, 100, 1 << 40, Int.max] {
                if let resolved = spec.resolve(length: length) {
                    require(resolved.lowerBound >= 0 && resolved.upperBound < length, "\(spec) resolves to \(resolved) in \(length)")
                }
            }
        }
        if let content = ContentRange(value) {
            require(content.range.lowerBound >= 0 && content.range.upperBound < content.completeLength, "\(content) does not fit")
            require(ContentRange(content.headerValue) == content, "\(content.headerValue) parses differently")
        }
    }

    // MARK: HTML links

    static let pageURL = "https://example.com/dir/page.html"

    /// Every link found has a known rel and a trimmed, non-empty href; a resolved one is an
    /// absolute URL without a fragment; no more links than tags.
    static func htmlLinks(_ bytes: UnsafeRawBufferPointer) {
        let html = text(bytes)
        let links = HTMLLinks.extract(html: html, pageURL: pageURL)
        require(links.count <= html.utf8.count { $0 == UInt8(ascii: "<") }, "more links than tags")
        for link in links {
            require(HTMLLinks.relations.contains(link.rel), "rel \(link.rel)")
            require(!link.href.isEmpty && link.href == link.href.trimmingCharacters(in: .whitespacesAndNewlines), "href \(link.href)")
            if let url = link.url {
                require(url.contains(":") && !url.contains("#"), "resolved url \(url)")
            }
            if let priority = link.fetchPriority { require(priority == priority.lowercased(), "fetchpriority not lower-case") }
            require((-1...3).contains(link.priority), "priority \(link.priority)")
        }
        let plain = html.replacingOccurrences(of: "&", with: "")
        require(CharacterReferences.decode(plain) == plain, "decoding text without & changed it")
    }

    // MARK: Preload manifest

    static let manifestURL = "https://example.com/assets/manifest.json"

    /// Every resource a manifest yields is a normalised http(s) URL (normalising it again changes
    /// nothing) from the source `manifest`.
    static func manifest(_ bytes: UnsafeRawBufferPointer) {
        guard let resources = try? PreloadManifest.resources(from: Array(bytes), url: manifestURL) else { return }
        for resource in resources {
            require(resource.source == "manifest", "source \(resource.source)")
            require(resource.url.hasPrefix("http://") || resource.url.hasPrefix("https://"), "resource \(resource.url)")
            require((try? FetchRequest.normalize(url: resource.url)) == resource.url, "\(resource.url) is not normalised")
        }
    }

    // MARK: URL normalisation

    /// Wherever the ASCII fast path reads a URL, it reads what `URLComponents` reads. A normalised
    /// URL is http(s), normalises to itself, and has a rule form with its port.
    static func url(_ bytes: UnsafeRawBufferPointer) {
        let value = text(bytes)
        if let fast = URLParts.ascii(value) {
            let slow = URLParts.foundation(value)
            require(slow == fast, "\(value.debugDescription): fast path \(fast), URLComponents \(slow.map { "\($0)" } ?? "nil")")
            require(FetchRequest.referrerForm(of: value) == FetchRequest.foundationReferrerForm(of: value), "referrer form of \(value)")
        }
        guard let normalized = try? FetchRequest.normalize(url: value) else { return }
        require(normalized.hasPrefix("http://") || normalized.hasPrefix("https://"), "\(value) -> \(normalized)")
        require(!normalized.contains("#"), "\(normalized) keeps a fragment")
        let again = try? FetchRequest.normalize(url: normalized)
        require(again == normalized, "\(value) -> \(normalized) -> \(again ?? "error")")
        let rule = FetchRequest.ruleForm(of: normalized)
        require(rule.hasPrefix(String(normalized.prefix(while: { $0 != ":" })) + "://"), "rule form \(rule) of \(normalized)")
        require(FetchRequest.ruleForm(of: rule) == rule, "rule form of \(rule) changes it")
        _ = URLRules(allow: [rule], deny: []).check(rule)
    }

    // MARK: URL glob rules

    /// A reference matcher: dynamic programming over (pattern prefix, text prefix).
    static func referenceGlob(_ pattern: [UInt8], _ text: [UInt8]) -> Bool {
        var row = [Bool](repeating: false, count: text.count + 1)
        row[0] = true
        for p in pattern {
            var next = [Bool](repeating: false, count: text.count + 1)
            if p == UInt8(ascii: "*") {
                var any = false
                for t in 0...text.count { any = any || row[t]; next[t] = any }
            } else {
                for t in 0..<text.count where row[t] && text[t] == p { next[t + 1] = true }
            }
            row = next
        }
        return row[text.count]
    }

    /// Pattern and text are split at the first NUL. The glob takes at most
    /// (text + 1) × (pattern + 1) steps and agrees with the reference matcher.
    static func glob(_ bytes: UnsafeRawBufferPointer) {
        let split = bytes.firstIndex(of: 0) ?? bytes.count / 2
        let pattern = String(decoding: bytes[..<split], as: UTF8.self)
        let subject = String(decoding: bytes[min(split + 1, bytes.count)...], as: UTF8.self)
        var steps = 0
        let matched = URLRules.glob(pattern, matches: subject, steps: &steps)
        let p = pattern.utf8.count, t = subject.utf8.count
        require(steps <= (t + 1) * (p + 1), "\(steps) steps for a pattern of \(p) and a text of \(t) bytes")
        if p * t <= 1 << 18 {
            require(matched == referenceGlob(Array(pattern.utf8), Array(subject.utf8)), "glob \(pattern) on \(subject) gives \(matched)")
        }
    }
}

extension FuzzTargets {
    // MARK: Set-Cookie

    /// A parsed `Set-Cookie` keeps the limits and forms RFC 6265bis gives; written back as a line
    /// it parses to the same cookie; its expiry is a cookie-date.
    static func setCookie(_ bytes: UnsafeRawBufferPointer) {
        let line = text(bytes)
        guard let cookie = try? SetCookie(parsing: line) else { return }
        require(!(cookie.name.isEmpty && cookie.value.isEmpty), "neither name nor value")
        require(cookie.name.utf8.count + cookie.value.utf8.count <= SetCookie.maxNameValueBytes, "over the size limit")
        for part in [cookie.name, cookie.value] {
            require(!part.utf8.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F || $0 == UInt8(ascii: ";") }, "control or ; in \(part)")
        }
        require(!cookie.name.contains("="), "= in the name")
        if let path = cookie.path { require(path.hasPrefix("/") && path.utf8.count <= SetCookie.maxAttributeValueBytes, "path \(path)") }
        if let domain = cookie.domain { require(domain == domain.lowercased() && !domain.isEmpty, "domain \(domain)") }
        var written = "\(cookie.name)=\(cookie.value)"
        if let path = cookie.path { written += "; Path=\(path)" }
        if let domain = cookie.domain { written += "; Domain=\(domain.hasPrefix(".") || domain.hasPrefix(" ") || domain.hasPrefix("\t") ? "." : "")\(domain)" }
        if let maxAge = cookie.maxAge { written += "; Max-Age=\(maxAge)" }
        if let expires = cookie.expires { written += "; Expires=\(HTTPDate.format(expires))" }
        if cookie.secure { written += "; Secure" }
        if cookie.httpOnly { written += "; HttpOnly" }
        if cookie.sameSite != .unspecified { written += "; SameSite=\(cookie.sameSite.rawValue)" }
        if cookie.partitioned { written += "; Partitioned" }
        // Under 1 KiB, so that the "." written before a domain cannot push it over the attribute limit.
        guard written.utf8.count < SetCookie.maxAttributeValueBytes else { return }
        let again = try? SetCookie(parsing: written)
        require(again == cookie, "\(line) written as \(written) parses differently")
    }

    // MARK: Cookie dates

    static let year1601 = -11_644_473_600.0

    /// A cookie-date is whole seconds from 1601 to 9999, and its IMF-fixdate parses back to it
    /// both as a cookie-date and as an HTTP-date.
    static func cookieDate(_ bytes: UnsafeRawBufferPointer) {
        guard let seconds = CookieDate.parse(text(bytes)) else { return }
        require(seconds == seconds.rounded() && seconds >= year1601 && seconds <= latest, "\(text(bytes)) gives \(seconds)")
        let formatted = HTTPDate.format(seconds)
        require(CookieDate.parse(formatted) == seconds && HTTPDate.parse(formatted) == seconds, "\(seconds) -> \(formatted)")
    }

    // MARK: Public suffix list

    /// Line 1 is a host (lower-cased, as the jar passes it). Its public suffix and registrable
    /// domain are suffixes of it on a label boundary, and the registrable domain is not itself a
    /// public suffix. Line 2 onwards is a list in the file format, parsed too (not checked: the
    /// list is the operator's file, and an exception rule for a whole TLD gives an empty suffix).
    static func publicSuffix(_ bytes: UnsafeRawBufferPointer) {
        let all = lines(bytes)
        let host = (all.first ?? "").lowercased()
        _ = PublicSuffixList(text: all.dropFirst().joined(separator: "\n"), source: "fuzz").registrableDomain(of: host)
        for list in [PublicSuffixList.shared] {
            let suffix = list.publicSuffix(of: host)
            require(host == suffix || host.hasSuffix("." + suffix), "suffix \(suffix) of \(host)")
            if let registrable = list.registrableDomain(of: host) {
                require(host == registrable || host.hasSuffix("." + registrable), "registrable \(registrable) of \(host)")
                require(registrable.hasSuffix("." + suffix), "registrable \(registrable), suffix \(suffix)")
                require(!list.isPublicSuffix(registrable), "registrable \(registrable) is a public suffix")
            }
        }
    }
}

extension FuzzTargets {
    // MARK: Upstream response heads

    /// The upstream's bytes as `RawHeadScanner` reads them next to NIO's decoder, and each head
    /// `RawResponseHead.parse` makes of them. A head's code is three digits; no name, value or
    /// reason holds a line feed; no name a colon; values are trimmed; a head written back parses
    /// to itself. Reads split anywhere (the split points come from the first bytes) give the same
    /// heads as one read of everything.
    static func responseHead(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= 2 else { return }
        let splits = Int(bytes[0]), responses = Int(bytes[1])
        let stream = Array(bytes[2...])
        var whole = RawHeadScanner()
        let expected = whole.take(stream)
        for head in expected {
            require((0...999).contains(head.code), "code \(head.code)")
            require(!head.reason.contains(0x0A), "a reason with a line feed")
            for field in head.fields {
                require(!field.name.contains(0x0A) && !field.name.contains(UInt8(ascii: ":")), "name \(field.name)")
                require(!field.value.contains(0x0A), "a value with a line feed")
                for edge in [field.value.first, field.value.last] {
                    require(edge != 0x20 && edge != 0x09, "an untrimmed value \(field.value)")
                }
            }
            require(RawResponseHead.parse(head.bytes[...]) == head, "a head written back parses differently: \(head.bytes)")
        }
        require(expected.count <= stream.count / 2, "\(expected.count) heads in \(stream.count) bytes")
        // The same stream in reads of 1 to 16 bytes.
        var scanner = RawHeadScanner()
        var heads: [RawResponseHead] = []
        var offset = 0, step = splits
        while offset < stream.count {
            let size = step & 15 + 1
            step = step &* 31 &+ 7
            heads += scanner.take(stream[offset..<min(stream.count, offset + size)])
            offset += size
        }
        require(heads == expected, "split reads found \(heads.count) heads, one read \(expected.count)")
        require(scanner.inBody == whole.inBody && scanner.pending == whole.pending, "split reads end in another state")
        // After a response ends, the scanner reads the next bytes as a new scanner would.
        for _ in 0..<(responses % 4) {
            scanner.responseEnded()
            require(scanner.take(stream) == expected && scanner.pending == whole.pending, "responseEnded() left state behind")
        }
    }

    // MARK: IP addresses

    /// The address parser the broker's SSRF check and the cookie jar use agrees with glibc's
    /// inet_pton on text without brackets or a zone; an address's text parses back to it; an
    /// IPv4-mapped IPv6 address is as public as its IPv4 address.
    static func ipAddress(_ bytes: UnsafeRawBufferPointer) {
        let input = text(bytes)
        let parsed = IPAddress(input)
        if let parsed {
            require(parsed.bytes.count == 4 || parsed.bytes.count == 16, "\(parsed.bytes.count) bytes")
            require(IPAddress(parsed.description) == parsed, "\(parsed) does not parse back")
            require(IPAddress("[\(parsed.description)]") == parsed, "[\(parsed)] does not parse")
            if parsed.bytes.count == 4 {
                let mapped = IPAddress("::ffff:\(parsed.description)")
                require(mapped?.isPublic == parsed.isPublic, "::ffff:\(parsed) is judged differently")
            }
        }
        guard !input.contains("["), !input.contains("%"), !input.utf8.contains(0) else { return }
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, input, &v4) == 1 {
            let expected = withUnsafeBytes(of: &v4) { Array($0) }
            require(parsed?.bytes == expected, "inet_pton reads \(input) as \(expected), the broker as \(parsed as Any)")
        } else if inet_pton(AF_INET6, input, &v6) == 1 {
            let expected = withUnsafeBytes(of: &v6) { Array($0) }
            require(parsed?.bytes == expected, "inet_pton reads \(input) as \(expected), the broker as \(parsed as Any)")
        } else {
            require(parsed == nil, "the broker reads \(input) as \(parsed!), inet_pton refuses it")
        }
    }
}

let selectedTarget: @Sendable (UnsafeRawBufferPointer) -> Void = {
    let name = getenv("BRIDGE_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    guard let target = FuzzTargets.all.first(where: { $0.name == name }) else {
        print("set BRIDGE_FUZZ_TARGET to one of: \(FuzzTargets.all.map(\.name).joined(separator: " "))")
        exit(2)
    }
    return target.run
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    selectedTarget(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
