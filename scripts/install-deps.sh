#!/usr/bin/env bash
# Installs what the broker and its tests need on a fresh Debian machine: the C libraries the three
# binding modules link (libwebsockets, SQLite, WebKitGTK 6.0 for the WebKit host), python3 (bridge-js/tools/build.py builds the shim),
# publicsuffix (the cookie jar's public suffix list), Chromium and its driver
# for the browser tests, tmux, and the PyPI packages.
# Safe to run again: it installs only what is missing.
set -euo pipefail

need_apt=()
for package in libwebsockets-dev libsqlite3-dev libwebkitgtk-6.0-dev pkg-config python3 publicsuffix "${@}"; do
    dpkg -s "$package" >/dev/null 2>&1 || need_apt+=("$package")
done
if [ "${#need_apt[@]}" -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    echo "installing Debian packages: ${need_apt[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
