import BridgeCore
import CWebKitGTK
import Foundation

/// What WebKit calls back: the `bridge` handler, the native handlers, load events and progress.
/// All on the main thread; the view comes back through the signal's user data.
extension BridgeWebView {
    func installScripts() {
        guard configuration.injectShim else { return }
        var settings = configuration.shimSettings
        if settings["transport"] == nil { settings.members.append((key: "transport", value: "webkit")) }
        // The shim reads its settings from BridgeBrokerConfig; a page's own settings win.
        let prelude = "window.BridgeBrokerConfig=Object.assign(\(JSONValue.object(settings).jsonString),window.BridgeBrokerConfig||{});\n"
        // Traced, the page also gets the time its shim took to run (window.__bridgeShimMs).
        let source = Self.tracing
            ? "window.__bridgeShimStart=performance.now();" + prelude + configuration.shimSource
                + "\n;window.__bridgeShimMs=performance.now()-window.__bridgeShimStart;\n"
            : prelude + configuration.shimSource
        let allow = CStringList(configuration.injectInto)
        let block = CStringList(configuration.neverInjectInto)
        // Every frame the patterns allow: each frame's shim gets its own connection, and the
        // frames for it come back in the replies to its own messages.
        let script = webkit_user_script_new(
            source, WEBKIT_USER_CONTENT_INJECT_ALL_FRAMES, WEBKIT_USER_SCRIPT_INJECT_AT_DOCUMENT_START, allow.pointer, block.pointer)
        webkit_user_content_manager_add_script(manager, script)
        webkit_user_script_unref(script)
    }

