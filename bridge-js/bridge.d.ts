// Type declarations for bridge.js, the page shim of Bridge Broker (protocol bridge.v1).
//
// bridge.js is a classic script that defines globalThis.BridgeBroker; it has no exports. Use it with
//   <script src="http://127.0.0.1:8787/bridge.js"></script>      (and /// <reference path="bridge.d.ts" />)
// or
//   import "http://127.0.0.1:8787/bridge.js";                     (side-effect import)
// This file is a module only so that it can augment the global scope.

export {};

declare global {
  /** The protocol's error codes; hosts may add their own. */
  type BridgeErrorCode =
    | "bad_message"
    | "unknown_handler"
    | "bad_request"
    | "duplicate_id"
    | "too_many_in_flight"
    | "forbidden"
    | "network"
    | "timeout"
    | "cancelled"
    | "not_cached"
    | "too_large"
    | "internal"
    | (string & {});

  /** What every failed post rejects with. */
  interface BridgeError extends Error {
    readonly name: "BridgeError";
    /** The protocol error code, e.g. "unknown_handler" or "network". */
    readonly code: BridgeErrorCode;
    /** On `error` events for a duplicate id: the offending id. */
    readonly duplicateId?: number;
  }

  interface BridgeErrorConstructor {
    new (code: BridgeErrorCode, message: string, extra?: object): BridgeError;
    readonly prototype: BridgeError;
  }

  /** The broker's first frame on every connection. */
  interface BridgeHello {
    type: "hello";
    protocol: number;
    broker: string;
    handlers: string[];
    limits: {
      maxMessageBytes: number;
      maxInFlight: number;
      binaryChunkBytes?: number;
      [name: string]: unknown;
    };
    [field: string]: unknown;
  }

  interface BridgePostOptions {
    /** Aborting sends {"type":"cancel"} and rejects with the signal's reason (an AbortError by default). */
    signal?: AbortSignal;
    /** Receives the post's own events (those carrying its id), in order, before the reply. */
    onEvent?(name: string, body: unknown): void;
    /** Receives the post's binary frames: payload bytes and the END flag. */
    onBinary?(bytes: Uint8Array, end: boolean): void;
  }

  interface BridgeBackoff {
    /** First reconnect delay ceiling in ms (default 250). */
    initial?: number;
    /** Largest delay ceiling in ms (default 30000). */
    max?: number;
    /** Growth per failed attempt (default 2). Each delay is random between half and all of the ceiling. */
    factor?: number;
  }

  /** A URL prefix, a glob over the whole URL (`*` = any run of characters), or a RegExp. "/x" means this page's origin + "/x". */
  type BridgeUrlPattern = string | RegExp;

  /** "fetch xhr" (default), "fetch", "xhr", "none", true, false, or {fetch, xhr}. */
  type BridgePatchTargets = string | string[] | boolean | { fetch?: boolean; xhr?: boolean; eventSource?: boolean };

  interface BridgeConnectOptions {
    /** ws(s):// URL of the broker's /bridge endpoint; an http(s) origin becomes ws(s)://host/bridge. */
    url?: string;
    /** Sent as ?token= in the handshake URL. */
    token?: string | null;
    /** "auto" (default: WKWebView's `bridge` handler when the host registered one, else WebSocket), "websocket" or "webkit". */
    transport?: "auto" | "websocket" | "webkit";
    backoff?: BridgeBackoff;
    /** How long a post may wait for a connection before failing with `network` (ms, default 30000). */
    queueTimeout?: number;
    /** Which globals to patch; changes the patch when present. */
    patch?: BridgePatchTargets;
    /** Only these URLs are bridged (all http(s) URLs when empty). */
    include?: BridgeUrlPattern | BridgeUrlPattern[];
    /** These URLs are never bridged. */
    exclude?: BridgeUrlPattern | BridgeUrlPattern[];
    /** Broker-side timeout of bridged fetch/XHR requests without their own (ms, default 86400000). */
    requestTimeout?: number;
  }

  /** Settings read at load time from globalThis.BridgeBrokerConfig (script data-* attributes win). */
  interface BridgeBrokerConfig extends BridgeConnectOptions {
    /** false: do not connect until BridgeBroker.connect() is called. */
    autoConnect?: boolean;
    /** false: do not polyfill window.webkit.messageHandlers. */
    messageHandlers?: boolean;
    /** false: do not send the page's first fetches early over HTTP (POST /bridge/early) while the WebSocket opens. */
    earlyPosts?: boolean;
    /** true or options: show the loading bar at once. */
    loadingBar?: boolean | BridgeLoadingBarOptions;
  }

  interface BridgeProgressEvent {
    /** 0 ... 1, monotonic during a load; 1 exactly when the load has ended. */
    progress: number;
    /** The group the load's requests carry. */
    group: string;
    /** True on the last event of a load. */
    done: boolean;
  }

  /** The body of the broker's `group.progress` subscription events. */
  interface BridgeGroupProgress {
    group: string;
    requests: number;
    finished: number;
    loaded: number;
    total: number;
    progress: number;
  }

  interface BridgeLoadingBarOptions {
    /** CSS colour (default #2f80ed). */
    color?: string;
    /** CSS height (default 3px). */
    height?: string;
  }

  interface BridgeLoadingBar {
    readonly element: HTMLElement;
    remove(): void;
  }

  /** What the broker's `response` event said, kept on every bridged Response. */
  interface BridgeResponseInfo {
    status: number;
    statusText: string;
    headers: Array<[string, string]>;
    url: string;
    redirected: boolean;
    cache: { status: "hit" | "miss" | "revalidated" | "stale" | "bypass"; age?: number } | null;
  }

  interface BridgeRequestInit extends Omit<RequestInit, "cache"> {
    /** Also accepts Apple's URLRequest.CachePolicy names and "only-if-cached" in any mode. */
    cache?: RequestCache | "useProtocolCachePolicy" | "reloadIgnoringLocalCacheData" | "reloadIgnoringLocalAndRemoteCacheData" | "returnCacheDataElseLoad" | "returnCacheDataDontLoad" | "reloadRevalidatingCacheData";
    /** Broker-side timeout for the whole exchange, in ms. */
    timeout?: number;
  }

  interface Response {
    /** Set on responses that came through the broker. */
    readonly bridge?: BridgeResponseInfo;
  }

  type BridgeEventName = "open" | "close" | "error" | "progress" | "group.progress" | (string & {});

  interface BridgeBrokerAPI {
    readonly version: string;
    /** Resolves with the first hello; never rejects. */
    readonly ready: Promise<BridgeHello>;
    /** The latest hello, or null before the first. */
    readonly hello: BridgeHello | null;
    /** True while a connection is open and its hello has arrived. */
    readonly connected: boolean;
    readonly state: "idle" | "connecting" | "open" | "closed";
    /** The broker's WebSocket URL (without the token). */
    readonly url: string;
    /** The transport in use, or null between connections. */
    readonly transport: "websocket" | "webkit" | null;

    /** Sends a post and resolves with the reply's body; rejects with a BridgeError (or the abort reason). */
    post<T = unknown>(name: string, body?: unknown, options?: BridgePostOptions): Promise<T>;
    /** Fire-and-forget post (no id, no reply); a failure arrives as an `error` event. */
    send(name: string, body?: unknown): void;
    /** (Re)connects, optionally with new settings; posts in flight on the old connection fail with `network`. */
    connect(options?: BridgeConnectOptions): void;
    /** Closes the connection and stops reconnecting; queued and in-flight posts fail with `network`. */
    disconnect(): void;

    /** Subscription events (no id) by name, plus "open" (hello), "close" ({code, reason}), "error" (BridgeError) and "progress". Returns an unsubscribe function. */
    on(name: "progress", listener: (event: BridgeProgressEvent) => void): () => void;
    on(name: "group.progress", listener: (body: BridgeGroupProgress) => void): () => void;
    on(name: "open", listener: (hello: BridgeHello) => void): () => void;
    on(name: "close", listener: (info: { code: number; reason: string }) => void): () => void;
    on(name: "error", listener: (error: BridgeError) => void): () => void;
    on(name: BridgeEventName, listener: (body: any, envelope?: { type: "event"; name: string; body: unknown }) => void): () => void;
    off(name: BridgeEventName, listener: (...args: any[]) => void): void;
    addEventListener(name: "progress", listener: (event: BridgeProgressEvent) => void): void;
    addEventListener(name: BridgeEventName, listener: (body: any, envelope?: { type: "event"; name: string; body: unknown }) => void): void;
    removeEventListener(name: BridgeEventName, listener: (...args: any[]) => void): void;

    /** Page-load progress, 0 ... 1, like WKWebView's estimatedProgress. */
    readonly progress: number;
    /** True until the current load has ended. */
    readonly loading: boolean;
    /** The group id requests of the current load carry, or null once it has ended. */
    readonly group: string | null;
    /** Starts a new load (e.g. a client-side navigation) and returns its group id. */
    beginLoad(): string;
    /** Shows the loading bar (once per page; later calls return the same bar). */
    showLoadingBar(options?: BridgeLoadingBarOptions): BridgeLoadingBar | null;
    hideLoadingBar(): void;

    /** Which globals are patched now. */
    readonly patched: { fetch: boolean; xhr: boolean; eventSource: boolean };
    /** Patches fetch and/or XMLHttpRequest (both by default), optionally with new include/exclude rules. */
    patch(targets?: BridgePatchTargets, rules?: { include?: BridgeUrlPattern | BridgeUrlPattern[]; exclude?: BridgeUrlPattern | BridgeUrlPattern[] }): void;
    /** Restores the native fetch and XMLHttpRequest. */
    unpatch(): void;

    /** fetch through the broker for any http(s) URL except the broker's own origin, whatever the patch and rules. */
    fetch(input: RequestInfo | URL, init?: BridgeRequestInit): Promise<Response>;
    /** The fetch the page had before the shim. */
    readonly nativeFetch: typeof fetch | null;
    /** The bridged XMLHttpRequest class (what the global is when patched). */
    readonly XMLHttpRequest: { new (): XMLHttpRequest; prototype: XMLHttpRequest; readonly UNSENT: 0; readonly OPENED: 1; readonly HEADERS_RECEIVED: 2; readonly LOADING: 3; readonly DONE: 4 } | null;
    /** The XMLHttpRequest the page had before the shim. */
    readonly NativeXMLHttpRequest: typeof XMLHttpRequest | null;
    /** The bridged EventSource class (what the global is when patched). */
    readonly EventSource: typeof EventSource | null;
    /** The EventSource the page had before the shim. */
    readonly NativeEventSource: typeof EventSource | null;

    readonly BridgeError: BridgeErrorConstructor;
  }

  interface BridgeMessageHandler {
    /** Outside WKWebView: the same as BridgeBroker.post(name, body). */
    postMessage(body?: unknown): Promise<any>;
  }

  interface Window {
    /** In WKWebView the host's handlers; elsewhere the shim's polyfill, where every name is a handler. */
    webkit?: { messageHandlers: Record<string, BridgeMessageHandler> };
    /** WKWebView transport: the host delivers broker frames here (JSON string, "b64:" + base64, ArrayBuffer or object). */
    __bridgeBrokerReceive?: (frame: string | ArrayBuffer | ArrayBufferView | object) => boolean;
    /** WKWebView transport: the host reports that its side closed. */
    __bridgeBrokerClose?: (code?: number, reason?: string) => void;
  }

  var BridgeBroker: BridgeBrokerAPI;
  var BridgeBrokerConfig: BridgeBrokerConfig | undefined;
}
