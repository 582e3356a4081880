import BridgeCore
import CWebKitGTK
import Foundation

/// A WebKit web view whose pages talk to an in-process `Broker` through WebKit's script message
/// handlers: the WKWebView transport of docs/PROTOCOL.md on WebKit itself, with no WebSocket.
///
/// The user content manager injects the shim at document start in every frame whose document the
/// configuration allows, and registers a script message handler with reply named `bridge`: each
/// frame's shim finds it and sends its envelopes through it, and the view feeds them to a
/// `BrokerConnection` of that frame, marked as a page connection. Frames for the top frame go back
/// through `evaluate_javascript`, for any other frame in the replies to its shim's waiting message
/// (`PageSink`). Every other handler name (`nativeHandlers`) is a script
/// message handler with reply as well, so `window.webkit.messageHandlers.NAME.postMessage(body)`
/// returns a Promise answered by the broker's handler of that name, as in WKWebView.
///
/// Create, use and release it on the main thread, the thread running the GLib main loop
/// (`MainLoop`); the broker's work runs in tasks and reaches the view only through `MainLoop`.
public final class BridgeWebView: @unchecked Sendable {
    /// The broker the view's pages talk to.
    public let broker: Broker
    /// The configuration it was made with.
    public let configuration: BridgeWebViewConfiguration
    /// The `WebKitWebView`.
    public let webView: UnsafeMutablePointer<WebKitWebView>
    let manager: OpaquePointer
    let host: HostConnection
    /// The connections of the frames whose shim said `open`, by connection number.
    private var pages: [Int: (connection: BrokerConnection, sink: PageSink)] = [:]
    /// The top frame's connection number.
    private var topSession: Int?
    private var sessions = 0
    private var retained: Unmanaged<BridgeWebView>?
    var nativeTargets: [NativeHandlerTarget] = []
    /// Resources WebKit itself is loading (started, not yet finished).
    public internal(set) var resourcesInFlight = 0

    /// Called on the main thread with WebKit's estimated load progress, 0 ... 1.
    public var onLoadProgress: ((Double) -> Void)?
    /// Called on the main thread for each load event (started, redirected, committed, finished).
    public var onLoadEvent: ((WebKitLoadEvent) -> Void)?
    /// Called on the main thread with the events of the host's subscriptions (`subscribeProgress`).
    public var onHostEvent: ((String, JSONValue) -> Void)? {
        get { events.handler }
        set { events.handler = newValue }
    }
    private let events: EventRelay
    /// Called on the main thread with the URI of each resource WebKit itself loads (the
    /// document, and subresources the shim does not bridge).
    public var onResourceLoad: ((String) -> Void)?
    /// Called on the main thread when a load fails, with WebKit's message.
    public var onLoadFailed: ((String) -> Void)?
    /// Called on the main thread when the top frame's page opened its bridge connection.
    public var onPageConnection: ((BrokerConnection) -> Void)?

    /// Makes a web view in `session` (a new ephemeral network session when nil) whose pages talk
    /// to `broker`. Main thread only, after GTK is initialised.
    public init(broker: Broker, configuration: BridgeWebViewConfiguration, session: OpaquePointer? = nil) {
        MainLoop.assertMain()
        self.broker = broker
        self.configuration = configuration
        let events = EventRelay()
        host = HostConnection(broker: broker, info: ConnectionInfo(origin: nil, peer: "webkit host")) { name, body in
            events.forward(name, body)
        }
        self.events = events
        manager = webkit_user_content_manager_new()
        let networkSession = session ?? webkit_network_session_new_ephemeral()
        webView = bridge_web_view_new(networkSession, manager)
        if session == nil { g_object_unref(UnsafeMutableRawPointer(networkSession)) }
        g_object_ref_sink(UnsafeMutableRawPointer(webView))
        // Signal handlers hold the view unretained; the view keeps itself alive until `close()`.
        retained = Unmanaged.passRetained(self)
        installScripts()
        connectSignals()
    }

    /// The page's current URI.
    public var uri: String? {
        MainLoop.assertMain()
        return webkit_web_view_get_uri(webView).map { String(cString: $0) }
    }

    /// WebKit's estimated load progress of the current load, 0 ... 1.
    public var estimatedLoadProgress: Double {
        MainLoop.assertMain()
        return webkit_web_view_get_estimated_load_progress(webView)
    }

