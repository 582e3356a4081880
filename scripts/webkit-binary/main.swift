// Host-to-page binary bodies in WebKitGTK, measured from the page (docs/BENCHMARKS.md, "Host-to-page
// binary bodies"), interleaved in one process: base64 in a string handed to the page through
// evaluate_javascript (BridgeWebView before the reply mode) or as the reply of a script message
// handler (BridgeWebView now), each decoded with atob and a loop or with JavaScriptCore's native
// Uint8Array.fromBase64; an ArrayBuffer-valued JSCValue as the reply; and the bytes served by a
// URI scheme handler (CORS-enabled, secure) that the page fetch()es natively. Then the page-load
// benchmark's batch: 30 bodies of 20 000 bytes in one evaluate_javascript against one reply with
// an array of 30 strings; and whether the page's CSP (connect-src 'self') lets the scheme through.
//
//   make bench-webkit-binary        (builds this file with swiftc against CWebKitGTK, runs it under xvfb-run)
import CWebKitGTK
import Foundation

let sizes = [64 << 10, 1 << 20, 5 << 20]
let rounds = 7
let page = """
    <!doctype html><meta charset="utf-8"><body><script>
    const atobLoop = (text) => {
      const binary = atob(text.slice(4));
      const bytes = new Uint8Array(binary.length);
      for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
      return bytes;
    };
    const native = typeof Uint8Array.fromBase64 === "function";
    const fromBase64 = native ? (text) => Uint8Array.fromBase64(text.slice(4)) : atobLoop;
    const check = (bytes, n) => bytes.length === n && bytes[n - 1] === ((n - 1) * 31 + 7) % 256 && bytes[n >> 1] === ((n >> 1) * 31 + 7) % 256;
    async function viaEvaluate(n, decode) {
      const started = performance.now();
      const arrived = new Promise((resolve) => { window.r = (text) => resolve(decode(text)); });
      webkit.messageHandlers.push.postMessage(n);
      const bytes = await arrived;
      return { ms: performance.now() - started, ok: check(bytes, n) };
    }
    async function viaStringReply(n, decode) {
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
    async function viaScheme(n) {
      const started = performance.now();
      try {
        const bytes = new Uint8Array(await (await fetch(`bridge-bench://bytes/${n}`)).arrayBuffer());
        return { ms: performance.now() - started, ok: check(bytes, n) };
      } catch (error) {
        return { ms: NaN, ok: false, error: String(error) };
      }
    }
    // The page-load benchmark's bodies: 30 of 20 000 bytes, all at once.
    async function batchEvaluate() {
      const started = performance.now();
      let left = 30, ok = true;
      const arrived = new Promise((resolve) => { window.r = (text) => { ok = ok && check(fromBase64(text), 20000); if (--left === 0) resolve(); }; });
      webkit.messageHandlers.pushBatch.postMessage(30);
      await arrived;
      return { ms: performance.now() - started, ok };
    }
    async function batchReply() {
      const started = performance.now();
      const frames = await webkit.messageHandlers.pullBatch.postMessage(30);
      const ok = frames.length === 30 && frames.every((text) => check(fromBase64(text), 20000));
      return { ms: performance.now() - started, ok };
    }
    async function batchScheme() {
      const started = performance.now();
      const sizes = await Promise.all(Array.from({ length: 30 }, async (_, i) => {
        const bytes = new Uint8Array(await (await fetch(`bridge-bench://bytes/20000?r=${i}`)).arrayBuffer());
        return check(bytes, 20000);
      }));
      return { ms: performance.now() - started, ok: sizes.every(Boolean) };
    }
    const median = (values) => values.slice().sort((a, b) => a - b)[values.length >> 1];
    const ways = {
      evaluateAtob: (n) => viaEvaluate(n, atobLoop), evaluateNative: (n) => viaEvaluate(n, fromBase64),
      replyAtob: (n) => viaStringReply(n, atobLoop), replyNative: (n) => viaStringReply(n, fromBase64),
      arrayBufferReply: viaReply, scheme: viaScheme,
    };
    (async () => {
      const rows = [];
      for (const n of \(sizes)) {
        const times = {}, ok = {}, notes = {};
        for (let i = 0; i < \(rounds); i++) {
          for (const [name, way] of Object.entries(ways)) {
            const result = await way(n);
            (times[name] = times[name] || []).push(result.ms);
            ok[name] = (ok[name] ?? true) && result.ok;
            if (result.arrived || result.error) notes[name] = result.arrived || result.error;
          }
        }
        const row = { bytes: n };
        for (const name of Object.keys(ways)) row[name] = { ms: Math.round(median(times[name]) * 10) / 10, ok: ok[name], note: notes[name] };
        rows.push(row);
      }
      const batch = { evaluate: [], reply: [], scheme: [] }, batchOk = { evaluate: true, reply: true, scheme: true };
      for (let i = 0; i < \(rounds); i++) {
        for (const [name, way] of [["evaluate", batchEvaluate], ["reply", batchReply], ["scheme", batchScheme]]) {
          const result = await way();
          batch[name].push(result.ms);
          batchOk[name] = batchOk[name] && result.ok;
        }
      }
      const row = { bytes: "30 x 20000" };
      for (const name of Object.keys(batch)) row[name] = { ms: Math.round(median(batch[name]) * 10) / 10, ok: batchOk[name] };
      rows.push(row);
      await webkit.messageHandlers.done.postMessage(JSON.stringify({ nativeFromBase64: native, rows }));
    })();
    </script>
    """

