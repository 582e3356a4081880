// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "bridge-broker",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "bridge-broker", targets: ["BridgeBroker"]),
        .library(name: "BridgeCore", targets: ["BridgeCore"]),
        .library(name: "BridgeServer", targets: ["BridgeServer"]),
        .library(name: "BridgeWebView", targets: ["BridgeWebView"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibWebSockets",
            pkgConfig: "libwebsockets",
            providers: [.apt(["libwebsockets-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CWebKitGTK",
            pkgConfig: "webkitgtk-6.0",
            providers: [.apt(["libwebkitgtk-6.0-dev"])]
        ),
        .target(
            name: "BridgeCore",
            dependencies: [.product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "BridgeSQLite",
            dependencies: ["CSQLite", "BridgeCore"]
        ),
        .target(
            name: "BridgeWebSocket",
            dependencies: ["CLibWebSockets", "BridgeCore", .product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "BridgeUpstream",
            dependencies: [
                "BridgeCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "BridgeServer",
            dependencies: [
                "BridgeCore", "BridgeWebSocket", "BridgeUpstream", "BridgeSQLite",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .target(
            name: "BridgeWebView",
            dependencies: ["CWebKitGTK", "BridgeCore"]
        ),
        .target(
            name: "BridgeTestOrigin",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "BridgeBroker",
            dependencies: [
                "BridgeServer", "BridgeCore", "BridgeWebSocket", "BridgeTestOrigin", "BridgeUpstream", "BridgeWebView", "CWebKitGTK",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "HostAppExample",
            dependencies: ["BridgeServer", "BridgeCore"],
            path: "examples/host-app"
        ),
        .executableTarget(
            name: "WebViewAppExample",
            dependencies: ["BridgeServer", "BridgeCore", "BridgeWebView", "BridgeTestOrigin", "CWebKitGTK"],
            path: "examples/webview-app"
        ),
        .testTarget(name: "BridgeCoreTests", dependencies: ["BridgeCore"]),
        .testTarget(name: "BridgeSQLiteTests", dependencies: ["BridgeSQLite"]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "BridgeServer", "BridgeCore", "BridgeWebSocket", "BridgeTestOrigin", "BridgeSQLite",
            ]
        ),
    ]
)