    /// The view's `WebKitNetworkSession`: another view made with it shares its HTTP cache.
    public var networkSession: OpaquePointer { webkit_web_view_get_network_session(webView) }

    /// Whether WebKit's last load finished (`WEBKIT_LOAD_FINISHED`) and none of the resources
    /// it started is still loading.
    public internal(set) var loadFinished = false

    /// The GTK widget to put in a window.
    public var widget: UnsafeMutablePointer<GtkWidget> { bridge_widget(webView) }

    /// Loads `url`. A document the broker has stored (`preload` with `includePage`) is shown
    /// from the cache with `url` as its address and base, so it needs no network; any other
    /// document loads normally. `completion` says which (on the main thread).
    public func load(_ url: String, completion: (@Sendable (_ fromBroker: Bool) -> Void)? = nil) {
        MainLoop.assertMain()
        guard configuration.loadStoredDocuments else {
            webkit_web_view_load_uri(webView, url)
            completion?(false)
            return
        }
        let request: JSONValue = [
            // The same request as the preload that stored it, so the same variant is found.
            "url": .string(url), "cache": "only-if-cached", "responseBody": "text", "progress": false,
        ]
        Task {
            let stored = await host.post("fetch", request)
            MainLoop.perform { [self] in
                if case .success(let reply) = stored, reply["status"]?.intValue == 200, let html = reply["body"]?.stringValue,
                    Self.isHTML(reply["headers"])
                {
                    let base = reply["url"]?.stringValue ?? url
                    completion?(true)
                    webkit_web_view_load_alternate_html(webView, html, base, base)
                } else {
                    completion?(false)
                    webkit_web_view_load_uri(webView, url)
                }
            }
        }
    }

    /// Posts `body` to the broker's handler `name` on the host's own connection and returns the
    /// reply body; a failure throws its `BridgeError`. Callable from any task.
    public func post(_ name: String, _ body: JSONValue = .null) async throws -> JSONValue {
        try await host.post(name, body).get()
    }

    /// Subscribes the host to the broker's progress stream (`progress.subscribe`): its events
    /// (`progress.group` with the page connection's `connection` number, ...) reach `onHostEvent`.
    public func subscribeProgress() async throws {
        _ = try await post("progress.subscribe")
    }

    /// Shows `html` as a document at `baseURL` (its origin, and the base of its relative URLs).
    public func loadHTML(_ html: String, baseURL: String) {
        MainLoop.assertMain()
        webkit_web_view_load_html(webView, html, baseURL)
    }

    /// Reloads the page; its bridge connection is reset (posts in flight are cancelled).
    public func reload() {
        MainLoop.assertMain()
        webkit_web_view_reload(webView)
    }

