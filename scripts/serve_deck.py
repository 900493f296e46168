"""Start JupyterLab for the lecture on 127.0.0.1 with a fresh token, and print the URLs.

Used by `make slides`.  What keeps it private and tidy:

* the token travels to Jupyter in its environment (``JUPYTER_TOKEN``), never on a command
  line (which every local user can read in the process list); it is never disabled;
* Jupyter gets one port and no retries (``--ServerApp.port_retries=0``); the URLs printed are
  built from the port Jupyter reports it bound (its server-info file), so they always point at
  this server.  A busy port is skipped; a busy range is one line and exit status 1;
* Jupyter's runtime files (one holds the token) go to a private temporary folder, removed at
  exit; Ctrl+C (or SIGTERM/SIGHUP) stops Jupyter with SIGTERM, which shuts its kernels down
  and removes its files, and waits for it.

    python scripts/serve_deck.py [--port 8888] [--tries 100]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DECK = "notebooks/07_attention.ipynb"
HOST = "127.0.0.1"
START_SECONDS = 120  # how long Jupyter may take to start
STOP_SECONDS = 30  # how long it may take to shut its kernels down


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def jupyter_command(port: int) -> list[str]:
    cmd = [sys.executable, "-m", "jupyter", "lab", f"--ServerApp.ip={HOST}", f"--port={port}"]
    cmd += ["--ServerApp.port_retries=0", "--no-browser", f"--ServerApp.root_dir={ROOT}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    return cmd


def wait_for_server(proc: subprocess.Popen, runtime: Path) -> dict | None:
    """Jupyter's server info (port, url, ...) once it listens; None if it exits first."""
    path = runtime / f"jpserver-{proc.pid}.json"
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            return json.loads(path.read_text())
        except (FileNotFoundError, ValueError):
            pass  # not written yet, or being written
        time.sleep(0.1)
    return None


def start(ports: range, env: dict, runtime: Path, running: list) -> dict:
    """Start Jupyter on the first free port of ``ports`` (appended to ``running``, so that it
    is stopped even if Ctrl+C comes during the start); its server info, or SystemExit."""
    for port in ports:
        if not port_is_free(port):
            continue
        # Its own session: the terminal's Ctrl+C reaches this script only, which then stops
        # Jupyter with SIGTERM (Jupyter would otherwise ask "Shut down? (y/[n])" on SIGINT).
        proc = subprocess.Popen(jupyter_command(port), cwd=ROOT, env=env, start_new_session=True)
        running.append(proc)
        info = wait_for_server(proc, runtime)
        if info is not None:
            return info
        stop(proc)
        if port_is_free(port):  # it did not fail for the port: say so, do not try others
            raise SystemExit(f"serve_deck: jupyter lab exited with status {proc.returncode}")
    raise SystemExit(
        f"serve_deck: no free port on {HOST} between {ports.start} and {ports.stop - 1}; "
        "stop another server or pass --port"
    )


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM (Jupyter's clean shutdown: kernels, then its files), then SIGKILL if stuck."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def show(info: dict, token: str) -> None:
    base = f"http://{HOST}:{info['port']}{info.get('base_url', '/').rstrip('/')}"
    print(
        f"\n  The deck:     {base}/lab/tree/{DECK}?token={token}\n"
        f"  Slideshow:    {base}/rise/{DECK}?token={token}\n"
        "  (in the deck, Alt+R also starts the slideshow; Ctrl+C here stops the server)\n",
        flush=True,
    )


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _port(text: str) -> int:
    if not text.isdigit() or not 1024 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(
            f"a port is a number from 1024 to 65535; got {text[:20]!r}"
        )
    return int(text)


def _tries(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 1000:
        raise argparse.ArgumentTypeError(f"give 1 to 1000 ports to try; got {text[:20]!r}")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=_port, default=8888, help="the first port to try (8888)")
    p.add_argument("--tries", type=_tries, default=100, help="how many ports to try (100)")
    args = p.parse_args(argv)
    token = os.environ.get("ATTNLAB_TOKEN") or secrets.token_hex(24)
    runtime = Path(tempfile.mkdtemp(prefix="attnlab-jupyter-"))  # mode 0700
    env = {**os.environ, "JUPYTER_TOKEN": token, "JUPYTER_RUNTIME_DIR": str(runtime)}
    env.pop("ATTNLAB_TOKEN", None)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    running: list[subprocess.Popen] = []
    try:
        info = start(range(args.port, min(args.port + args.tries, 65536)), env, runtime, running)
        show(info, token)
        return running[-1].wait()
    except KeyboardInterrupt:
        return 0
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl+C must not cut the shutdown
        for proc in running:
            stop(proc)
        shutil.rmtree(runtime, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
