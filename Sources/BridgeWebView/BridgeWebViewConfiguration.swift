import BridgeCore

/// How a `BridgeWebView` injects the shim and which native handlers it exposes.
public struct BridgeWebViewConfiguration: Sendable {
    /// The shim's source (bridge-js/bridge.js), injected at document start.
    public var shimSource: String
    /// Whether the shim is injected at all: false makes a plain WebKit view (the page may still
    /// include the shim itself and use the WebSocket).
    public var injectShim = true
    /// `globalThis.BridgeBrokerConfig` for the injected shim (bridge-js/README.md, "Settings").
    public var shimSettings: JSONObject = JSONObject()
    /// WebKit URL patterns (`http://example.com/*`) of the documents the shim is injected into;
    /// empty: every document.
    public var injectInto: [String] = []
    /// WebKit URL patterns of documents the shim is never injected into.
    public var neverInjectInto: [String] = []
    /// Handler names exposed as `window.webkit.messageHandlers.NAME`, answered by the broker's
    /// handler of that name with a reply; nil: every handler the broker has when the view is made.
    public var nativeHandlers: [String]? = nil
    /// Whether `load(_:)` shows a document the broker has stored (`preload` with `includePage`)
    /// from the broker's cache, with its real URL as base, instead of asking the network.
    public var loadStoredDocuments = true
    /// The largest queue of frames for the page, in bytes, before the broker waits.
    public var highWater = 8 << 20

    /// A configuration injecting `shimSource`.
    public init(shimSource: String) {
        self.shimSource = shimSource
    }
}
