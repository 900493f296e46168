#!/usr/bin/env bash
# The browser tests drive Debian's Chromium (/usr/bin/chromium): install it when missing.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
else
    echo "The browser tests need Chromium at /usr/bin/chromium: sudo apt-get install chromium" >&2
    exit 1
fi
