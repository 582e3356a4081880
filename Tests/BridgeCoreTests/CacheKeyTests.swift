import BridgeCore
import Testing

@Suite struct CacheKeyTests {
    @Test(arguments: [
        ("http://a.test/x", "http://a.test/x"),
        ("http://a.test/x?q=1#frag", "http://a.test/x?q=1"),
        ("http://a.test/x#", "http://a.test/x"),
        ("http://a.test/x#a#b", "http://a.test/x"),
        ("http://a.test/é?ü#ß", "http://a.test/é?ü"),
        // A `#` that a combining mark follows is one Character with it, but still the fragment's start.
        ("http://a.test/x#\u{20E3}y", "http://a.test/x"),
    ])
    func theFragmentStartsAtTheFirstHashByte(_ url: String, _ key: String) {
        #expect(CacheKey.primary(for: url) == key)
    }
}