    func connectSignals() {
        let me = Unmanaged.passUnretained(self).toOpaque()
        connectLoadSignals(me)
        // A plain WebKit view has no handlers either: a page that includes the shim itself then
        // uses the WebSocket, as in any browser.
        guard configuration.injectShim else { return }
        webkit_user_content_manager_register_script_message_handler_with_reply(manager, "bridge", nil)
        let onBridge: @convention(c) (gpointer?, gpointer?, gpointer?, gpointer?) -> gboolean = { _, value, reply, data in
            let view = Unmanaged<BridgeWebView>.fromOpaque(data!).takeUnretainedValue()
            guard let value = OpaquePointer(value), let reply = OpaquePointer(reply) else { return 1 }
            let context = jsc_value_get_context(value)!
            guard jsc_value_is_string(value) != 0, let text = jsc_value_to_string(value) else {
                BridgeWebView.answer(reply, context, json: #"{"close":{"code":1003,"reason":"the bridge handler takes strings"}}"#)
                return 1
            }
            let message = String(cString: text)
            g_free(text)
            view.receiveFromPage(message, reply: reply, context: context)
            return 1
        }
        bridge_signal_connect(UnsafeMutableRawPointer(manager), "script-message-with-reply-received::bridge", unsafeBitCast(onBridge, to: GCallback.self), me)

        let onNative: @convention(c) (gpointer?, gpointer?, gpointer?, gpointer?) -> gboolean = { _, value, reply, data in
            let target = Unmanaged<NativeHandlerTarget>.fromOpaque(data!).takeUnretainedValue()
            target.view?.receiveNative(target.name, value: OpaquePointer(value), reply: OpaquePointer(reply))
            return 1
        }
        for name in configuration.nativeHandlers ?? broker.handlerNames where name != "bridge" {
            guard webkit_user_content_manager_register_script_message_handler_with_reply(manager, name, nil) != 0 else {
                continue  // WebKit refused the name; the page can still reach it with BridgeBroker.post.
            }
            let target = NativeHandlerTarget(view: self, name: name)
            nativeTargets.append(target)
            bridge_signal_connect(
                UnsafeMutableRawPointer(manager), "script-message-with-reply-received::\(name)", unsafeBitCast(onNative, to: GCallback.self),
                Unmanaged.passUnretained(target).toOpaque())
        }

    }

    /// Load events, WebKit's own resource loads and its estimated progress.
    private func connectLoadSignals(_ me: UnsafeMutableRawPointer) {
        let onLoad: @convention(c) (gpointer?, WebKitLoadEvent, gpointer?) -> Void = { _, event, data in
            let view = Unmanaged<BridgeWebView>.fromOpaque(data!).takeUnretainedValue()
            BridgeWebView.trace("load event \(event.rawValue)")
            // A new document is coming: the old one's connection ends (its posts are cancelled).
            if event == WEBKIT_LOAD_STARTED { view.resetPage(code: 1001, reason: "the page is navigating away") }
            view.loadFinished = event == WEBKIT_LOAD_FINISHED
            view.onLoadEvent?(event)
        }
        bridge_signal_connect(UnsafeMutableRawPointer(webView), "load-changed", unsafeBitCast(onLoad, to: GCallback.self), me)

        let onResource: @convention(c) (gpointer?, gpointer?, gpointer?, gpointer?) -> Void = { _, resource, _, data in
            let view = Unmanaged<BridgeWebView>.fromOpaque(data!).takeUnretainedValue()
            guard let uri = webkit_web_resource_get_uri(OpaquePointer(resource)) else { return }
            view.resourcesInFlight += 1
            let finished: @convention(c) (gpointer?, gpointer?) -> Void = { _, data in
                Unmanaged<BridgeWebView>.fromOpaque(data!).takeUnretainedValue().resourcesInFlight -= 1
            }
            bridge_signal_connect(resource, "finished", unsafeBitCast(finished, to: GCallback.self), data)
            view.onResourceLoad?(String(cString: uri))
        }
        bridge_signal_connect(UnsafeMutableRawPointer(webView), "resource-load-started", unsafeBitCast(onResource, to: GCallback.self), me)

        let onFailed: @convention(c) (gpointer?, WebKitLoadEvent, UnsafePointer<CChar>?, UnsafeMutablePointer<GError>?, gpointer?) -> gboolean = { _, _, uri, error, data in
            let view = Unmanaged<BridgeWebView>.fromOpaque(data!).takeUnretainedValue()
            let message = error.flatMap { $0.pointee.message.map { String(cString: $0) } } ?? "the load failed"
            view.onLoadFailed?("\(uri.map { String(cString: $0) } ?? ""): \(message)")
            return 0  // WebKit shows its error page.
        }
        bridge_signal_connect(UnsafeMutableRawPointer(webView), "load-failed", unsafeBitCast(onFailed, to: GCallback.self), me)

        let onProgress: @convention(c) (gpointer?, gpointer?, gpointer?) -> Void = { _, _, data in
            let view = Unmanaged<BridgeWebView>.fromOpaque(data!).takeUnretainedValue()
            view.onLoadProgress?(view.estimatedLoadProgress)
        }
        bridge_signal_connect(UnsafeMutableRawPointer(webView), "notify::estimated-load-progress", unsafeBitCast(onProgress, to: GCallback.self), me)
    }

    /// `window.webkit.messageHandlers.NAME.postMessage(body)`: the broker's handler NAME runs
    /// with the body (as JSON) and its reply body resolves the page's Promise; its error rejects
    /// it with the error's message.
    func receiveNative(_ name: String, value: OpaquePointer?, reply: OpaquePointer?) {
        guard let value, let reply else { return }
        let context = jsc_value_get_context(value)
        let json = jsc_value_to_json(value, 0)
        let text = json.map { String(cString: $0) }
        g_free(json)
        let body: JSONValue
        do {
            body = try text.map { try JSONParser.parse($0) } ?? .null
        } catch {
            webkit_script_message_reply_return_error_message(reply, "bad_message: the body is not JSON: \(error)")
            return
        }
        let handle = UnsafeSendable((reply: webkit_script_message_reply_ref(reply), context: context))
        g_object_ref(UnsafeMutableRawPointer(context))
        Task { [host] in
            let result = await host.post(name, body)
            MainLoop.perform {
                let (reply, context) = handle.value
                switch result {
                case .success(let body):
                    let value = jsc_value_new_from_json(context, body.jsonString)
                    webkit_script_message_reply_return_value(reply, value)
                    if let value { g_object_unref(UnsafeMutableRawPointer(value)) }
                case .failure(let error):
                    webkit_script_message_reply_return_error_message(reply, error.message)
                }
                webkit_script_message_reply_unref(reply)
                g_object_unref(UnsafeMutableRawPointer(context))
            }
        }
    }
}

/// The user data of one native handler's signal: which name it is, for which view.
final class NativeHandlerTarget {
    weak var view: BridgeWebView?
    let name: String
    init(view: BridgeWebView, name: String) {
        self.view = view
        self.name = name
    }
}

/// A NULL-terminated array of C strings for one call (NULL itself when empty, as WebKit wants
/// for "no list").
final class CStringList {
    let pointer: UnsafePointer<UnsafePointer<CChar>?>?
    private let storage: UnsafeMutablePointer<UnsafePointer<CChar>?>?
    private let count: Int

    init(_ strings: [String]) {
        count = strings.count
        guard !strings.isEmpty else {
            storage = nil
            pointer = nil
            return
        }
        let storage = UnsafeMutablePointer<UnsafePointer<CChar>?>.allocate(capacity: strings.count + 1)
        for (index, string) in strings.enumerated() { storage[index] = UnsafePointer(strdup(string)) }
        storage[strings.count] = nil
        self.storage = storage
        pointer = UnsafePointer(storage)
    }

    deinit {
        guard let storage else { return }
        for index in 0..<count { free(UnsafeMutableRawPointer(mutating: storage[index])) }
        storage.deallocate()
    }
}
