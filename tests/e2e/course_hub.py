"""The course server for real, as the hub test and the hub benchmark drive it.

* :func:`start_hub` runs deploy/hub/serve.sh on 127.0.0.1 at free ports, with a state folder,
  exchange and homes under a temporary folder and accounts under a prefix of this run's own;
  :func:`stop_everything` stops the hub (SIGTERM: it stops the users' servers and the proxy),
  kills what the run's accounts left (by pid) and removes the accounts with their homes.
* :func:`new_page` gives a Chromium page whose requests may only go to the hub and which
  records every page error, console error (but RISE's own, :data:`RISE_OWN`, on a slideshow
  page) and HTTP 5xx; :func:`sign_up`, :func:`log_in_and_start`, :func:`server_post` (a POST
  to the user's server with the cookie and _xsrf, as the Assignments tab sends it).
* :func:`run_deck` opens the deck in the RISE slideshow and restarts and runs every cell;
  :func:`first_slider` steps through the slideshow to its first slider.
* :func:`kernels`, :func:`single_user_server`: the pids of an account's processes, for what a
  student costs the machine (``benchmarks/student.py``'s ``kernel_usage`` reads them).
"""

from __future__ import annotations

import os
import pwd
import re
import secrets
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import slides
from conftest import VIEWPORT, free_port
from test_slideshow import restart_and_run_all

ROOT = Path(__file__).resolve().parents[2]
SERVE = ROOT / "deploy" / "hub" / "serve.sh"
PASSWORD = "attention-" + secrets.token_hex(6)
DECK = "attnlab/notebooks/07_attention.ipynb"  # in a user's home
START_S = 120
HUB_5XX = re.compile(r"JupyterHub \w+:\d+\] 5\d\d ")  # a 5xx the hub answered, in its log

# What jupyterlab_rise 0.43.1's slideshow page logs on every load, with no extension and no
# notebook of ours (a blank one-cell notebook logs the same): its toolbar's connectedCallback
# recursing.  The slides render; any other console error, on any page, counts.
RISE_OWN = ("Maximum call stack size exceeded",)


class Hub:
    def __init__(self, root: Path):
        self.root = root
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.prefix = "t" + secrets.token_hex(2) + "-"
        self.group = self.prefix + "course"
        self.log = root / "hub.log"
        self.proc: subprocess.Popen | None = None

    def account(self, name: str) -> str:
        return self.prefix + name

    def log_tail(self, chars: int = 6000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def errors_in_log(self) -> list[str]:
        lines = self.log_tail(10**8).splitlines()
        return [f"hub: {line[:300]}" for line in lines if HUB_5XX.search(line)]


def users_python(root: Path) -> Path:
    """A Python every account can run, with the repository's .venv packages.

    In a container whose .venv was made from a Python under /root (mode 0700) the accounts
    cannot run .venv/bin/python (serve.sh says so and stops); Debian's python3.11 with a
    .pth to the same site-packages is the same environment for them."""
    venv_python = ROOT / ".venv" / "bin" / "python"
    real = os.path.realpath(venv_python)
    if os.access(Path(real).parent, os.X_OK) and not real.startswith("/root/"):
        return venv_python
    env = root / "py"
    subprocess.run(["/usr/bin/python3.11", "-m", "venv", "--without-pip", str(env)], check=True)
    site = ROOT / ".venv" / "lib" / "python3.11" / "site-packages"
    pth = env / "lib" / "python3.11" / "site-packages" / "attnlab_env.pth"
    pth.write_text(f"import site; site.addsitedir({str(site)!r})\n")
    # The console scripts (nbgrader runs `alembic`) start with the same Python.
    for script in (ROOT / ".venv" / "bin").iterdir():
        target = env / "bin" / script.name
        if target.exists() or not script.is_file():
            continue
        lines = script.read_bytes().split(b"\n", 1)
        if len(lines) == 2 and lines[0].startswith(b"#!") and b"python" in lines[0]:
            target.write_bytes(b"#!" + str(env / "bin" / "python").encode() + b"\n" + lines[1])
            target.chmod(0o755)
    return env / "bin" / "python"


def start_hub(hub: Hub, instructors: list[str]) -> None:
    if os.geteuid() != 0:
        raise PermissionError("the hub creates accounts and runs servers under them: run as root")
    os.chmod(hub.root, 0o711)  # the accounts reach their homes and the exchange through it
    for sub in ("homes", "exchange-parent"):
        (hub.root / sub).mkdir(mode=0o711)
    cmd = [str(SERVE), "--port", str(hub.port), "--hub-port", str(free_port())]
    cmd += ["--proxy-api-port", str(free_port()), "--state", str(hub.root / "state")]
    cmd += ["--exchange", str(hub.root / "exchange-parent" / "exchange")]
    cmd += ["--homes", str(hub.root / "homes"), "--prefix", hub.prefix, "--group", hub.group]
    cmd += ["--instructors", ",".join(instructors), "--users-python", str(users_python(hub.root))]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTNLAB_")}
    with hub.log.open("wb") as log:
        hub.proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
            start_new_session=True,
        )  # fmt: skip
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if hub.proc.poll() is not None:
            raise AssertionError(f"serve.sh exited with {hub.proc.returncode}:\n{hub.log_tail()}")
        try:
            with urllib.request.urlopen(f"{hub.url}/hub/login", timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.5)
    raise AssertionError(f"the hub did not answer in {START_S} s:\n{hub.log_tail()}")


