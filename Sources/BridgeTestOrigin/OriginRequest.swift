import Foundation
import NIOHTTP1

/// One request the origin received, whole.
struct OriginRequest {
    let head: HTTPRequestHead
    let path: String
    let body: [UInt8]

    var query: [String: String] {
        guard let components = URLComponents(string: head.uri) else { return [:] }
        var result: [String: String] = [:]
        for item in components.queryItems ?? [] { result[item.name] = item.value ?? "" }
        return result
    }

    /// What `/echo` answers: the request as the origin saw it.
    var echoJSON: [UInt8] {
        let headers = head.headers.map { ["\($0.name)", "\($0.value)"] }
        let object: [String: Any] = [
            "method": head.method.rawValue,
            "uri": head.uri,
            "headers": headers,
            "bodyBytes": body.count,
            "bodyHash": String(fnv1a(body), radix: 16),
            "bodyFNV32": fnv1a32(body),
            "bodyText": body.count <= 65536 ? String(decoding: body, as: UTF8.self) : "",
        ]
        return (try? Array(JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))) ?? []
    }

    /// "hello gzip\n" compressed with gzip.
    static let gzipHello: [UInt8] = [
        0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0xff, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x57,
        0x48, 0xaf, 0xca, 0x2c, 0xe0, 0x02, 0x00, 0x39, 0x7c, 0x63, 0x56, 0x0b, 0x00, 0x00, 0x00,
    ]
}
