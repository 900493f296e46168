#!/usr/bin/env bash
# Autograding runs each student's notebook inside bubblewrap (Debian's `bubblewrap`) under
# prlimit (util-linux): install what is missing, as root; otherwise say how (the deck runs
# without them; only `python -m attnlab course autograde` refuses).
set -euo pipefail
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v prlimit >/dev/null 2>&1 || missing+=(util-linux)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" \
        || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"; }
else
    echo "note: autograding needs ${missing[*]} (sudo apt-get install ${missing[*]})" >&2
fi
