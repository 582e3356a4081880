import Testing
@testable import BridgeCore

struct CacheStatusTests {
    @Test(arguments: [
        (CacheStatusEntry(hit: true, ttl: 42), "bridge-broker; hit; ttl=42"),
        (CacheStatusEntry(forward: .uriMiss, forwardStatus: 200, ttl: 60, stored: true),
         "bridge-broker; fwd=uri-miss; fwd-status=200; ttl=60; stored"),
        (CacheStatusEntry(forward: .stale, forwardStatus: 304, ttl: 10),
         "bridge-broker; fwd=stale; fwd-status=304; ttl=10"),
        (CacheStatusEntry(forward: .bypass), "bridge-broker; fwd=bypass"),
        (CacheStatusEntry(forward: .request, forwardStatus: 200),
         "bridge-broker; fwd=request; fwd-status=200"),
        (CacheStatusEntry(hit: true, ttl: -5, detail: #"say "hi"\now"#),
         #"bridge-broker; hit; ttl=-5; detail="say \"hi\"\\now""#),
        (CacheStatusEntry(cacheName: "My Cache", hit: true), #""My Cache"; hit"#),
        (CacheStatusEntry(cacheName: "edge/1.0:a", forward: .varyMiss), "edge/1.0:a; fwd=vary-miss"),
    ])
    func serialisesRFC9211(entry: CacheStatusEntry, expected: String) {
        #expect(entry.headerValue == expected)
    }

    @Test func ttlRoundsTowardZeroAndClamps() {
        #expect(CacheStatusEntry.ttl(41.9) == 41)
        #expect(CacheStatusEntry.ttl(-40.5) == -40)
        #expect(CacheStatusEntry.ttl(1e12) == 2_147_483_648)
    }
}
