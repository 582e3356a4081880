// Routes under /cookies/ for the cookie jar's tests (broker integration tests, tests/protocol,
// and the browser tests that compare the shim with the browser's own networking):
//
//   POST /cookies/login[?user=NAME]   sets `session=s-NAME-N; Path=/; HttpOnly; SameSite=Lax`
//                                     (a session cookie), `user=NAME; Path=/` (script-visible,
//                                     session) and `remember=NAME; Path=/; Max-Age=86400`
//                                     (persistent); answers {"user": NAME}
//   POST /cookies/logout              deletes all three (Max-Age=0); answers {"user": null}
//   GET  /cookies/whoami              {"user": NAME or null, "remembered": NAME or null,
//                                     "cookie": the Cookie header or null}; `user` comes from a
//                                     session issued by this origin
//   ANY  /cookies/echo                the request as the origin saw it: {"method", "cookie",
//                                     "headers": {lower-case name: value}} (identity headers:
//                                     user-agent, accept, accept-language, referer, origin)
//   ANY  /cookies/set?c=LINE&c=LINE   sends each LINE as a Set-Cookie header, answers as /echo
//   ANY  /cookies/redirect?hops=N&c=LINE   sets the lines, then 302 to
//                                     /cookies/redirect?hops=N-1 (each hop sets `hopN=1; Path=/`);
//                                     at 0 answers as /echo; `to=URL` redirects the last hop there
//
// Every /cookies/ response carries CORS headers for the request's Origin with credentials, and
// an OPTIONS preflight is answered 204, so a page on another origin can call them with the
// browser's own fetch too. Responses are `Cache-Control: no-store`.
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// Sessions the origin issued, process-wide.
let originSessions = Mutex<[String: String]>([:])

extension OriginHandler {
    func respondCookies(_ context: ChannelHandlerContext, to request: OriginRequest, route: String) {
        let head = request.head
        var extra: [(String, String)] = [("Cache-Control", "no-store")]
        if let origin = head.headers["origin"].first {
            extra += [("Access-Control-Allow-Origin", origin), ("Access-Control-Allow-Credentials", "true"), ("Vary", "Origin")]
        }
        if head.method == .OPTIONS {
            extra += [
                ("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE"),
                ("Access-Control-Allow-Headers", head.headers["access-control-request-headers"].first ?? "content-type"),
            ]
            return send(context, status: .noContent, type: "text/plain", body: [], head: head, extra: extra)
        }
        let items = URLComponents(string: head.uri)?.queryItems ?? []
        let lines = items.filter { $0.name == "c" }.compactMap(\.value)
        let cookie = head.headers["cookie"].isEmpty ? nil : head.headers["cookie"].joined(separator: "; ")
        switch route {
        case "login":
            let user = request.query["user"] ?? "alice"
            let session = originSessions.withLock { sessions in
                let id = "s-\(user)-\(sessions.count + 1)"
                sessions[id] = user
                return id
            }
            extra += [
                ("Set-Cookie", "session=\(session); Path=/; HttpOnly; SameSite=Lax"), ("Set-Cookie", "user=\(user); Path=/"),
                ("Set-Cookie", "remember=\(user); Path=/; Max-Age=86400"),
            ]
            send(context, status: .ok, type: "application/json", body: json(["user": user]), head: head, extra: extra)
        case "logout":
            extra += ["session", "user", "remember"].map { ("Set-Cookie", "\($0)=; Path=/; Max-Age=0") }
            send(context, status: .ok, type: "application/json", body: json(["user": NSNull()]), head: head, extra: extra)
        case "whoami":
            let pairs = Self.cookiePairs(cookie)
            let user = pairs["session"].flatMap { id in originSessions.withLock { $0[id] } }
            let body: [String: Any] = ["user": user ?? NSNull(), "remembered": pairs["remember"] ?? NSNull(), "cookie": cookie ?? NSNull()]
            send(context, status: .ok, type: "application/json", body: json(body), head: head, extra: extra)
        case "redirect":
            let hops = Int(request.query["hops"] ?? "") ?? 0
            extra += lines.map { ("Set-Cookie", $0) }
            guard hops > 0 else { return send(context, status: .ok, type: "application/json", body: echo(request, cookie), head: head, extra: extra) }
            extra.append(("Set-Cookie", "hop\(hops)=1; Path=/"))
            var next = "/cookies/redirect?hops=\(hops - 1)"
            if let to = request.query["to"] {
                next += "&to=" + (to.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
                if hops == 1 { next = to }
            }
            extra.append(("Location", next))
            send(context, status: .found, type: "text/plain", body: [], head: head, extra: extra)
        case "set":
            extra += lines.map { ("Set-Cookie", $0) }
            send(context, status: .ok, type: "application/json", body: echo(request, cookie), head: head, extra: extra)
        case "echo":
            send(context, status: .ok, type: "application/json", body: echo(request, cookie), head: head, extra: extra)
        default:
            send(context, status: .notFound, type: "text/plain", body: Array("no cookie route \(route)".utf8), head: head, extra: extra)
        }
    }

    private func echo(_ request: OriginRequest, _ cookie: String?) -> [UInt8] {
        var headers: [String: String] = [:]
        for (name, value) in request.head.headers {
            let key = name.lowercased()
            headers[key] = headers[key].map { "\($0), \(value)" } ?? value
        }
        return json(["method": request.head.method.rawValue, "cookie": cookie ?? NSNull(), "headers": headers])
    }

    private func json(_ object: [String: Any]) -> [UInt8] {
        (try? Array(JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))) ?? []
    }

    static func cookiePairs(_ header: String?) -> [String: String] {
        var pairs: [String: String] = [:]
        for part in (header ?? "").split(separator: ";") {
            let pair = part.trimmingCharacters(in: .whitespaces)
            guard let equals = pair.firstIndex(of: "=") else { continue }
            pairs[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
        }
        return pairs
    }
}
