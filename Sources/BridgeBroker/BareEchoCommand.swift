import ArgumentParser
import BridgeServer
import BridgeWebSocket
import Foundation

/// `bridge-broker bare-echo`: the bare libwebsockets echo on its own, for the conformance baseline.
struct BareEchoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bare-echo",
        abstract: "Run the bare libwebsockets echo server (a conformance and benchmark baseline).",
        shouldDisplay: false
    )

    func run() async throws {
        let server = BareEchoServer()
        try server.start()
        FileHandle.standardOutput.write(Data("bare echo listening on 127.0.0.1:\(server.listeningPort)\n".utf8))
        await BrokerServer.waitForTerminationSignal()
        server.stop()
    }
}