def accounts(hub: Hub) -> list[pwd.struct_passwd]:
    """The system accounts this run's hub created (its prefix; the hub's group)."""
    return [e for e in pwd.getpwall() if e.pw_name.startswith(hub.prefix)]


def pids_of(uid: int, pattern: str | None = None) -> list[int]:
    cmd = ["pgrep", "-U", str(uid)] + ([] if pattern is None else ["-f", pattern])
    found = subprocess.run(cmd, capture_output=True, text=True)
    return [int(pid) for pid in found.stdout.split()]


def kernels(hub: Hub, name: str) -> list[int]:
    return pids_of(pwd.getpwnam(hub.account(name)).pw_uid, "ipykernel_launcher")


def single_user_server(hub: Hub, name: str) -> int:
    (pid,) = pids_of(pwd.getpwnam(hub.account(name)).pw_uid, "jupyterhub.singleuser")
    return pid


def stop_everything(hub: Hub) -> None:
    """The hub first (it stops the servers and the proxy), then what the accounts left."""
    if hub.proc is not None and hub.proc.poll() is None:
        os.killpg(hub.proc.pid, signal.SIGTERM)
        try:
            hub.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(hub.proc.pid, signal.SIGKILL)
            hub.proc.wait()
    for entry in accounts(hub):
        for pid in pids_of(entry.pw_uid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)
        subprocess.run(["userdel", "--remove", entry.pw_name], capture_output=True)
    subprocess.run(["groupdel", hub.group], capture_output=True)


def console_error(msg, url: str, errors: list[str], who: str) -> None:
    if msg.type != "error":
        return
    if "/rise/" in url and any(known in msg.text for known in RISE_OWN):
        return
    where = (msg.location or {}).get("url", "")  # the resource, for "Failed to load resource"
    errors.append(f"{who}: console {msg.text[:300]} ({where[:200]})")


def new_page(browser, hub: Hub, errors: list[str], who: str):
    context = browser.new_context(viewport=VIEWPORT)

    def route(r):
        if r.request.url.startswith(hub.url + "/"):
            r.continue_()
        else:
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.on("pageerror", lambda err: errors.append(f"{who}: page error {err}"))
    page.on("console", lambda msg: console_error(msg, page.url, errors, who))
    page.on(
        "response",
        lambda r: r.status >= 500 and errors.append(f"{who}: HTTP {r.status} {r.url}"),
    )
    return context, page


