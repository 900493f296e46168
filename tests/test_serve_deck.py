"""`make slides` (scripts/serve_deck.py): the token stays out of the process list, the URL
printed is the server's, Ctrl+C shuts Jupyter and its kernels down and removes its files."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "serve_deck.py"


def listening_socket() -> socket.socket:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in state  # a zombie has stopped


def request(url: str, token: str | None = None, data: bytes | None = None) -> tuple[int, object]:
    """(HTTP status, JSON body or None)."""
    headers = {"Authorization": f"token {token}"} if token else {}
    req = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, None


def wait_until_listening(connection_file: Path, seconds: float = 90) -> None:
    """Until the kernel listens on its shell port (interrupted while importing, a kernel
    prints a traceback: that would be a test that stops it too early, not a fault)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            port = json.loads(connection_file.read_text())["shell_port"]
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except (OSError, ValueError, KeyError):
            time.sleep(0.3)
    raise AssertionError("the kernel did not start")


def test_a_busy_port_range_is_one_line():
    with listening_socket() as busy:
        port = busy.getsockname()[1]
        run = subprocess.run(
            [sys.executable, SCRIPT, "--port", str(port), "--tries", "1"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert (
        run.stderr.strip().count("\n") == 0
        and f"no free port on 127.0.0.1 between {port}" in run.stderr
    )


def test_a_bad_port_is_an_argument_error():
    run = subprocess.run([sys.executable, SCRIPT, "--port", "80"], capture_output=True, text=True)
    assert run.returncode == 2 and "Traceback" not in run.stderr and "1024 to 65535" in run.stderr


def read_urls(proc: subprocess.Popen, seconds: float = 120) -> list[str]:
    lines: list[str] = []

    def read():
        for line in proc.stdout:
            lines.append(line)
            if "Slideshow:" in line:
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(seconds)
    return re.findall(r"http://\S+", "".join(lines))


def test_the_token_stays_private_and_ctrl_c_stops_jupyter_and_its_kernels(tmp_path):
    with listening_socket() as busy:  # the first port is taken: it must say the one it got
        first = busy.getsockname()[1]
        log = (tmp_path / "jupyter.log").open("w")
        proc = subprocess.Popen(
            [sys.executable, SCRIPT, "--port", str(first), "--tries", "20"],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        try:
            urls = read_urls(proc)
            assert len(urls) == 2, (tmp_path / "jupyter.log").read_text()[-2000:]
            port, token = re.match(r"http://127\.0\.0\.1:(\d+)/.*token=(\w+)", urls[0]).groups()
            assert int(port) != first and len(token) >= 32
            (jupyter,) = children(proc.pid)
            for pid in (proc.pid, jupyter):  # what `ps` shows every local user
                assert token not in Path(f"/proc/{pid}/cmdline").read_text()
            environ = dict(
                item.split("=", 1)
                for item in Path(f"/proc/{jupyter}/environ").read_text().split("\0")
                if "=" in item
            )
            assert environ["JUPYTER_TOKEN"] == token
            runtime = Path(environ["JUPYTER_RUNTIME_DIR"])
            assert runtime.stat().st_mode & 0o077 == 0  # private to this user
            info = json.loads((runtime / f"jpserver-{jupyter}.json").read_text())
            assert info["port"] == int(port)  # the URL printed is the server's

            base = f"http://127.0.0.1:{port}"
            assert request(f"{base}/api/status", token)[0] == 200
            assert request(f"{base}/api/status")[0] == 403
            status, kernel = request(f"{base}/api/kernels", token, data=b'{"name": "python3"}')
            assert status == 201
            wait_until_listening(runtime / f"kernel-{kernel['id']}.json")
            kernels = children(jupyter)
            assert kernels, "no kernel process"

            proc.send_signal(signal.SIGINT)  # Ctrl+C
            assert proc.wait(60) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
            log.close()
    assert not alive(jupyter) and not any(alive(k) for k in kernels)
    assert not runtime.exists()
    assert "Traceback" not in (tmp_path / "jupyter.log").read_text()
