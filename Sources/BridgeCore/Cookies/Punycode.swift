/// Punycode (RFC 3492) encoding of domain labels, so the public suffix list's Unicode rules
/// match the ASCII (`xn--`) hosts in URLs.
enum Punycode {
    /// The label in its ASCII form: itself when it is ASCII, else `xn--` and its Punycode.
    static func asciiLabel(_ label: Substring) -> String {
        if label.unicodeScalars.allSatisfy(\.isASCII) { return String(label) }
        return "xn--" + encode(Array(label.lowercased().unicodeScalars.map(\.value)))
    }

    /// The domain with every label in ASCII form.
    static func asciiDomain(_ domain: String) -> String {
        if domain.utf8.allSatisfy({ $0 < 0x80 }) { return domain }
        return domain.split(separator: ".", omittingEmptySubsequences: false).map(asciiLabel).joined(separator: ".")
    }

    private static let base = 36, tMin = 1, tMax = 26, skew = 38, damp = 700, initialBias = 72, initialN = 128

    static func encode(_ input: [UInt32]) -> String {
        var output = input.filter { $0 < 0x80 }.map { Character(Unicode.Scalar(UInt8($0))) }
        let basicCount = output.count
        var handled = basicCount
        if basicCount > 0 { output.append("-") }
        var n = initialN, delta = 0, bias = initialBias
        while handled < input.count {
            let m = Int(input.filter { Int($0) >= n }.min()!)
            delta += (m - n) * (handled + 1)
            n = m
            for scalar in input {
                let code = Int(scalar)
                if code < n { delta += 1 }
                if code == n {
                    var q = delta
                    var k = base
                    while true {
                        let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                        if q < t { break }
                        output.append(digit(t + (q - t) % (base - t)))
                        q = (q - t) / (base - t)
                        k += base
                    }
                    output.append(digit(q))
                    bias = adapt(delta, handled + 1, handled == basicCount)
                    delta = 0
                    handled += 1
                }
            }
            delta += 1
            n += 1
        }
        return String(output)
    }

    private static func digit(_ value: Int) -> Character {
        Character(Unicode.Scalar(UInt8(value < 26 ? value + 97 : value + 22)))
    }

    private static func adapt(_ delta: Int, _ count: Int, _ first: Bool) -> Int {
        var delta = first ? delta / damp : delta / 2
        delta += delta / count
        var k = 0
        while delta > ((base - tMin) * tMax) / 2 {
            delta /= base - tMin
            k += base
        }
        return k + (base - tMin + 1) * delta / (delta + skew)
    }
}
