#!/usr/bin/env bash
# Runs the Autobahn WebSocket conformance cases (kosoku, from PyPI) against the broker's
# diagnostic echo endpoint and prints the summary. Reports go to reports/autobahn/.
#   scripts/autobahn.sh [BROKER_BINARY]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
binary="${1:-$root/.build/debug/bridge-broker}"
python3 -m pip install -q --disable-pip-version-check kosoku
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cache=$(mktemp -d)
"$binary" serve --port "$port" --diagnostic-echo --cache-dir "$cache" --log-level error &
broker=$!
trap 'kill $broker 2>/dev/null; rm -rf "$cache"' EXIT
for _ in $(seq 50); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
# Section 12 and 13 are permessage-deflate, which the broker leaves off (Debian's 4.1.6 aborts on it).
mkdir -p "$root/reports"
kosoku -x '12.*' -x '13.*' -o "$root/reports/autobahn" "127.0.0.1:$port" | tee "$root/reports/autobahn-summary.txt" | tail -25
