"""Start JupyterLab for the lecture: bound to 127.0.0.1, with a fresh token, printing the URLs.

Used by `make slides`.  The token is never disabled: anyone who can reach the port still
needs it.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DECK = "notebooks/07_attention.ipynb"


def free_port(start: int = 8888) -> int:
    for port in range(start, start + 100):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port between 8888 and 8987")


def main() -> int:
    port = free_port()
    token = os.environ.get("ATTNLAB_TOKEN") or secrets.token_hex(24)
    base = f"http://127.0.0.1:{port}"
    cmd = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--no-browser",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={ROOT}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    print(
        "\n  The deck:     "
        f"{base}/lab/tree/{DECK}?token={token}\n"
        "  Slideshow:    "
        f"{base}/rise/{DECK}?token={token}\n"
        "  (in the deck, Alt+R also starts the slideshow; Ctrl+C here stops the server)\n",
        flush=True,
    )
    try:
        return subprocess.call(cmd, cwd=ROOT)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
