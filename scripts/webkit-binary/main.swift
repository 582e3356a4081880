// Host-to-page binary bodies in WebKitGTK, two ways, measured from the page (docs/BENCHMARKS.md,
// "WebKit host"): (1) what BridgeWebView does, the bytes as base64 in a string handed to the page
// through evaluate_javascript and decoded there as the shim does (atob and a loop); (2) an
// ArrayBuffer-valued JSCValue returned as the reply of a script message handler; (3) the base64
// string as that reply.
//
//   make bench-webkit-binary        (builds this file with swiftc against CWebKitGTK, runs it under xvfb-run)
import CWebKitGTK
import Foundation

let sizes = [64 << 10, 1 << 20, 5 << 20]
let rounds = 7
let page = """
    <!doctype html><meta charset="utf-8"><body><script>
    const decode = (text) => {
      const binary = atob(text.slice(4));
      const bytes = new Uint8Array(binary.length);
      for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
      return bytes;
    };
    const check = (bytes, n) => bytes.length === n && bytes[n - 1] === ((n - 1) * 31 + 7) % 256;
    async function viaEvaluate(n) {
      const started = performance.now();
      const arrived = new Promise((resolve) => { window.r = (text) => resolve(decode(text)); });
      webkit.messageHandlers.push.postMessage(n);
      const bytes = await arrived;
      return { ms: performance.now() - started, ok: check(bytes, n) };
    }
    async function viaStringReply(n) {
      const started = performance.now();
      const bytes = decode(await webkit.messageHandlers.pull64.postMessage(n));
      return { ms: performance.now() - started, ok: check(bytes, n) };
    }
    async function viaReply(n) {
      const started = performance.now();
      const buffer = await webkit.messageHandlers.pull.postMessage(n);
      const ms = performance.now() - started;
      const bytes = new Uint8Array(buffer);
      return { ms, ok: buffer instanceof ArrayBuffer && check(bytes, n), arrived: Object.prototype.toString.call(buffer) };
    }
    const median = (values) => values.slice().sort((a, b) => a - b)[values.length >> 1];
    (async () => {
      const rows = [];
      for (const n of \(sizes)) {
        const a = [], b = [], c = [];
        let okA = true, okB = true, okC = true, arrived;
        for (let i = 0; i < \(rounds); i++) {
          const x = await viaEvaluate(n), y = await viaStringReply(n), z = await viaReply(n);
          okA = okA && x.ok; okB = okB && y.ok; okC = okC && z.ok; arrived = z.arrived;
          a.push(x.ms); b.push(y.ms); c.push(z.ms);
        }
        rows.push({ bytes: n, base64EvaluateMs: median(a), base64EvaluateOk: okA, base64ReplyMs: median(b), base64ReplyOk: okB,
                    arrayBufferReplyMs: median(c), arrayBufferReplyOk: okC, arrayBufferArrivedAs: arrived });
      }
      await webkit.messageHandlers.done.postMessage(JSON.stringify(rows));
    })();
    </script>
    """

func pattern(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(($0 * 31 + 7) & 0xFF) } }

final class Host {
    var view: UnsafeMutablePointer<WebKitWebView>!
}
let host = Host()

guard gtk_init_check() != 0 else { fatalError("no display: run under xvfb-run") }
let manager = webkit_user_content_manager_new()
for name in ["push", "pull", "pull64", "done"] { webkit_user_content_manager_register_script_message_handler_with_reply(manager, name, nil) }
host.view = bridge_web_view_new(webkit_network_session_new_ephemeral(), manager)
g_object_ref_sink(UnsafeMutableRawPointer(host.view))
let loop = g_main_loop_new(nil, 0)

let onPush: @convention(c) (gpointer?, gpointer?, gpointer?, gpointer?) -> gboolean = { _, value, reply, _ in
    let count = Int(jsc_value_to_int32(OpaquePointer(value)))
    webkit_script_message_reply_return_value(OpaquePointer(reply), jsc_value_new_null(jsc_value_get_context(OpaquePointer(value))))
    let script = "r(\"b64:" + Data(pattern(count)).base64EncodedString() + "\")"
    webkit_web_view_evaluate_javascript(host.view, script, -1, nil, nil, nil, nil, nil)
    return 1
}
let onPull: @convention(c) (gpointer?, gpointer?, gpointer?, gpointer?) -> gboolean = { _, value, reply, _ in
    let count = Int(jsc_value_to_int32(OpaquePointer(value)))
    let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: count)
    for index in 0..<count { bytes[index] = UInt8((index * 31 + 7) & 0xFF) }
    let buffer = jsc_value_new_array_buffer(jsc_value_get_context(OpaquePointer(value)), bytes, gsize(count), { data in
        data?.assumingMemoryBound(to: UInt8.self).deallocate()
    }, bytes)
    webkit_script_message_reply_return_value(OpaquePointer(reply), buffer)
    return 1
}
let onPull64: @convention(c) (gpointer?, gpointer?, gpointer?, gpointer?) -> gboolean = { _, value, reply, _ in
    let count = Int(jsc_value_to_int32(OpaquePointer(value)))
    let text = "b64:" + Data(pattern(count)).base64EncodedString()
    let string = jsc_value_new_string(jsc_value_get_context(OpaquePointer(value)), text)
    webkit_script_message_reply_return_value(OpaquePointer(reply), string)
    return 1
}
let onDone: @convention(c) (gpointer?, gpointer?, gpointer?, gpointer?) -> gboolean = { _, value, reply, _ in
    if let text = jsc_value_to_string(OpaquePointer(value)) { print(String(cString: text)) }
    webkit_script_message_reply_return_value(OpaquePointer(reply), jsc_value_new_null(jsc_value_get_context(OpaquePointer(value))))
    g_main_loop_quit(loop)
    return 1
}
bridge_signal_connect(UnsafeMutableRawPointer(manager), "script-message-with-reply-received::push", unsafeBitCast(onPush, to: GCallback.self), nil)
bridge_signal_connect(UnsafeMutableRawPointer(manager), "script-message-with-reply-received::pull", unsafeBitCast(onPull, to: GCallback.self), nil)
bridge_signal_connect(UnsafeMutableRawPointer(manager), "script-message-with-reply-received::pull64", unsafeBitCast(onPull64, to: GCallback.self), nil)
bridge_signal_connect(UnsafeMutableRawPointer(manager), "script-message-with-reply-received::done", unsafeBitCast(onDone, to: GCallback.self), nil)
// In a presented window: WebKit throttles the timers of a page that is not visible.
let window = gtk_window_new()
gtk_window_set_child(bridge_window(window), bridge_widget(host.view))
gtk_window_present(bridge_window(window))
webkit_web_view_load_html(host.view, page, "http://127.0.0.1/")
g_main_loop_run(loop)
