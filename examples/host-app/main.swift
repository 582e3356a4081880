// A host application that embeds the broker and registers native handlers of its own.
//
//   swift run HostAppExample            (or: make host-app)
//   open http://127.0.0.1:8787/examples/host-app.html
//   python3 examples/headless_client.py greet '{"name": "Ada"}'
import BridgeCore
import BridgeServer
import Foundation

var configuration = BrokerServerConfiguration()
if let port = ProcessInfo.processInfo.environment["PORT"].flatMap(Int.init) { configuration.port = port }
let server = BrokerServer(configuration: configuration)

// JSON body in, JSON reply out; a BridgeError becomes the protocol error the page sees.
server.broker.register("greet") { call in
    guard let name = call.body["name"]?.stringValue, !name.isEmpty else {
        throw BridgeError(.badRequest, "greet needs a non-empty \"name\"")
    }
    return ["greeting": .string("Hello, \(name)!"), "from": "HostAppExample"]
}

// Events before the reply, and cancellation: when the page aborts, the task is cancelled and
// Task.sleep throws, so the countdown stops.
server.broker.register("countdown") { call in
    let from = call.body["from"]?.intValue ?? 3
    guard (1...60).contains(from) else { throw BridgeError(.badRequest, "\"from\" must be 1 to 60") }
    for value in stride(from: from, through: 1, by: -1) {
        await call.sendEvent("tick", ["remaining": .integer(value)])
        try await Task.sleep(for: .milliseconds(500))
    }
    return ["done": true]
}

try server.start()
print("host app listening on http://127.0.0.1:\(server.port)/examples/host-app.html (handlers: \(server.broker.handlerNames.joined(separator: ", ")))")
await BrokerServer.waitForTerminationSignal()
await server.shutdown()
