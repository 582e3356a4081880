# Bridge Broker: `make run` runs the broker with the examples; `make test` runs every test.
SWIFT ?= swift
## The release broker, refused if an incremental build left a module's inlined allocation of
## another module's class at an old, smaller size (the heap corruption of docs/RELIABILITY.md).
RELEASE_BROKER = $(SWIFT) build -c release --product bridge-broker && python3 scripts/check_alloc_sizes.py .build/release/bridge-broker
PORT ?= 8787
DEMO_PORT ?= $(shell echo $$(($(PORT) + 1)))

.PHONY: run build deps shim test-deps test test-asan test-tsan test-fuzz fuzz test-swift test-js test-shim test-browser test-protocol test-monitor test-fleet test-webkit bench bench-preload bench-pageload bench-shim bench-shim-injected bench-fleet bench-webkit bench-webkit-binary conformance host-app webview-app clean

deps:
	@scripts/install-deps.sh

build: deps bridge-js/bridge.js
	$(SWIFT) build --product bridge-broker

## The shim the broker serves: bridge-js/bridge.js, bridge.js.map and bridge.js.gz, joined and minified from
## bridge-js/src/*.js by bridge-js/tools/build.py (Python's standard library only), and the bootstrap
## snippet bridge-snippet.js (with the tag to copy, bridge-snippet.html) from bridge-js/snippet/snippet.js.
shim:
	python3 bridge-js/tools/build.py

