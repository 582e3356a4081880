/// What to do with a request before any network traffic, as decided by `CachePlanner.plan`.
///
/// Convenience accessors summarise every case: whether the network is used, which headers to
/// add to the upstream request, whether a conditional request is sent, whether the cache may
/// be written.
public enum CachePlan: Sendable, Hashable {
    /// Serve a stored response; nothing goes to the network (unless `backgroundRevalidation`).
    case serveStored(StoredReply)
    /// Send a conditional request to validate a stored response.
    case revalidate(ConditionalFetch)
    /// Send an unconditional request.
    case fetch(NetworkFetch)
    /// Do not use the network and fail (e.g. `only-if-cached` with nothing usable stored).
    case fail(CacheFailure)

    /// Whether the request goes to the network in the foreground.
    public var usesNetwork: Bool {
        switch self {
        case .revalidate, .fetch: return true
        case .serveStored, .fail: return false
        }
    }

    /// Headers to add to the client's request when forwarding it (empty when not forwarding).
    public var upstreamHeaders: HeaderList {
        switch self {
        case .revalidate(let plan): return plan.modeHeaders.appending(plan.conditionalHeaders)
        case .fetch(let plan): return plan.modeHeaders.appending(plan.fill?.requestHeaders ?? HeaderList())
        case .serveStored, .fail: return HeaderList()
        }
    }

    /// The headers to send upstream for a client request with `clientHeaders`: those headers
    /// plus `upstreamHeaders`; a partial fill replaces the client's `Range` with its own.
    public func upstreamRequestHeaders(_ clientHeaders: HeaderList) -> HeaderList {
        if case .fetch(let plan) = self, plan.fill != nil {
            return clientHeaders.removing(["range", "if-range"]).appending(upstreamHeaders)
        }
        return clientHeaders.appending(upstreamHeaders)
    }

    /// Whether the forwarded request carries validators (`If-None-Match`/`If-Modified-Since`).
    public var sendsConditionalRequest: Bool {
        if case .revalidate = self { return true }
        return false
    }

    /// Whether the network result may be written to the cache (store or 304 update).
    public var mayWriteCache: Bool {
        switch self {
        case .revalidate(let plan): return plan.mayStore
        case .fetch(let plan): return plan.mayStore
        case .serveStored, .fail: return false
        }
    }

    /// The stored response involved (served, validated, or kept as stale-if-error fallback).
    public var storedEntry: CachedResponse? {
        switch self {
        case .serveStored(let reply): return reply.entry
        case .revalidate(let plan): return plan.entry
        case .fetch(let plan): return plan.fallback
        case .fail: return nil
        }
    }
}

/// Why the cache could not answer without the network when the network was not allowed.
public enum CacheFailure: Error, Sendable, Hashable {
    /// Nothing usable is stored (`only-if-cached` mode or request directive); reply 504 or a
    /// network error, as the Fetch standard does.
    case notCached
}

/// A conditional request validating a stored response.
public struct ConditionalFetch: Sendable, Hashable {
    /// The stored response being validated.
    public var entry: CachedResponse
    /// Validators to add: `If-None-Match` and/or `If-Modified-Since`.
    public var conditionalHeaders: HeaderList
    /// Headers the cache mode adds (`Cache-Control: max-age=0` for `no-cache`).
    public var modeHeaders: HeaderList
    /// Whether a 200 may be stored and a 304 may update the entry.
    public var mayStore: Bool
    /// The `Cache-Status` `fwd` reason (`stale` or `request`).
    public var forward: CacheStatusEntry.Forward
    /// The range of the stored body to serve after a 304 (the client's `Range`), nil for all.
    public var range: ByteRangeSpec? = nil
}

/// An unconditional request to the network.
public struct NetworkFetch: Sendable, Hashable {
    /// Headers the cache mode adds (`Pragma`/`Cache-Control: no-cache`, or `max-age=0`).
    public var modeHeaders: HeaderList
    /// Whether the response may be stored (subject to `Storability`).
    public var mayStore: Bool
    /// A selected stored response without validators, usable for stale-if-error and
    /// removed if a non-storable replacement arrives.
    public var fallback: CachedResponse?
    /// The `Cache-Status` `fwd` reason.
    public var forward: CacheStatusEntry.Forward
    /// The reply status when the network response is served (`.miss` or `.bypass`).
    public var reply: ReplyCacheStatus
    /// The bytes a stored partial response lacks, asked for to complete it (RFC 9111 §3.4).
    public var fill: PartialFill? = nil
}

/// A request for the bytes a stored partial response lacks, so that it and the answer combine
/// into a larger (or whole) stored response and the client's request is served from that.
public struct PartialFill: Sendable, Hashable {
    /// The stored partial response.
    public var entry: CachedResponse
    /// What it holds: its byte span and the representation's length.
    public var stored: ContentRange
    /// The bytes the client wants (the whole representation when it sent no `Range`).
    public var target: ClosedRange<Int>
    /// Whether the client sent no `Range`: it must get a whole 200, or nothing from here.
    public var wantsWhole: Bool
    /// The bytes asked for upstream.
    public var fetch: ClosedRange<Int>
    /// The strong validator sent as `If-Range`, so that a changed representation comes whole.
    public var ifRange: String

    /// `Range` and `If-Range` for the upstream request.
    public var requestHeaders: HeaderList {
        ["range": "bytes=\(fetch.lowerBound)-\(fetch.upperBound)", "if-range": ifRange]
    }
}
