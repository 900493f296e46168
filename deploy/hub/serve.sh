#!/bin/bash
# The course's JupyterHub on this machine, in one command (as root, on Debian 12):
#
#   deploy/hub/serve.sh [--ip 127.0.0.1] [--port 8000] [--state /var/lib/attnlab-hub] ...
#
# Installs what is missing (Debian's python3.11, venv, make, nodejs, npm; the repository's
# .venv with `make setup`; configurable-http-proxy with npm ci), then serve.py checks the
# settings, writes the secrets (mode 0600) and becomes the hub. `--help` lists the options.
set -euo pipefail
cd "$(dirname "$0")/../.."

missing=()
command -v python3.11 >/dev/null || missing+=(python3.11)
python3.11 -c 'import ensurepip' 2>/dev/null || missing+=(python3.11-venv)
command -v make >/dev/null || missing+=(make)
command -v npm >/dev/null || missing+=(nodejs npm)
if ((${#missing[@]})); then
    apt-get update -qq && apt-get install -y -qq "${missing[@]}"
fi
test -e .venv/.installed || make setup
exec .venv/bin/python deploy/hub/serve.py "$@"
