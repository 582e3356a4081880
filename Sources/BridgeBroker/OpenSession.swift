import BridgeCore
import BridgeServer
import BridgeWebView
import CWebKitGTK
import Foundation

/// The window of `bridge-broker open`: the loading bar over the view, the load's clock and, with
/// `--exit-after-load`, the report. Main thread only, except where a task hops back through
/// `MainLoop`.
final class OpenSession: @unchecked Sendable {
    let command: OpenCommand
    let server: BrokerServer
    let shim: String
    private(set) var exitCode: Int32 = 0
    private var view: BridgeWebView!
    private var bar: UnsafeMutablePointer<GtkWidget>!
    private var window: UnsafeMutablePointer<GtkWidget>!
    private var navigationStart = ContinuousClock.now
    private var navigationStartEpoch = 0.0
    private var loadFinished: ContinuousClock.Instant?
    private var loadFailed: String?
    private var documentFromBroker = false
    private var documentSeen = false
    private var originBefore = 0
    private var webKitRequests = 0
    private var pageConnection: Int?
    private var documentProgress = 0.0
    private var groupProgress: Double?
    private var finished = false

    init(command: OpenCommand, server: BrokerServer, shim: String) {
        self.command = command
        self.server = server
        self.shim = shim
    }

    func start() {
        var configuration = BridgeWebViewConfiguration(shimSource: shim)
        configuration.loadStoredDocuments = !command.noStoredDocument
        configuration.injectShim = !command.noShim
        configuration.injectInto = command.injectInto
        configuration.neverInjectInto = command.neverInjectInto
        var session: OpaquePointer?
        if let directory = command.webKitDataDirectory {
            session = webkit_network_session_new(directory + "/data", directory + "/cache")
        }
        view = BridgeWebView(broker: server.broker, configuration: configuration, session: session)
        if let session { g_object_unref(UnsafeMutableRawPointer(session)) }
        window = gtk_window_new()
        gtk_window_set_title(bridge_window(window), "bridge-broker: \(command.url)")
        gtk_window_set_default_size(bridge_window(window), 1024, 768)
        let box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0)
        bar = gtk_progress_bar_new()
        gtk_widget_set_vexpand(view.widget, 1)
        gtk_box_append(bridge_box(box), bar)
        gtk_box_append(bridge_box(box), view.widget)
        gtk_window_set_child(bridge_window(window), box)
        let closeRequest: @convention(c) (gpointer?, gpointer?) -> gboolean = { _, _ in
            MainLoop.quit()
            return 0
        }
        bridge_signal_connect(UnsafeMutableRawPointer(window), "close-request", unsafeBitCast(closeRequest, to: GCallback.self), nil)
        gtk_window_present(bridge_window(window))

