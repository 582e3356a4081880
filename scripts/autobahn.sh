#!/usr/bin/env bash
# Runs the Autobahn WebSocket conformance cases (kosoku, from PyPI) against the broker's
# diagnostic echo endpoint and, as the baseline, against a bare libwebsockets echo built in the
# same package. Reports go to reports/autobahn/{broker,bare}/.
#   scripts/autobahn.sh [BROKER_BINARY]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
binary="${1:-$root/.build/debug/bridge-broker}"
python3 -m pip install -q --disable-pip-version-check kosoku
mkdir -p "$root/reports/autobahn"
cache=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$cache"' EXIT

wait_for() { for _ in $(seq 100); do (echo > "/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

port=$(free_port)
"$binary" serve --port "$port" --diagnostic-echo --cache-dir "$cache" --log-level error > /dev/null &
pids+=($!)
wait_for "$port"
bare_log=$(mktemp)
"$binary" bare-echo > "$bare_log" &
pids+=($!)
for _ in $(seq 100); do grep -q listening "$bare_log" && break; sleep 0.1; done
bare_port=$(sed -n 's/.*127.0.0.1:\([0-9]*\).*/\1/p' "$bare_log")

# Sections 12 and 13 are permessage-deflate, which the broker leaves off (Debian's 4.1.6 aborts on it).
for target in "broker $port" "bare $bare_port"; do
    set -- $target
    echo "== $1 (127.0.0.1:$2)"
    kosoku -x '12.*' -x '13.*' -o "$root/reports/autobahn/$1" "127.0.0.1:$2" | tail -4
done
