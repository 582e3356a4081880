import Foundation

/// A minimal multipart/form-data parser: enough for the origin to prove an upload arrived intact.
enum Multipart {
    struct Part {
        var name: String
        var filename: String?
        var contentType: String?
        var body: [UInt8]
    }

    /// Splits `body` by the boundary named in `contentType`; nil when it is not multipart.
    static func parse(_ body: [UInt8], contentType: String) -> [Part]? {
        guard contentType.lowercased().hasPrefix("multipart/form-data"),
              let range = contentType.range(of: "boundary=") else { return nil }
        var boundary = String(contentType[range.upperBound...])
        if let end = boundary.firstIndex(of: ";") { boundary = String(boundary[..<end]) }
        boundary = boundary.trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
        let delimiter = Array("--\(boundary)".utf8)
        var parts: [Part] = []
        var index = find(delimiter, in: body, from: 0)
        while let start = index {
            let afterDelimiter = start + delimiter.count
            if body.count >= afterDelimiter + 2, body[afterDelimiter] == UInt8(ascii: "-"), body[afterDelimiter + 1] == UInt8(ascii: "-") { break }
            let headerStart = afterDelimiter + 2
            guard let headerEnd = find(Array("\r\n\r\n".utf8), in: body, from: headerStart),
                  let next = find(Array("\r\n".utf8) + delimiter, in: body, from: headerEnd + 4) else { return nil }
            let headers = String(decoding: body[headerStart..<headerEnd], as: UTF8.self)
            var part = Part(name: "", filename: nil, contentType: nil, body: Array(body[(headerEnd + 4)..<next]))
            for line in headers.components(separatedBy: "\r\n") {
                let lower = line.lowercased()
                if lower.hasPrefix("content-disposition:") {
                    part.name = parameter("name", in: line) ?? ""
                    part.filename = parameter("filename", in: line)
                } else if lower.hasPrefix("content-type:") {
                    part.contentType = line.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) }
                }
            }
            parts.append(part)
            index = next + 2
        }
        return parts
    }

    /// The JSON the origin answers: fields by name, files with name, type, size and FNV-1a 32.
    static func describe(_ parts: [Part]) -> [UInt8] {
        var fields: [String: String] = [:]
        var files: [String: [String: Any]] = [:]
        for part in parts {
            if let filename = part.filename {
                files[part.name] = ["filename": filename, "type": part.contentType ?? "", "size": part.body.count, "fnv32": fnv1a32(part.body)]
            } else {
                fields[part.name] = String(decoding: part.body, as: UTF8.self)
            }
        }
        return (try? Array(JSONSerialization.data(withJSONObject: ["fields": fields, "files": files], options: [.sortedKeys]))) ?? []
    }

    private static func parameter(_ name: String, in line: String) -> String? {
        guard let range = line.range(of: "; \(name)=\"") ?? line.range(of: ";\(name)=\"") else { return nil }
        let rest = line[range.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return String(rest[..<end])
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count, start <= haystack.count - needle.count else { return nil }
        var index = start
        search: while index <= haystack.count - needle.count {
            for offset in 0..<needle.count where haystack[index + offset] != needle[offset] {
                index += 1
                continue search
            }
            return index
        }
        return nil
    }
}

/// The FNV-1a 32-bit hash, as unsigned decimal: quick to compute in a page with Math.imul.
public func fnv1a32(_ bytes: some Sequence<UInt8>) -> UInt32 {
    var hash: UInt32 = 0x811c_9dc5
    for byte in bytes {
        hash ^= UInt32(byte)
        hash = hash &* 0x0100_0193
    }
    return hash
}