# The built shim is committed, so a fresh clone serves it as it is; after an edit under src/, `make
# build` (and so `make run`) rebuilds it first. `make test` checks it is up to date before that.
bridge-js/bridge.js: $(wildcard bridge-js/src/*.js bridge-js/snippet/*.js bridge-js/tools/*.py)
	@python3 bridge-js/tools/build.py && touch $@

## The broker on 127.0.0.1:$(PORT) with its SQLite cache, the shim, the examples, and the demo origin.
run: build
	$(SWIFT) run bridge-broker serve --port $(PORT) --demo-origin $(DEMO_PORT) $(ARGS)

## The example WebKit host app: a BridgeWebView whose page calls a native handler with a reply
## and loads resources through the in-process broker (needs a display: xvfb-run -a make webview-app).
webview-app: deps bridge-js/bridge.js
	$(SWIFT) run WebViewAppExample

## The example host app with its own native handlers.
host-app: deps
	$(SWIFT) run HostAppExample

test-deps:
	@scripts/install-test-deps.sh

## Every test: Swift unit and integration tests (also under AddressSanitizer), the shim's node
## tests, the protocol client tests, the browser tests in headless Chromium, two brokers sharing a
## real squid, the WebKit host in WebKitGTK under xvfb-run, and the fuzzers (the protocol fuzzer
## against the ASan broker that test-asan builds).
test: test-deps test-shim
	$(SWIFT) build --build-tests
	SWIFT=$(SWIFT) scripts/swift-test.sh
	$(MAKE) --no-print-directory test-js test-protocol test-browser test-monitor test-fleet test-webkit test-asan test-fuzz

## The Swift tests built with AddressSanitizer into their own build path (docs/RELIABILITY.md).
## LeakSanitizer is on: a block left unreachable at the tests' exit fails the run; what is not the
## broker's own (XCTest, swift-nio's process-wide pool, Swift's weak side tables) is suppressed in
## scripts/lsan.supp, line by line with the reason. A 16 MiB quarantine (ASan's default is 256 MiB)
## so that freed memory leaves RSS, which the memory-bound tests measure, while a use after free
## within the last 16 MiB freed is still caught.
test-asan: deps
	$(SWIFT) build --build-tests --sanitize=address --build-path .build-asan
	ASAN_OPTIONS=detect_leaks=1:quarantine_size_mb=16 LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan.supp:print_suppressions=0 \
		SWIFT=$(SWIFT) scripts/swift-test.sh --sanitize=address --build-path .build-asan

## The Swift tests built with ThreadSanitizer (not in `make test`: a third full build). The
## suppressions in scripts/tsan.supp are explained line by line there.
test-tsan: deps
	$(SWIFT) build --build-tests --sanitize=thread --build-path .build-tsan
	TSAN_OPTIONS="suppressions=$(CURDIR)/scripts/tsan.supp halt_on_error=0 exitcode=66" SWIFT=$(SWIFT) scripts/swift-test.sh --sanitize=thread --build-path .build-tsan

test-swift: deps
	$(SWIFT) test

test-js: bridge-js/bridge.js
	cd bridge-js && node --test test/

## The shim's build: its tokenizer, minifier and source map, and that the committed bridge.js is
## what bridge-js/src gives (this runs before anything rebuilds it).
test-shim:
	python3 -m pytest -q tests/shim

## Every fuzz target's committed corpus once, then FUZZ_SECONDS (3) of fuzzing each, and 15 s of the
## protocol fuzzer against a broker (the ASan build in .build-asan if there is one) (docs/RELIABILITY.md).
test-fuzz: build
	scripts/fuzz.sh --check
	python3 -m pytest -q tests/fuzz

## Every libFuzzer target for FUZZ_SECONDS (default 60) each, then the protocol fuzzer as long;
## `make fuzz FUZZ_SECONDS=600` for the long run.
FUZZ_SECONDS ?= 60
fuzz: build
	FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh
	python3 tests/fuzz/protocol_fuzz.py --seconds $(FUZZ_SECONDS) --seed $${FUZZ_SEED:-1}

test-protocol test-browser test-monitor test-fleet test-webkit: build
	python3 -m pytest -q tests/$(subst test-,,$@)

bench: deps
	$(RELEASE_BROKER)
	.build/release/bridge-broker bench $(ARGS)

## First load of a 30-resource page behind a 50 ms origin, without and after preload, in headless Chromium.
bench-preload: test-deps
	$(RELEASE_BROKER)
	BRIDGE_BROKER_BINARY=.build/release/bridge-broker python3 scripts/bench_preload.py $(ARGS)

## A page's first load through the shim against the browser's own cache (the seed's hidden page of
## <link rel=preload>), cold and after preload, in headless Chromium (ARGS='--rounds 7 --profile').
bench-pageload: test-deps bridge-js/bridge.js
	$(RELEASE_BROKER)
	BRIDGE_BROKER_BINARY=.build/release/bridge-broker python3 scripts/bench_pageload.py $(ARGS)

## The seed's four-way table in WebKit (WebKitGTK under xvfb-run): WebKit cold, WebKit after the
## hidden view of <link rel=preload>, the shim over the WebSocket and this host, after preload.
bench-webkit: test-deps bridge-js/bridge.js
	$(RELEASE_BROKER)
	BRIDGE_BROKER_BINARY=.build/release/bridge-broker xvfb-run -a python3 scripts/bench_webkit.py $(ARGS)

## Host-to-page binary bodies in WebKitGTK: base64 through evaluate_javascript, base64 as a script
## message reply, and an ArrayBuffer-valued JSCValue as the reply (scripts/webkit-binary/main.swift).
bench-webkit-binary: test-deps
	mkdir -p .build
	swiftc -O -I Sources/CWebKitGTK $$(pkg-config --cflags webkitgtk-6.0 | sed 's/-I/-Xcc -I/g; s/-mfpmath=sse//; s/-msse2//; s/-msse//; s/-pthread//') \
		scripts/webkit-binary/main.swift -lsoup-3.0 -o .build/webkit-binary
	xvfb-run -a .build/webkit-binary

## The shim's size and its load-to-evaluated time in headless Chromium, against other builds (ARGS='--rev REV').
bench-shim: test-deps
	python3 scripts/bench_shim_load.py $(ARGS)

bench-shim-injected: test-deps bridge-js/bridge.js
	python3 scripts/bench_shim_injected.py $(ARGS)

## A second broker's first load of the demo page, without and with squid as a shared tier (docs/FLEET.md).
bench-fleet: test-deps
	$(RELEASE_BROKER)
	BRIDGE_BROKER_BINARY=.build/release/bridge-broker python3 scripts/bench_fleet.py $(ARGS)

conformance: build
	scripts/autobahn.sh

clean:
	$(SWIFT) package clean
