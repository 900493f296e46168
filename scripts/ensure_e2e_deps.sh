#!/usr/bin/env bash
# The browser tests drive Debian's Chromium (/usr/bin/chromium), and the offline-HTML test
# installs reveal.js, MathJax and the widget renderer with npm: install what is missing.
set -euo pipefail
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
else
    echo "The browser tests need: ${missing[*]} (sudo apt-get install ${missing[*]})" >&2
    exit 1
fi
