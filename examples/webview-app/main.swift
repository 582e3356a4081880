// A host app with a real WebKit view: its page calls a native Swift handler with a reply and
// loads resources through the in-process broker (no WebSocket, no port).
//
//   make webview-app                      (needs a display; under xvfb-run for a headless run)
//   WEBVIEW_APP_EXIT=1 xvfb-run -a .build/debug/WebViewAppExample   prints the page's result, exits
import BridgeCore
import BridgeServer
import BridgeTestOrigin
import BridgeWebView
import CWebKitGTK
import Foundation

// A local origin to load resources from (the demo origin of `make run`), on a free port.
let origin = try await LocalOrigin.start()
var configuration = BrokerServerConfiguration()
configuration.cacheDirectory = NSTemporaryDirectory() + "webview-app-\(getpid())"
configuration.alsoAllowURLs = ["http://127.0.0.1:\(origin.port)/*"]
// The broker's handlers and cache; not started, so it listens on no port: only the view reaches it.
let server = BrokerServer(configuration: configuration)

// The app's own handler: JSON body in, JSON reply out; a BridgeError rejects the page's Promise.
server.broker.register("greet") { call in
    guard let name = call.body["name"]?.stringValue, !name.isEmpty else {
        throw BridgeError(.badRequest, "greet needs a non-empty \"name\"")
    }
    return ["greeting": .string("Hello, \(name)!"), "from": "WebViewAppExample"]
}

let page = """
    <!doctype html><meta charset="utf-8"><title>WebView host app</title>
    <h1>WebView host app</h1><pre id="out">…</pre>
    <script>
    (async () => {
      // A native handler with a reply, as in WKWebView.
      const greeting = await window.webkit.messageHandlers.greet.postMessage({ name: "WebKit" });
      let refused;
      try { await window.webkit.messageHandlers.greet.postMessage({}); } catch (error) { refused = error.message; }
      // Resources through the broker: fetch() is bridged by the injected shim.
      const json = await (await fetch("/json")).json();
      const bytes = (await (await fetch("/bytes/100000")).arrayBuffer()).byteLength;
      window.appResult = { greeting, refused, json, bytes, transport: BridgeBroker.transport };
      document.getElementById("out").textContent = JSON.stringify(window.appResult, null, 2);
    })().catch((error) => { window.appResult = { error: String(error) }; });
    </script>
    """

let shimPath = (BrokerServerConfiguration.findWebRoot() ?? ".") + "/bridge-js/bridge.js"
guard let shim = try? String(contentsOfFile: shimPath, encoding: .utf8) else { fatalError("no \(shimPath)") }
let exitWhenDone = ProcessInfo.processInfo.environment["WEBVIEW_APP_EXIT"] == "1"

// GTK and WebKit live on the main loop's thread: everything that touches them runs in this closure
// or in MainLoop.perform.
let opened = await MainLoop.runApplication {
    let view = BridgeWebView(broker: server.broker, configuration: BridgeWebViewConfiguration(shimSource: shim))
    let window = gtk_window_new()
    gtk_window_set_title(bridge_window(window), "WebView host app")
    gtk_window_set_default_size(bridge_window(window), 800, 600)
    gtk_window_set_child(bridge_window(window), view.widget)
    gtk_window_present(bridge_window(window))
    view.loadHTML(page, baseURL: origin.url("/"))
    guard exitWhenDone else { return }
    Task {
        while true {
            try await Task.sleep(for: .milliseconds(50))
            if let result = await view.evaluate("window.appResult"), result != "null" {
                print(result)
                MainLoop.quit()
                return
            }
        }
    }
}
guard opened else { fatalError("no display: run under xvfb-run or set DISPLAY") }
await server.shutdown()
await origin.stop()
