"""Fixtures for the browser tests: JupyterLab on 127.0.0.1 and Debian's Chromium via Playwright.

* ``lab`` (session): a JupyterLab server bound to 127.0.0.1 at a free port with a random token
  (never an empty one), serving a temporary copy of notebooks/, pics/ and the test fixtures, so
  that running cells never touches the committed notebooks.  It is stopped at the end of the
  session whatever happens (its kernels first, then the server's process group).
* ``browser`` (session): /usr/bin/chromium, headless, with the flags of DEVELOPERS.md.
* ``lab_page`` / ``offline_page``: a 1280x720 page whose requests may only go to that server
  (``lab_page``) or to file:// (``offline_page``); everything else is blocked and recorded in
  ``page.blocked`` so that a test can assert that nothing needed the network.
* ``new_page`` (session): the same as a context manager, for fixtures of a wider scope (one
  walk through a deck serves several tests).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import slides

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("ATTNLAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 720}  # the size the deck is laid out for
START_TIMEOUT_S = 90


@dataclass
class Lab:
    """A running JupyterLab server."""

    url: str  # http://127.0.0.1:PORT
    token: str
    root: Path  # the temporary copy it serves
    log: Path

    def page_url(self, route: str, path: str) -> str:
        """e.g. page_url("rise", "notebooks/07_attention.ipynb")."""
        return f"{self.url}/{route}/{path}?token={self.token}"

    def api(self, method: str, endpoint: str, body: dict | None = None) -> object:
        """Call the REST API with the token; returns the decoded JSON (None when empty)."""
        request = urllib.request.Request(
            f"{self.url}/api/{endpoint}",
            method=method,
            data=None if body is None else json.dumps(body).encode("utf-8"),
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def log_tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:]


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def copy_served_tree(root: Path) -> None:
    slides.copy_served(root)


def lab_command(port: int, token: str, root: Path) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    return cmd


def lab_environment(state: Path) -> dict[str, str]:
    """The server's environment: 2 threads, settings and workspaces kept out of $HOME."""
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = "2"
    # The Makefile exports MPLBACKEND=Agg for scripts; a kernel behind the lecture must keep
    # ipykernel's inline backend, or figures would show as text.
    env.pop("MPLBACKEND", None)
    env["JUPYTERLAB_SETTINGS_DIR"] = str(state / "settings")
    env["JUPYTERLAB_WORKSPACES_DIR"] = str(state / "workspaces")
    env["JUPYTER_RUNTIME_DIR"] = str(state / "runtime")
    return env


def wait_until_ready(lab: Lab, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {proc.returncode}:\n{lab.log_tail()}")
        try:
            lab.api("GET", "status")
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.5)
    raise RuntimeError(f"jupyter lab did not answer in {START_TIMEOUT_S} s:\n{lab.log_tail()}")


def stop_lab(lab: Lab, proc: subprocess.Popen) -> None:
    """Shut down the kernels it started, then the server (its own process group)."""
    if proc.poll() is None:
        try:
            for kernel in lab.api("GET", "kernels") or []:
                lab.api("DELETE", f"kernels/{kernel['id']}")
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass  # the server is going down anyway
    for sig, wait_s in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)  # the group created for this server by start_new_session
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    root = tmp_path_factory.mktemp("lab-root")
    state = tmp_path_factory.mktemp("lab-state")
    copy_served_tree(root)
    port, token = free_port(), secrets.token_hex(24)
    server = Lab(url=f"http://127.0.0.1:{port}", token=token, root=root, log=state / "lab.log")
    with server.log.open("wb") as log:
        proc = subprocess.Popen(
            lab_command(port, token, root),
            cwd=root,
            env=lab_environment(state),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until_ready(server, proc)
        yield server
    finally:
        stop_lab(server, proc)


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/ensure_e2e_deps.sh (make e2e does)")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def _page(browser, allowed: tuple[str, ...]):
    """A fresh context and page; requests outside ``allowed`` prefixes are blocked."""
    context = browser.new_context(viewport=VIEWPORT)
    blocked: list[str] = []

    def route(r):
        url = r.request.url
        if url.startswith(allowed):
            r.continue_()
        else:
            blocked.append(url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.blocked = blocked
    page.page_errors = []
    page.on("pageerror", lambda err: page.page_errors.append(str(err)))
    return context, page


@pytest.fixture
def lab_page(browser, lab: Lab):
    context, page = _page(browser, (lab.url + "/",))
    try:
        yield page
    finally:
        context.close()


@pytest.fixture
def offline_page(browser):
    context, page = _page(browser, ("file://",))
    try:
        yield page
    finally:
        context.close()


@pytest.fixture(scope="session")
def new_page(browser):
    """``with new_page(allowed) as page``: a page as ``lab_page`` / ``offline_page`` make."""

    @contextmanager
    def make(allowed: tuple[str, ...]):
        context, page = _page(browser, allowed)
        try:
            yield page
        finally:
            context.close()

    return make
