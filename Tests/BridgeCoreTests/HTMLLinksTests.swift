import BridgeCore
import Testing

@Suite struct HTMLLinksTests {
    let page = "https://example.com/app/index.html"

    @Test func findsPreloadModulepreloadAndPrefetchResolvingRelativeHrefs() {
        let html = """
            <!doctype html><HTML><head>
            <link rel="stylesheet" href="/ignored.css">
            <LINK REL="Preload" HREF="style.css" as=style>
            <link rel='modulepreload' href='/js/app.mjs'>
            <link rel=prefetch href=../next.html>
            <link href="https://cdn.example.net/font.woff2" rel="preload font" as="font" crossorigin>
            <link rel="preload" href="img.png?a=1&amp;b=2#frag" fetchpriority="high">
            <link rel="preload">
            """
        let links = HTMLLinks.extract(html: html, pageURL: page)
        #expect(links.map(\.url) == [
            "https://example.com/app/style.css", "https://example.com/js/app.mjs", "https://example.com/next.html",
            "https://cdn.example.net/font.woff2", "https://example.com/app/img.png?a=1&b=2",
        ])
        #expect(links.map(\.rel) == ["preload", "modulepreload", "prefetch", "preload", "preload"])
        #expect(links.map(\.priority) == [2, 2, 0, 2, 3])
    }

    @Test func baseHrefAppliesToEveryLink() {
        let html = #"<link rel="preload" href="a.js"><base href="/static/"><base href="/ignored/"><link rel="preload" href="b.js">"#
        let links = HTMLLinks.extract(html: html, pageURL: page)
        #expect(links.map(\.url) == ["https://example.com/static/a.js", "https://example.com/static/b.js"])
    }

    @Test func commentsAndRawTextAreSkipped() {
        let html = """
            <!-- <link rel="preload" href="commented.js"> -->
            <script>document.write('<link rel="preload" href="scripted.js">')</script>
            <style>/* <link rel="preload" href="styled.css"> */</style>
            <title><link rel=preload href=titled.js></title>
            <link rel="preload" href="real.js">
            """
        #expect(HTMLLinks.extract(html: html, pageURL: page).map(\.href) == ["real.js"])
    }

    @Test func characterReferencesInValuesAreDecoded() {
        let html = #"<link rel="preload" href="/x?q=&#x41;&#66;&quot;&unknown;">"#
        #expect(HTMLLinks.extract(html: html, pageURL: page).first?.href == "/x?q=AB\"&unknown;")
    }

    @Test func truncatedHTMLEndsCleanly() {
        #expect(HTMLLinks.extract(html: #"<link rel="preload" href="a.js"#, pageURL: page).isEmpty)
        #expect(HTMLLinks.extract(html: "<link rel=preload href=a.js", pageURL: page).isEmpty)
        #expect(HTMLLinks.extract(html: "<link rel=preload href=a.js><link rel=preload href=b.js", pageURL: page).map(\.href) == ["a.js"])
        #expect(HTMLLinks.extract(html: "<!-- never closed <link rel=preload href=a.js>", pageURL: page).isEmpty)
    }
}