    /// Runs `script` in the page and returns its result as JSON (nil for undefined or on error).
    public func evaluate(_ script: String) async -> String? {
        await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
            MainLoop.perform { [self] in
                let box = Unmanaged.passRetained(Completion { result in continuation.resume(returning: result) })
                webkit_web_view_evaluate_javascript(webView, script, -1, nil, nil, nil, { source, result, data in
                    let completion = Unmanaged<Completion>.fromOpaque(data!).takeRetainedValue()
                    var error: UnsafeMutablePointer<GError>?
                    let value = webkit_web_view_evaluate_javascript_finish(UnsafeMutableRawPointer(source)?.assumingMemoryBound(to: WebKitWebView.self), result, &error)
                    if let error { g_error_free(error) }
                    guard let value else { return completion.body(nil) }
                    let json = jsc_value_to_json(value, 0)
                    completion.body(json.map { String(cString: $0) })
                    g_free(json)
                    g_object_unref(UnsafeMutableRawPointer(value))
                }, box.toOpaque())
            }
        }
    }

    /// Ends the pages' bridge connections and releases the view. Main thread only.
    public func close() {
        MainLoop.assertMain()
        resetPage(code: nil, reason: "")
        host.close()
        for data in [Unmanaged.passUnretained(self).toOpaque()] + nativeTargets.map({ Unmanaged.passUnretained($0).toOpaque() }) {
            g_signal_handlers_disconnect_matched(UnsafeMutableRawPointer(manager), G_SIGNAL_MATCH_DATA, 0, 0, nil, nil, data)
        }
        g_signal_handlers_disconnect_matched(UnsafeMutableRawPointer(webView), G_SIGNAL_MATCH_DATA, 0, 0, nil, nil, Unmanaged.passUnretained(self).toOpaque())
        g_object_unref(UnsafeMutableRawPointer(webView))
        g_object_unref(UnsafeMutableRawPointer(manager))
        retained?.release()
        retained = nil
    }

    /// Ends the bridge connections of every frame from the host's side: their posts in flight
    /// are cancelled, and each page (told so in the answer to its waiting message when `code` is
    /// given) fails its own with `network` and opens a new one.
    public func resetPage(code: UInt16? = 1012, reason: String = "the host reset the bridge") {
        MainLoop.assertMain()
        let current = pages
        pages = [:]
        topSession = nil
        for (_, page) in current.sorted(by: { $0.key < $1.key }) {
            if let code { page.sink.close(code: code, reason: reason) } else { page.sink.markClosed() }
            page.connection.closed()
        }
    }

    /// Replies the pages' connections received (every frame's), and when the last one was sent.
    public var pageReplies: (count: Int, last: ContinuousClock.Instant?) {
        let stats = pages.values.map(\.sink.replyStats)
        return (stats.reduce(0) { $0 + $1.count }, stats.compactMap(\.last).max())
    }

    /// Scripts and script message replies that carried frames to the pages, over every frame's connection.
    public var pageDeliveries: Int { pages.values.reduce(0) { $0 + $1.sink.deliveries } }

    /// The top frame's connection, if its shim opened one.
    public var pageConnection: BrokerConnection? { topSession.flatMap { pages[$0]?.connection } }

    /// The connections of every frame whose shim opened one (the top frame's included).
    public var frameConnections: [BrokerConnection] { pages.keys.sorted().compactMap { pages[$0]?.connection } }

    static func isHTML(_ headers: JSONValue?) -> Bool {
        for pair in headers?.arrayValue ?? [] {
            guard let fields = pair.arrayValue, fields.count == 2, fields[0].stringValue == "content-type" else { continue }
            let type = fields[1].stringValue?.lowercased() ?? ""
            return type.hasPrefix("text/html") || type.hasPrefix("application/xhtml+xml")
        }
        return false
    }

    // MARK: - Page connection (main thread)

    /// A frame's shim sent `open` (`{"type":"open", "top": Bool, "origin": String}`): a new
    /// connection for it. The top frame's is answered with null and gets its frames through
    /// `evaluate_javascript` (the faster way, docs/BENCHMARKS.md), with the view's origin; any other
    /// frame's is answered with its number and the broker's hello, and gets its frames in replies,
    /// with the origin its shim read from its own document.
    func openPage(_ message: String, reply: OpaquePointer, context: OpaquePointer) {
        let open = try? JSONParser.parse(message)
        let top = open?["top"]?.boolValue ?? true
        if top, let previous = topSession, let page = pages.removeValue(forKey: previous) {
            // The top frame's shim reconnecting: its old connection ends (posts in flight cancelled).
            page.sink.markClosed()
            page.connection.closed()
        }
        sessions += 1
        let delivery: PageSink.Delivery = top ? .evaluate({ script, done in self.evaluateFrames(script, done: done) }) : .replies
        let sink = PageSink(session: sessions, highWater: configuration.highWater, delivery: delivery)
        let claimed = open?["origin"]?.stringValue.flatMap(Self.origin(of:))
        let origin = top ? uri.flatMap(Self.origin(of:)) : claimed
        // A page connection even without an http(s) origin: its identity headers are the broker's
        // and the cookie jar stays hidden from it (docs/PROTOCOL.md, "Identity and cookies").
        let connection = broker.connect(sink: sink, info: ConnectionInfo(origin: origin, peer: top ? "webkit page" : "webkit frame", isPage: true))
        pages[sessions] = (connection, sink)
        if top { Self.answer(reply, context, json: "null") } else { sink.hold(reply: reply, context: context) }
        if top {
            topSession = sessions
            onPageConnection?(connection)
        }
    }

    /// A message from a frame's shim through `bridge`: `open`; from the top frame a frame (an
    /// envelope's JSON text, or `"b64:"` and a binary frame); from another frame `N:` (its
    /// connection) and `pull`, `close` or a frame. A subframe's `open` and `pull` are answered when
    /// frames are queued, the others at once with null.
    func receiveFromPage(_ message: String, reply: OpaquePointer, context: OpaquePointer) {
        Self.trace("page -> host: \(message.prefix(120))")
        if message.hasPrefix("{\"type\":\"open\"") {
            return openPage(message, reply: reply, context: context)
        }
        if message.hasPrefix("{") || message.hasPrefix("b64:") {
            guard let session = topSession, let page = pages[session] else { return Self.answer(reply, context, json: "null") }
            receiveFrame(Substring(message), on: page)
            return Self.answer(reply, context, json: "null")
        }
        guard let colon = message.firstIndex(of: ":"), let session = Int(message[..<colon]) else {
            return Self.answer(reply, context, json: #"{"close":{"code":1002,"reason":"a message without its connection number"}}"#)
        }
        let rest = message[message.index(after: colon)...]
        guard let page = pages[session] else {
            // A connection that ended (a navigation, a reset): the page opens a new one.
            return Self.answer(reply, context, json: #"{"close":{"code":1001,"reason":"the connection ended"}}"#)
        }
        switch rest {
        case "pull":
            return page.sink.hold(reply: reply, context: context)
        case "close":
            pages[session] = nil
            if topSession == session { topSession = nil }
            page.sink.markClosed()
            page.connection.closed()
        default:
            receiveFrame(rest, on: page)
        }
        Self.answer(reply, context, json: "null")
    }

    private func receiveFrame(_ frame: Substring, on page: (connection: BrokerConnection, sink: PageSink)) {
        guard frame.hasPrefix("b64:") else { return page.connection.receive(text: Array(frame.utf8)) }
        guard let bytes = Data(base64Encoded: String(frame.dropFirst(4))) else {
            let failure = BridgeError(.badMessage, "a \"b64:\" frame that is not base64")
            return page.sink.send(ServerMessage.error(failure), binary: false)
        }
        page.connection.receive(binary: [UInt8](bytes))
    }

    private func evaluateFrames(_ script: String, done: @escaping @Sendable () -> Void) {
        Self.trace("host -> page: \(script.utf8.count) bytes of script")
        let box = Unmanaged.passRetained(Completion { _ in done() })
        webkit_web_view_evaluate_javascript(webView, script, -1, nil, nil, nil, { source, result, data in
            let completion = Unmanaged<Completion>.fromOpaque(data!).takeRetainedValue()
            var error: UnsafeMutablePointer<GError>?
            let value = webkit_web_view_evaluate_javascript_finish(UnsafeMutableRawPointer(source)?.assumingMemoryBound(to: WebKitWebView.self), result, &error)
            if let error {
                // A navigation that replaced the document fails the scripts still on their way.
                BridgeWebView.trace("frames for the page failed: \(error.pointee.message.map { String(cString: $0) } ?? "?")")
                g_error_free(error)
            }
            if let value { g_object_unref(UnsafeMutableRawPointer(value)) }
            completion.body(nil)
        }, box.toOpaque())
    }

    static func answer(_ reply: OpaquePointer, _ context: OpaquePointer, json: String) {
        let value = jsc_value_new_from_json(context, json)
        webkit_script_message_reply_return_value(reply, value)
        if let value { g_object_unref(UnsafeMutableRawPointer(value)) }
    }

    /// With `BRIDGE_WEBVIEW_TRACE=1` in the environment, the transport's traffic goes to stderr.
    static let tracing = ProcessInfo.processInfo.environment["BRIDGE_WEBVIEW_TRACE"] == "1"

    static func trace(_ line: @autoclosure () -> String) {
        guard tracing else { return }
        let now = Date().timeIntervalSince1970 * 1000
        FileHandle.standardError.write(Data(("bridge-webview: \(String(format: "%.1f", now)) " + line() + "\n").utf8))
    }

    static func origin(of uri: String) -> String? {
        guard let components = URLComponents(string: uri), let scheme = components.scheme, let host = components.host else { return nil }
        let port = components.port.map { ":\($0)" } ?? ""
        return "\(scheme)://\(host)\(port)"
    }
}

/// Hands events from the broker's threads to the view's handler on the main thread.
final class EventRelay: @unchecked Sendable {
    /// Read and written on the main thread only.
    var handler: ((String, JSONValue) -> Void)?
    func forward(_ name: String, _ body: JSONValue) {
        MainLoop.perform { self.handler?(name, body) }
    }
}

/// A closure carried through a C callback's user data.
final class Completion {
    let body: (String?) -> Void
    init(_ body: @escaping (String?) -> Void) { self.body = body }
}