        view.onLoadProgress = { [unowned self] progress in
            documentProgress = progress
            showProgress()
        }
        view.onPageConnection = { [unowned self] connection in pageConnection = connection.number }
        view.onHostEvent = { [unowned self] name, body in
            guard name == "progress.group", body["connection"]?.intValue == pageConnection else { return }
            groupProgress = body["progress"]?.doubleValue
            showProgress()
        }
        view.onResourceLoad = { [unowned self] uri in
            // A document shown from the broker's cache is reported as a resource too, at its
            // real URL, though it never reached the network.
            if documentFromBroker, !documentSeen, uri == view.uri {
                documentSeen = true
                return
            }
            // The broker's own files (a page that includes /bridge.js) are not the origin's.
            let own = ["http://127.0.0.1:\(server.port)/", "http://localhost:\(server.port)/"]
            if uri.hasPrefix("http:") || uri.hasPrefix("https:"), !own.contains(where: uri.hasPrefix) { webKitRequests += 1 }
        }
        view.onLoadFailed = { [unowned self] message in loadFailed = message }
        view.onLoadEvent = { [unowned self] event in
            if event == WEBKIT_LOAD_FINISHED { loadFinished = ContinuousClock.now }
        }
        if command.exitAfterLoad {
            let seconds = UInt32(min(command.timeout * 1000, Double(UInt32.max)))
            g_timeout_add_full(G_PRIORITY_DEFAULT, seconds, { data in
                Unmanaged<OpenSession>.fromOpaque(data!).takeUnretainedValue().timedOut()
                return 0
            }, Unmanaged.passUnretained(self).toOpaque(), nil)
        }
        Task { await prepareAndLoad() }
    }

    private func prepareAndLoad() async {
        try? await view.subscribeProgress()
        var preload = JSONObject()
        if let page = command.preloadPage { preload["page"] = .string(page) }
        if let manifest = command.preloadManifest { preload["manifest"] = .string(manifest) }
        // The document itself is a resource like the others: stored, it opens with no network.
        let urls = (command.includePage ? [command.url] : []) + command.preloadURLs
        if !urls.isEmpty { preload["urls"] = .array(urls.map { .string($0) }) }
        if !preload.members.isEmpty {
            do {
                let reply = try await view.post("preload", .object(preload))
                if !command.json { StandardOutput.line("preloaded: \(reply["totals"]?.jsonString ?? "{}")") }
            } catch {
                StandardOutput.error("bridge-broker open: the preload failed: \(error)")
            }
        }
        if let warm = command.warmWith { await warmCache(with: warm) }
        await showEmptyDocument()
        await MainLoop.run { [self] in
            webKitRequests = 0
            originBefore = server.upstreamRequestCount
            navigationStart = ContinuousClock.now
            navigationStartEpoch = Date().timeIntervalSince1970 * 1000
            view.load(command.url) { [self] fromBroker in documentFromBroker = fromBroker }
        }
        guard command.exitAfterLoad else { return }
        await waitForLoad()
    }

    /// Shows an empty document at the page's origin (from memory, no network) and waits for it:
    /// the web process is then running, as it is in a browser tab, and the page's own load does
    /// not pay for starting it; every way of `make bench-webkit` starts so.
    private func showEmptyDocument() async {
        guard let components = URLComponents(string: command.url), let scheme = components.scheme, let host = components.host else { return }
        let origin = "\(scheme)://\(host)" + (components.port.map { ":\($0)" } ?? "") + "/"
        await MainLoop.run { [self] in view.loadHTML("<!doctype html><title></title>", baseURL: origin) }
        while await !MainLoop.run({ [self] in view.loadFinished }) {
            try? await Task.sleep(for: .milliseconds(5))
        }
        await MainLoop.run { [self] in loadFinished = nil }
    }

    /// The seed study's method: a hidden view in the same network session loads `url` (a page of
    /// `<link rel="preload">`), which fills WebKit's own HTTP cache; it is closed once its load
    /// finished and every resource it started has ended.
    private func warmCache(with url: String) async {
        let hidden: BridgeWebView = await MainLoop.run { [self] in
            var configuration = BridgeWebViewConfiguration(shimSource: shim)
            configuration.injectShim = false
            configuration.loadStoredDocuments = false
            let hidden = BridgeWebView(broker: server.broker, configuration: configuration, session: view.networkSession)
            hidden.load(url)
            return hidden
        }
        while await !MainLoop.run({ hidden.loadFinished && hidden.resourcesInFlight == 0 }) {
            try? await Task.sleep(for: .milliseconds(10))
        }
        await MainLoop.run { hidden.close() }
    }

    /// Polls until the load event fired, no bridged post is in flight and `--wait-for` holds.
    private func waitForLoad() async {
        var result: String?
        while true {
            try? await Task.sleep(for: .milliseconds(20))
            let settled = await MainLoop.run { [self] in
                loadFinished != nil && (view.pageConnection?.inFlightCount ?? 0) == 0
            }
            guard settled else { continue }
            if let expression = command.waitFor {
                let value = await view.evaluate("(\(expression))")
                guard let value, !["null", "false", "0", "\"\"", "undefined"].contains(value) else { continue }
                result = value
            }
            break
        }
        let final = result
        await MainLoop.run { [self] in report(result: final) }
    }

    private func report(result: String?) {
        guard !finished else { return }
        finished = true
        let replies = view.pageReplies
        let loadMs = loadFinished.map { Self.milliseconds(navigationStart, $0) }
        let lastMs = replies.last.map { Self.milliseconds(navigationStart, $0) }
        let brokerRequests = server.upstreamRequestCount - originBefore
        if command.json {
            var line = JSONObject()
            line["url"] = .string(command.url)
            line["loadEventMs"] = loadMs.map(JSONValue.double) ?? .null
            line["lastBridgedResponseMs"] = lastMs.map(JSONValue.double) ?? .null
            line["bridged"] = .integer(replies.count)
            line["deliveries"] = .integer(view.pageDeliveries)
            line["frameConnections"] = .integer(view.frameConnections.count)
            // CPU time so far, which a loaded machine does not stretch as it does wall time.
            line["cpuMs"] = .object(JSONObject(Self.cpuMilliseconds().map { ($0.key, JSONValue.double($0.value)) }.sorted { $0.0 < $1.0 }))
            line["originRequests"] = .integer(brokerRequests + webKitRequests)
            line["brokerOriginRequests"] = .integer(brokerRequests)
            line["webKitRequests"] = .integer(webKitRequests)
            line["documentFromBroker"] = .bool(documentFromBroker)
            line["port"] = .integer(server.port)
            line["navigationStartEpochMs"] = .double(navigationStartEpoch)
            if let loadFailed { line["loadError"] = .string(loadFailed) }
            if let result { line["result"] = (try? JSONParser.parse(result)) ?? .string(result) }
            StandardOutput.line(JSONValue.object(line).jsonString)
        } else {
            StandardOutput.line(String(format: "loaded in %.1f ms; last bridged response at %@; %d bridged, %d origin requests",
                         loadMs ?? -1, lastMs.map { String(format: "%.1f ms", $0) } ?? "-", replies.count, brokerRequests + webKitRequests))
        }
        if loadFailed != nil { exitCode = 1 }
        MainLoop.quit()
    }

    private func timedOut() {
        guard !finished else { return }
        finished = true
        let message = "bridge-broker open: the page did not finish loading within \(command.timeout) s"
        if command.json { StandardOutput.line(JSONValue.object(JSONObject([("url", .string(command.url)), ("error", .string(message))])).jsonString) }
        StandardOutput.error(message)
        exitCode = 1
        MainLoop.quit()
    }

    /// The bar follows WebKit's estimated progress for the document and the page group's
    /// progress for the bridged requests, each half of the way.
    private func showProgress() {
        let shown = groupProgress.map { (documentProgress + $0) / 2 } ?? documentProgress
        gtk_progress_bar_set_fraction(bridge_progress_bar(bar), min(1, max(0, shown)))
    }

    /// CPU time (user and system) of this process (`host`) and of each descendant by name
    /// (WebKit's web and network processes), in ms, from /proc.
    static func cpuMilliseconds() -> [String: Double] {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        let seconds = { (time: timeval) in Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        var result = ["host": ((seconds(usage.ru_utime) + seconds(usage.ru_stime)) * 1000).rounded()]
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        var processes: [(pid: Int32, parent: Int32, name: String, ms: Double)] = []
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
            else { continue }
            // pid (comm) state ppid ... utime stime: fields 4, 14 and 15.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 12, let parent = Int32(fields[1]), let user = Double(fields[11]), let system = Double(fields[12]) else { continue }
            processes.append((pid, parent, String(stat[stat.index(after: open)..<close]), (user + system) / ticks * 1000))
        }
        // WebKit's processes are children of this one, or of its sandbox (bwrap).
        var family: Set<Int32> = [getpid()]
        var grew = true
        while grew {
            grew = false
            for process in processes where family.contains(process.parent) && !family.contains(process.pid) {
                family.insert(process.pid)
                grew = true
                if process.ms > 0 || process.name.hasPrefix("WebKit") { result[process.name, default: 0] += process.ms.rounded() }
            }
        }
        return result
    }

    static func milliseconds(_ from: ContinuousClock.Instant, _ to: ContinuousClock.Instant) -> Double {
        let duration = to - from
        return (Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15).rounded(toPlaces: 1)
    }
}

extension Double {
    fileprivate func rounded(toPlaces places: Int) -> Double {
        let scale = Foundation.pow(10, Double(places))
        return (self * scale).rounded() / scale
    }
}
