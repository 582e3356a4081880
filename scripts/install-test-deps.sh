#!/usr/bin/env bash
# Everything the full test suite needs beyond the build: Chromium and chromedriver (Debian's, so
# their versions match), tmux, node (the shim's tests), squid (the fleet tests' shared cache tier)
# xvfb and xauth (the WebKit host's tests run `bridge-broker open` under xvfb-run), dbus-x11 (a
# session bus for GTK) and the Python packages of the browser and protocol tests.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
"$here/install-deps.sh" chromium chromium-driver tmux squid python3-venv nodejs xvfb xauth dbus-x11
python3 -m pip install -q --disable-pip-version-check -r "$here/../tests/requirements.txt"
