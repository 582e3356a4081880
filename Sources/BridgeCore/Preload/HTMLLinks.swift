import Foundation

/// The resources a page declares with `<link rel="preload">`, `modulepreload` and `prefetch`,
/// read from its HTML without a DOM.
///
/// A small tokenizer, enough for what the HTML standard says about these tags: tag and
/// attribute names are case-insensitive, values may be double-quoted, single-quoted or bare,
/// `rel` is a space-separated token list, character references in values are decoded,
/// comments and the raw text of `<script>`, `<style>`, `<textarea>` and `<title>` are skipped,
/// and the first `<base href>` sets the URL relative hrefs resolve against.
public enum HTMLLinks {
    /// One link found in a page.
    public struct Link: Sendable, Equatable {
        /// The href resolved to an absolute URL (nil when it cannot be resolved).
        public var url: String?
        /// The href as written (references decoded).
        public var href: String
        /// `preload`, `modulepreload` or `prefetch`.
        public var rel: String
        /// The `fetchpriority` attribute, lower-cased, if any.
        public var fetchPriority: String?

        /// How urgent the link is: preloads before prefetches (which are for later
        /// navigations), moved by `fetchpriority` high or low.
        public var priority: Int {
            let base = rel == "prefetch" ? 0 : 2
            switch fetchPriority {
            case "high": return base + 1
            case "low": return base - 1
            default: return base
            }
        }
    }

    static let relations = ["preload", "modulepreload", "prefetch"]
    static let rawTextElements: Set<String> = ["script", "style", "textarea", "title"]

    /// The preload, modulepreload and prefetch links of `html`, in document order, hrefs resolved
    /// against the page's `<base href>` (itself resolved against `pageURL`) or `pageURL`.
    public static func extract(html: String, pageURL: String) -> [Link] {
        var scanner = TagScanner(bytes: Array(html.utf8))
        var base: String?
        var links: [Link] = []
        while let tag = scanner.nextTag() {
            switch tag.name {
            case "base" where base == nil:
                if let href = tag.attributes["href"] { base = resolve(href, against: pageURL) }
            case "link":
                let tokens = (tag.attributes["rel"] ?? "").lowercased().split(whereSeparator: { " \t\n\r\u{0C}".contains($0) })
                guard let rel = relations.first(where: { tokens.contains(Substring($0)) }),
                      let href = tag.attributes["href"]?.trimmingCharacters(in: .whitespacesAndNewlines), !href.isEmpty else { continue }
                links.append(Link(url: nil, href: href, rel: rel, fetchPriority: tag.attributes["fetchpriority"]?.lowercased()))
            default:
                if rawTextElements.contains(tag.name) { scanner.skipRawText(until: tag.name) }
            }
        }
        // The base applies to every link, also those before it, as in a parsed document.
        let documentBase = base ?? pageURL
        return links.map { link in
            var link = link
            link.url = resolve(link.href, against: documentBase)
            return link
        }
    }

    /// `href` resolved against the absolute URL `base`, without its fragment; nil when either
    /// cannot be parsed.
    public static func resolve(_ href: String, against base: String) -> String? {
        guard let baseURL = URL(string: base), let url = URL(string: href, relativeTo: baseURL)?.absoluteURL,
              var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return nil }
        components.fragment = nil
        return components.string
    }
}

/// Finds start tags in HTML bytes, one at a time.
struct TagScanner {
    struct Tag {
        var name: String
        var attributes: [String: String]
    }

    let bytes: [UInt8]
    var position = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func nextTag() -> Tag? {
        while let open = find(UInt8(ascii: "<"), from: position) {
            position = open + 1
            if startsWith("!--", at: position) {
                position = find("-->", from: position + 3).map { $0 + 3 } ?? bytes.count
                continue
            }
            guard position < bytes.count, isLetter(bytes[position]) else { continue }
            let name = readName().lowercased()
            var attributes: [String: String] = [:]
            while true {
                skipSpace()
                // A tag cut off by the end of the document is dropped, as the HTML standard says.
                guard position < bytes.count else { return nil }
                if bytes[position] == UInt8(ascii: ">") { position += 1; break }
                if bytes[position] == UInt8(ascii: "/") { position += 1; continue }
                let key = readName().lowercased()
                if key.isEmpty { position += 1; continue }
                skipSpace()
                var value = ""
                if position < bytes.count, bytes[position] == UInt8(ascii: "=") {
                    position += 1
                    skipSpace()
                    value = CharacterReferences.decode(readValue())
                }
                // The first occurrence of an attribute wins, as in the HTML standard.
                if attributes[key] == nil { attributes[key] = value }
            }
            return Tag(name: name, attributes: attributes)
        }
        position = bytes.count
        return nil
    }

    /// Moves past the end tag of a raw-text element.
    mutating func skipRawText(until name: String) {
        let end = Array("</\(name)".utf8)
        while let open = find(UInt8(ascii: "<"), from: position) {
            position = open + 1
            if open + end.count <= bytes.count, bytes[open..<(open + end.count)].map(lowercase).elementsEqual(end) { return }
        }
        position = bytes.count
    }

    private mutating func readName() -> String {
        let start = position
        while position < bytes.count, !isSpace(bytes[position]), !"/>=".utf8.contains(bytes[position]) { position += 1 }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    private mutating func readValue() -> String {
        guard position < bytes.count else { return "" }
        let quote = bytes[position]
        if quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") {
            let end = find(quote, from: position + 1) ?? bytes.count
            defer { position = min(bytes.count, end + 1) }
            return String(decoding: bytes[(position + 1)..<end], as: UTF8.self)
        }
        let start = position
        while position < bytes.count, !isSpace(bytes[position]), bytes[position] != UInt8(ascii: ">") { position += 1 }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    private mutating func skipSpace() {
        while position < bytes.count, isSpace(bytes[position]) { position += 1 }
    }

    private func find(_ byte: UInt8, from start: Int) -> Int? {
        guard start < bytes.count else { return nil }
        return bytes[start...].firstIndex(of: byte)
    }

    private func find(_ text: String, from start: Int) -> Int? {
        var index = start
        while let candidate = find(text.utf8.first!, from: index) {
            if startsWith(text, at: candidate) { return candidate }
            index = candidate + 1
        }
        return nil
    }

    private func startsWith(_ text: String, at index: Int) -> Bool {
        let pattern = Array(text.utf8)
        return index + pattern.count <= bytes.count && bytes[index..<(index + pattern.count)].elementsEqual(pattern)
    }

    private func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0C || byte == 0x0D }
    private func isLetter(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) }
    private func lowercase(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte + 0x20 : byte }
}

/// Decodes the character references an attribute value may hold: the few named ones URLs use
/// and all numeric ones.
enum CharacterReferences {
    static let named = ["amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'", "nbsp": "\u{A0}"]

    static func decode(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var result = ""
        var rest = Substring(text)
        while let amp = rest.firstIndex(of: "&") {
            result += rest[..<amp]
            let after = rest[rest.index(after: amp)...]
            if let semicolon = after.prefix(12).firstIndex(of: ";"), let decoded = reference(after[..<semicolon]) {
                result += decoded
                rest = after[after.index(after: semicolon)...]
            } else {
                result += "&"
                rest = after
            }
        }
        return result + rest
    }

    private static func reference(_ name: Substring) -> String? {
        if name.hasPrefix("#x") || name.hasPrefix("#X") {
            return UInt32(name.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init).map { String(Character($0)) }
        }
        if name.hasPrefix("#") {
            return UInt32(name.dropFirst()).flatMap(Unicode.Scalar.init).map { String(Character($0)) }
        }
        return named[String(name)]
    }
}