def sign_up(page, hub: Hub, name: str) -> None:
    page.goto(f"{hub.url}/hub/signup")
    page.fill("input[name=username]", name)
    page.fill("input[name=signup_password]", PASSWORD)
    page.fill("input[name=signup_password_confirmation]", PASSWORD)
    page.click("input[type=submit], button[type=submit]")
    page.wait_for_load_state()


def authorize(browser, admin_page, hub: Hub, names: list[str]) -> None:
    """Each name signs up in a browser context of its own; the admin authorizes it."""
    for name in names:
        with browser.new_context() as other:
            sign_up(other.new_page(), hub, name)
        response = admin_page.goto(f"{hub.url}/hub/authorize/{name}")
        assert response and response.ok, f"authorizing {name}: {response}"


def log_in(page, hub: Hub, name: str, then: str = "") -> None:
    """Log in at /hub/login; ``then``: the hub page to go to instead of starting a server."""
    page.goto(f"{hub.url}/hub/login" + (f"?next=/hub/{then}" if then else ""))
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", PASSWORD)
    page.click("input[type=submit], button[type=submit]")
    page.wait_for_load_state()


def log_in_and_start(page, hub: Hub, name: str) -> None:
    log_in(page, hub, name)
    page.wait_for_url(f"**/user/{name}/lab**", timeout=180_000)
    page.wait_for_selector(".jp-LabShell", timeout=120_000)


def xsrf(page) -> str:
    cookies = page.context.cookies()
    return next(c["value"] for c in cookies if c["name"] == "_xsrf")


def server_post(page, hub: Hub, name: str, endpoint: str, form: dict | None = None) -> dict:
    """A POST to the user's server from their page: the cookie and _xsrf, as the tabs send."""
    response = page.request.post(
        f"{hub.url}/user/{name}/{endpoint}",
        form=form or {},
        headers={"X-XSRFToken": xsrf(page)},
        timeout=300_000,
    )
    assert response.ok, f"{name}: POST {endpoint}: {response.status} {response.text()[:500]}"
    body = response.json()
    problem = (str(body.get("log", "")) + str(body.get("error", "")))[-3000:]
    assert body.get("success", True), f"{name}: POST {endpoint}: {problem}"
    return body


def open_deck(page, hub: Hub, name: str) -> None:
    """The deck in the RISE slideshow, its kernel session started."""
    page.goto(f"{hub.url}/user/{name}/rise/{DECK}")
    page.wait_for_selector(".reveal.ready", timeout=120_000)
    page.wait_for_selector('jp-button[data-command="notebook:restart-run-all"]', state="attached")
    page.wait_for_timeout(3000)  # the kernel session starts; restarting it too soon fails


def saved_deck(page, hub: Hub, name: str):
    """A function that reads the user's deck as their server holds it (the contents API, from
    their page: their cookie)."""

    def read() -> dict:
        url = f"{hub.url}/user/{name}/api/contents/{DECK}?content=1"
        response = page.request.get(url, timeout=60_000)
        assert response.ok, f"{name}: GET {DECK}: {response.status} {response.text()[:300]}"
        return response.json()["content"]

    return read


def run_deck(page, saved=None) -> tuple[float, dict | None]:
    """Restart the kernel and run every cell (the toolbar's button): the seconds it took and,
    with ``saved`` (:func:`saved_deck`), the notebook saved after the run."""
    start = time.monotonic()
    ran = restart_and_run_all(page, saved)
    return time.monotonic() - start, ran


def first_slider(page) -> slides.Control | None:
    """Step through the slideshow (Space) to its first slider, at most 120 steps."""
    for _ in range(120):
        found = page.evaluate(slides.CONTROLS_JS, ["slider"])
        if found:
            c = found[0]
            page.wait_for_timeout(500)
            return slides.Control(c["id"], c["cell"], "slider", c["label"], "", {})
        page.keyboard.press("Space")
        page.wait_for_timeout(150)
    return None
