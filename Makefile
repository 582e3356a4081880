# Bridge Broker: `make run` runs the broker with the examples; `make test` runs every test.
SWIFT ?= swift
PORT ?= 8787
DEMO_PORT ?= $(shell echo $$(($(PORT) + 1)))

.PHONY: run build deps test-deps test test-swift test-js test-browser test-protocol test-monitor bench bench-preload conformance host-app clean

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build --product bridge-broker

## The broker on 127.0.0.1:$(PORT) with its SQLite cache, the shim, the examples, and the demo origin.
run: build
	$(SWIFT) run bridge-broker serve --port $(PORT) --demo-origin $(DEMO_PORT) $(ARGS)

## The example host app with its own native handlers.
host-app: deps
	$(SWIFT) run HostAppExample

test-deps:
	@scripts/install-test-deps.sh

## Every test: Swift unit and integration tests, the shim's node tests, the protocol client tests
## and the browser tests in headless Chromium.
test: test-deps
	$(SWIFT) build --build-tests
	SWIFT=$(SWIFT) scripts/swift-test.sh
	$(MAKE) --no-print-directory test-js test-protocol test-browser test-monitor

test-swift: deps
	$(SWIFT) test

test-js:
	cd bridge-js && node --test test/

test-protocol test-browser test-monitor: build
	python3 -m pytest -q tests/$(subst test-,,$@)

bench: deps
	$(SWIFT) build -c release --product bridge-broker
	.build/release/bridge-broker bench $(ARGS)

## First load of a 30-resource page behind a 50 ms origin, without and after preload, in headless Chromium.
bench-preload: test-deps
	$(SWIFT) build -c release --product bridge-broker
	BRIDGE_BROKER_BINARY=.build/release/bridge-broker python3 scripts/bench_preload.py $(ARGS)

conformance: build
	scripts/autobahn.sh

clean:
	$(SWIFT) package clean
