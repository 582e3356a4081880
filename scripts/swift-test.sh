#!/usr/bin/env bash
# Runs the built Swift tests. When they fail, the failing tests and their first issues are
# repeated at the very end, so that the tail of a long CI log says what failed. Arguments go to
# `swift test` (make test-asan: --sanitize=address --build-path .build-asan).
set -uo pipefail
swift=${SWIFT:-swift}
log=$(mktemp "${TMPDIR:-/tmp}/swift-test.XXXXXX")
"$swift" test --skip-build --parallel "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
    echo "==== Swift tests failed (exit $status); whole log: $log ===="
    grep -E '^✘ Test .* recorded an issue' "$log" \
        | awk '{ key = $3; if (count[key]++ < 2) print substr($0, 1, 240) }' | tail -14
    grep -E 'Fatal error|Crash|signal [0-9]+|ERROR: AddressSanitizer|ERROR: LeakSanitizer|SUMMARY: AddressSanitizer|WARNING: ThreadSanitizer' "$log" | head -6
else
    rm -f "$log"
fi
exit "$status"
