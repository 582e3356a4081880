#!/usr/bin/env bash
# Builds the libFuzzer targets of Fuzz/Targets.swift and runs them (docs/RELIABILITY.md).
#
#   scripts/fuzz.sh [TARGET...]         run each target for FUZZ_SECONDS (default 60) seconds
#   scripts/fuzz.sh --check [TARGET...] run each target's committed corpus once, then fuzz it for
#                                       FUZZ_SECONDS (default 3): what `make test` runs
#
# The binary is BridgeCore's sources and the targets compiled as one module with
# `swiftc -sanitize=fuzzer,address` (one module named BridgeCore, so internal parsers are reachable without
# changing their access), linked against swift-log's Logging from the package checkout.
# New inputs go to .build-fuzz/corpus/TARGET (not committed); the committed seeds and the inputs
# of fixed crashes are in Fuzz/corpus/TARGET. A crash or failed property leaves its input in
# .build-fuzz/crashes/ and makes the script fail after every target has run.
set -euo pipefail
cd "$(dirname "$0")/.."

check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
seconds=${FUZZ_SECONDS:-$([ "$check" = 1 ] && echo 3 || echo 60)}
swiftc=${SWIFTC:-swiftc}
out=.build-fuzz
mkdir -p "$out/crashes"

# swift-log's sources come from the package checkout.
logging=.build/checkouts/swift-log/Sources/Logging
if [ ! -d "$logging" ]; then swift package resolve >/dev/null; fi
if [ ! -f "$out/libLogging.a" ]; then
    echo "fuzz: building Logging"
    mapfile -t logging_sources < <(find "$logging" -name '*.swift')
    "$swiftc" -O -swift-version 6 -parse-as-library -module-name Logging -package-name swift_log -emit-library -static \
        -emit-module -emit-module-path "$out/Logging.swiftmodule" -o "$out/libLogging.a" "${logging_sources[@]}"
fi

# BridgeWebSocket's static files (request paths, Accept-Encoding, If-None-Match) are plain Swift too.
mapfile -t sources < <(find Sources/BridgeCore Fuzz Sources/BridgeWebSocket/StaticFiles.swift Sources/BridgeWebSocket/Precompressed.swift -name '*.swift' | sort)
binary="$out/bridge-fuzz"
if [ ! -x "$binary" ] || [ -n "$(find "${sources[@]}" -newer "$binary" | head -1)" ]; then
    echo "fuzz: building $binary"
    "$swiftc" -O -g -sanitize=fuzzer,address -suppress-warnings -swift-version 6 -parse-as-library -module-name BridgeCore \
        -I "$out" -L "$out" -lLogging "${sources[@]}" -o "$binary" 2>&1 \
        | grep -v "ld.gold: warning: Cannot export local symbol '__asan" || true
    [ -x "$binary" ] && [ -z "$(find "${sources[@]}" -newer "$binary" | head -1)" ] || { echo "fuzz: build failed"; exit 1; }
fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(find Fuzz/corpus -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort)
fi

failed=()
for target in "${targets[@]}"; do
    seeds="Fuzz/corpus/$target"
    [ -d "$seeds" ] || { echo "fuzz: no corpus $seeds"; failed+=("$target"); continue; }
    work="$out/corpus/$target"
    mkdir -p "$work"
    log="$out/$target.log"
    export BRIDGE_FUZZ_TARGET=$target
    # Swift's own backtracer reads the crashed process's memory in a way ASan reports as a second,
    # unrelated crash; libFuzzer and ASan print the stack.
    export SWIFT_BACKTRACE=enable=no
    # LeakSanitizer on (libFuzzer's default, said explicitly): after an input whose run allocated
    # more than it freed, libFuzzer asks LSan for unreachable blocks and fails the input with its
    # stack; at exit LSan checks the whole process. Process-lifetime state (Swift metadata caches,
    # the public suffix list, the static-files tree) stays reachable from globals, so it is not reported.
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
    status=0
    : >"$log"
    if [ "$check" = 1 ]; then
        # Every committed input once (seeds and the inputs of fixed crashes): a regression fails here.
        "$binary" -runs=0 "$seeds" >>"$log" 2>&1 || status=$?
    fi
    # The short run in `make test` starts from a fixed seed (FUZZ_SEED, default 1), so a clean
    # clone fuzzes the same inputs each time and a failure there reproduces; `make fuzz` explores.
    seed=()
    if [ "$check" = 1 ]; then seed=(-seed="${FUZZ_SEED:-1}"); elif [ -n "${FUZZ_SEED:-}" ]; then seed=(-seed="$FUZZ_SEED"); fi
    if [ "$status" = 0 ]; then
        "$binary" "$work" "$seeds" "${seed[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 -detect_leaks=1 \
            -artifact_prefix="$out/crashes/$target-" -print_final_stats=1 >>"$log" 2>&1 || status=$?
    fi
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo 0)
    # libFuzzer's INITED line is after loading the corpus; its last status line is where fuzzing ended:
    # cov is edges covered, ft coverage features, corp the corpus in memory.
    field() { grep -aE "$1" "$log" | tail -1 | grep -ao "$2: [0-9]*" | grep -ao '[0-9]*$' || echo 0; }
    edges0=$(field 'INITED' cov); ft0=$(field 'INITED' ft); corp0=$(field 'INITED' corp)
    edges=$(field '^#[0-9]+' cov); ft=$(field '^#[0-9]+' ft); corp=$(field '^#[0-9]+' corp)
    if [ "$status" = 0 ]; then
        printf 'fuzz: %-14s ok    %9s runs in %ss, edges %s -> %s, features %s -> %s, corpus %s -> %s\n' \
            "$target" "$runs" "$seconds" "$edges0" "$edges" "$ft0" "$ft" "$corp0" "$corp"
    else
        printf 'fuzz: %-14s FAIL  (exit %s) log %s\n' "$target" "$status" "$log"
        grep -aE 'property failed|Fatal error|ERROR: AddressSanitizer|ERROR: LeakSanitizer|deadly signal|Test unit written|timeout' "$log" | head -5
        failed+=("$target")
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: failed: ${failed[*]} (reproduce: BRIDGE_FUZZ_TARGET=T $binary INPUT)"
    exit 1
fi
