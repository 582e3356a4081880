import BridgeCore
import Foundation
import NIOPosix

/// Resolves host names with getaddrinfo on NIO's blocking thread pool.
struct HostResolver: Sendable {
    /// The textual addresses of `host`, IPv4 first.
    func resolve(_ host: String) async throws -> [String] {
        let addresses: [String] = try await NIOThreadPool.singleton.runIfActive {
            var hints = addrinfo()
            hints.ai_family = AF_UNSPEC
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var result: UnsafeMutablePointer<addrinfo>?
            let status = getaddrinfo(host, nil, &hints, &result)
            guard status == 0, let first = result else {
                throw BridgeError(.network, "cannot resolve \(host): \(String(cString: gai_strerror(status)))")
            }
            defer { freeaddrinfo(first) }
            var found: [String] = []
            var cursor: UnsafeMutablePointer<addrinfo>? = first
            while let entry = cursor {
                var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
                if entry.pointee.ai_family == AF_INET {
                    var address = entry.pointee.ai_addr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                    inet_ntop(AF_INET, &address, &buffer, socklen_t(buffer.count))
                } else if entry.pointee.ai_family == AF_INET6 {
                    var address = entry.pointee.ai_addr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
                    inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count))
                }
                let text = String(cString: buffer)
                if !text.isEmpty, !found.contains(text) { found.append(text) }
                cursor = entry.pointee.ai_next
            }
            return found
        }
        guard !addresses.isEmpty else { throw BridgeError(.network, "\(host) has no addresses") }
        return addresses.filter { !$0.contains(":") } + addresses.filter { $0.contains(":") }
    }
}