let cspPage = """
    <!doctype html><meta http-equiv="Content-Security-Policy" content="connect-src 'self'; script-src 'unsafe-inline'"><script>
    fetch("bridge-bench://bytes/16").then((r) => r.arrayBuffer()).then((b) => "reached: " + b.byteLength, (e) => "refused: " + e)
      .then((outcome) => webkit.messageHandlers.csp.postMessage(JSON.stringify({ schemeUnderConnectSrcSelf: outcome })));
    </script>
    """

func pattern(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(($0 * 31 + 7) & 0xFF) } }

final class Host {
    var view: UnsafeMutablePointer<WebKitWebView>!
}
let host = Host()

guard gtk_init_check() != 0 else { fatalError("no display: run under xvfb-run") }
let manager = webkit_user_content_manager_new()
for name in ["push", "pull", "pull64", "pushBatch", "pullBatch", "done", "csp"] { webkit_user_content_manager_register_script_message_handler_with_reply(manager, name, nil) }
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
let onPushBatch: @convention(c) (gpointer?, gpointer?, gpointer?, gpointer?) -> gboolean = { _, value, reply, _ in
    let count = Int(jsc_value_to_int32(OpaquePointer(value)))
    webkit_script_message_reply_return_value(OpaquePointer(reply), jsc_value_new_null(jsc_value_get_context(OpaquePointer(value))))
    let body = Data(pattern(20000)).base64EncodedString()
    let script = "{const r=window.r;" + String(repeating: "r(\"b64:" + body + "\");", count: count) + "}"
    webkit_web_view_evaluate_javascript(host.view, script, -1, nil, nil, nil, nil, nil)
    return 1
}
let onPullBatch: @convention(c) (gpointer?, gpointer?, gpointer?, gpointer?) -> gboolean = { _, value, reply, _ in
    let count = Int(jsc_value_to_int32(OpaquePointer(value)))
    let body = strdup("b64:" + Data(pattern(20000)).base64EncodedString())
    let strv = UnsafeMutablePointer<UnsafePointer<CChar>?>.allocate(capacity: count + 1)
    for index in 0..<count { strv[index] = UnsafePointer(body) }
    strv[count] = nil
    webkit_script_message_reply_return_value(OpaquePointer(reply), jsc_value_new_array_from_strv(jsc_value_get_context(OpaquePointer(value)), strv))
    strv.deallocate()
    free(body)
    return 1
}
/// bridge-bench://bytes/N: N pattern bytes, as a CORS-enabled scheme answers a page of another origin.
let onScheme: @convention(c) (OpaquePointer?, gpointer?) -> Void = { request, _ in
    let path = String(cString: webkit_uri_scheme_request_get_path(request))
    let count = Int(path.split(separator: "/").last ?? "") ?? 0
    let bytes = pattern(count)
    let data = g_bytes_new(bytes, gsize(count))
    let stream = g_memory_input_stream_new_from_bytes(data)
    g_bytes_unref(data)
    let response = webkit_uri_scheme_response_new(stream, gint64(count))
    webkit_uri_scheme_response_set_content_type(response, "application/octet-stream")
    let headers = soup_message_headers_new(SOUP_MESSAGE_HEADERS_RESPONSE)
    soup_message_headers_append(headers, "Access-Control-Allow-Origin", "*")
    webkit_uri_scheme_response_set_http_headers(response, headers)
    webkit_uri_scheme_request_finish_with_response(request, response)
    g_object_unref(UnsafeMutableRawPointer(response))
    g_object_unref(UnsafeMutableRawPointer(stream))
}
let onCSP: @convention(c) (gpointer?, gpointer?, gpointer?, gpointer?) -> gboolean = { _, value, reply, _ in
    if let text = jsc_value_to_string(OpaquePointer(value)) { print(String(cString: text)) }
    webkit_script_message_reply_return_value(OpaquePointer(reply), jsc_value_new_null(jsc_value_get_context(OpaquePointer(value))))
    g_main_loop_quit(loop)
    return 1
}
let onDone: @convention(c) (gpointer?, gpointer?, gpointer?, gpointer?) -> gboolean = { _, value, reply, _ in
    if let text = jsc_value_to_string(OpaquePointer(value)) { print(String(cString: text)) }
    webkit_script_message_reply_return_value(OpaquePointer(reply), jsc_value_new_null(jsc_value_get_context(OpaquePointer(value))))
    // Then a page whose CSP allows its own origin only: does the scheme still reach it?
    webkit_web_view_load_html(host.view, cspPage, "http://127.0.0.1/")
    return 1
}
bridge_signal_connect(UnsafeMutableRawPointer(manager), "script-message-with-reply-received::push", unsafeBitCast(onPush, to: GCallback.self), nil)
bridge_signal_connect(UnsafeMutableRawPointer(manager), "script-message-with-reply-received::pull", unsafeBitCast(onPull, to: GCallback.self), nil)
bridge_signal_connect(UnsafeMutableRawPointer(manager), "script-message-with-reply-received::pull64", unsafeBitCast(onPull64, to: GCallback.self), nil)
bridge_signal_connect(UnsafeMutableRawPointer(manager), "script-message-with-reply-received::pushBatch", unsafeBitCast(onPushBatch, to: GCallback.self), nil)
bridge_signal_connect(UnsafeMutableRawPointer(manager), "script-message-with-reply-received::pullBatch", unsafeBitCast(onPullBatch, to: GCallback.self), nil)
bridge_signal_connect(UnsafeMutableRawPointer(manager), "script-message-with-reply-received::csp", unsafeBitCast(onCSP, to: GCallback.self), nil)
let context = webkit_web_view_get_context(host.view)
webkit_web_context_register_uri_scheme(context, "bridge-bench", onScheme, nil, nil)
let security = webkit_web_context_get_security_manager(context)
webkit_security_manager_register_uri_scheme_as_cors_enabled(security, "bridge-bench")
webkit_security_manager_register_uri_scheme_as_secure(security, "bridge-bench")
bridge_signal_connect(UnsafeMutableRawPointer(manager), "script-message-with-reply-received::done", unsafeBitCast(onDone, to: GCallback.self), nil)
// In a presented window: WebKit throttles the timers of a page that is not visible.
let window = gtk_window_new()
gtk_window_set_child(bridge_window(window), bridge_widget(host.view))
gtk_window_present(bridge_window(window))
webkit_web_view_load_html(host.view, page, "http://127.0.0.1/")
g_main_loop_run(loop)
