import Foundation

/// The public suffix list (publicsuffix.org), which keeps a cookie from being set for a whole
/// registry such as `com` or `co.uk`, and defines a URL's site for `SameSite`.
///
/// The broker reads Debian's copy (package `publicsuffix`); without it, a small built-in list of
/// the most common suffixes stands in, and the broker logs that it does.
public struct PublicSuffixList: Sendable {
    private var rules: Set<String> = []
    private var wildcards: Set<String> = []
    private var exceptions: Set<String> = []
    /// Where the rules came from: a file path, or `built-in`.
    public let source: String

    /// Debian's copy of the list.
    public static let debianPath = "/usr/share/publicsuffix/public_suffix_list.dat"

    /// The list the broker uses: Debian's file, else the built-in fallback.
    public static let shared: PublicSuffixList = {
        if let text = try? String(contentsOfFile: debianPath, encoding: .utf8) {
            return PublicSuffixList(text: text, source: debianPath)
        }
        return builtIn
    }()

    /// A small list of common suffixes, used when Debian's file is missing.
    public static let builtIn = PublicSuffixList(text: """
        com\norg\nnet\nedu\ngov\nmil\nint\nio\nde\nfr\nnl\nit\nes\nch\nat\nbe\nse\nno\ndk\nfi\npl\nru\ncn\nin\nbr\nca\neu\ninfo\nbiz\ndev\napp
        uk\nco.uk\norg.uk\nac.uk\ngov.uk\nltd.uk\nplc.uk\nme.uk\nnet.uk
        jp\nco.jp\nne.jp\nor.jp\nac.jp\ngo.jp\nau\ncom.au\nnet.au\norg.au\nedu.au\ngov.au
        nz\nco.nz\norg.nz\nnet.nz\nza\nco.za\nkr\nco.kr\ncom.br\ncom.cn\nco.in\nus\nck\n*.ck\n!www.ck
        github.io\ngitlab.io\nblogspot.com\nappspot.com\nherokuapp.com\nnetlify.app\nvercel.app\npages.dev\nworkers.dev
        """, source: "built-in")

    /// Parses the list's text format: one rule per line, `//` comments, `*.` wildcards and `!` exceptions.
    public init(text: String, source: String) {
        self.source = source
        // Byte by byte: the list has ~10 000 rules and is read at start-up.
        for rawLine in text.utf8.split(separator: UInt8(ascii: "\n")) {
            guard let token = rawLine.split(whereSeparator: { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }).first,
                !token.starts(with: "//".utf8)
            else { continue }
            let ascii = token.allSatisfy { $0 < 0x80 }
            let text = String(decoding: token, as: UTF8.self)
            let rule = ascii ? text.lowercased() : Punycode.asciiDomain(text.lowercased())
            if rule.hasPrefix("!") {
                exceptions.insert(String(rule.dropFirst()))
            } else if rule.hasPrefix("*.") {
                wildcards.insert(String(rule.dropFirst(2)))
            } else {
                rules.insert(rule)
            }
        }
    }

    /// The public suffix of `host` (lower-case, ASCII): the longest matching rule, or the last
    /// label when none matches (the list's default rule `*`).
    public func publicSuffix(of host: String) -> String {
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count > 1 else { return host }
        for start in labels.indices {
            let candidate = labels[start...].joined(separator: ".")
            if exceptions.contains(candidate) { return labels[(start + 1)...].joined(separator: ".") }
            if rules.contains(candidate) { return candidate }
            if start + 1 < labels.count, wildcards.contains(labels[(start + 1)...].joined(separator: ".")) { return candidate }
        }
        return String(labels.last!)
    }

    /// Whether `domain` is itself a public suffix.
    public func isPublicSuffix(_ domain: String) -> Bool {
        publicSuffix(of: domain) == domain
    }

    /// The public suffix and one more label (eTLD+1), or nil when `host` is a public suffix.
    public func registrableDomain(of host: String) -> String? {
        let suffix = publicSuffix(of: host)
        guard host.count > suffix.count else { return nil }
        let head = host.dropLast(suffix.count + 1)
        let label = head.split(separator: ".", omittingEmptySubsequences: false).last ?? head
        return "\(label).\(suffix)"
    }
}
