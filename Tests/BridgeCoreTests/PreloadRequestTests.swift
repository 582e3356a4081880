import BridgeCore
import Testing

@Suite struct PreloadRequestTests {
    @Test(arguments: [
        (JSONValue.string("x"), "object"), ([:], "needs"), (["urls": []], "needs"), (["urls": "http://a/"], "list"),
        (["urls": [5]], "URL string"), (["urls": [["priority": 1]]], "url"), (["urls": ["/relative"]], "absolute"),
        (["urls": ["ftp://a/"]], "http"), (["page": 3], "string"), (["manifest": "nope"], "absolute"),
        (["urls": ["http://a/"], "concurrency": 0], "concurrency"), (["urls": ["http://a/"], "perHost": 65], "perHost"),
        (["urls": ["http://a/"], "maxBytes": -1], "maxBytes"), (["urls": ["http://a/"], "maxCount": "3"], "maxCount"),
        (["urls": ["http://a/"], "priority": "random"], "priority"), (["urls": ["http://a/"], "includePage": true], "page"),
        (["page": "http://a/", "includePage": "yes"], "boolean"), (["urls": ["http://a/"], "depth": 2], "depth"),
        (["urls": ["http://a/"], "timeout": 0], "timeout"),
    ] as [(JSONValue, String)])
    func invalidBodiesAreBadRequest(body: JSONValue, mentions: String) {
        #expect {
            try PreloadRequest(json: body)
        } throws: { error in
            guard let error = error as? BridgeError else { return false }
            return error.code == .badRequest && error.message.contains(mentions)
        }
    }

    @Test func defaultsAndOptions() throws {
        let request = try PreloadRequest(json: [
            "urls": ["HTTP://Example.com:80/a#x", ["url": "https://b.example/", "priority": 5]], "page": "http://p.example/",
            "concurrency": 3, "perHost": 2, "maxBytes": 1000, "maxCount": 4, "priority": "listed", "includePage": true, "group": "g",
        ])
        #expect(request.urls == [
            PreloadResource(url: "http://example.com/a", source: "urls"), PreloadResource(url: "https://b.example/", priority: 5, source: "urls"),
        ])
        #expect(request.page == "http://p.example/")
        #expect((request.concurrency, request.perHost, request.maxBytes, request.maxCount) == (3, 2, 1000, 4))
        #expect(request.order == .listed && request.includePage && request.group == "g")
        let defaults = try PreloadRequest(json: ["manifest": "http://m.example/list.json"])
        #expect((defaults.concurrency, defaults.perHost, defaults.order, defaults.includePage) == (6, 6, .priority, false))
        #expect(defaults.maxBytes == nil && defaults.maxCount == nil)
    }
}
