"""The course server for real: deploy/hub/serve.sh, its proxy, an instructor and 4 students.

The hub starts on 127.0.0.1 at free ports with a temporary state folder, exchange and homes,
and accounts under a prefix of this run's own (removed at the end with their homes). Then:

* the instructor signs up in Chromium (an admin: authorized at once), starts a server (whose
  first start makes the course folder), generates and releases the exercises with the
  formgrader's API, and authorizes the 4 students' sign-ups at /hub/authorize;
* the 4 students at once, each in a browser of their own: log in; fetch the exercises through
  the Assignments tab's API (the calls the tab makes, from the student's page); open the deck
  in the RISE slideshow, restart and run every cell (no error output), move the first slider
  and see its picture change; open the fetched exercises, run the first cells and
  ``checks.check_dot_score`` (a check box, no traceback); submit through the exchange;
* the instructor collects: every student's notebook is in the course's ``submitted/``.

0 errors: no failed cell, no error in any page's console (but RISE's own, `RISE_OWN`, on its
slideshow page), no HTTP error of the hub. Whatever
happens, the hub (SIGTERM: it stops the users' servers and the proxy), the accounts'
remaining processes (by pid) and the accounts are removed.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import slides
from conftest import CHROMIUM, CHROMIUM_ARGS, VIEWPORT, free_port
from test_slideshow import check_outputs, restart_and_run_all

ROOT = Path(__file__).resolve().parents[2]
SERVE = ROOT / "deploy" / "hub" / "serve.sh"
STUDENTS = ["ada", "ben", "cleo", "dev"]
INSTRUCTOR = "teacher"
PASSWORD = "attention-" + secrets.token_hex(6)
ASSIGNMENT = "lecture07"
EXERCISES = f"{ASSIGNMENT}/07_attention_exercises.ipynb"
DECK = "attnlab/notebooks/07_attention.ipynb"
CHECK_CELL = 6  # checks.check_dot_score(dot_score): cells 0-6 are the first exercise
START_S = 120


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


def users_python(root: Path) -> Path:
    """A Python every account can run, with the repository's .venv packages.

    In a container whose .venv was made from a Python under /root (mode 0700) the accounts
    cannot run .venv/bin/python (serve.sh says so and stops); Debian's python3.11 with a
    .pth to the same site-packages is the same environment for them."""
    venv_python = ROOT / ".venv" / "bin" / "python"
    if os.access(Path(os.path.realpath(venv_python)).parent, os.X_OK) and not str(
        os.path.realpath(venv_python)
    ).startswith("/root/"):
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


def start_hub(hub: Hub) -> None:
    for sub in ("homes", "exchange-parent"):
        (hub.root / sub).mkdir(mode=0o711)
    cmd = [str(SERVE), "--port", str(hub.port), "--hub-port", str(free_port())]
    cmd += ["--proxy-api-port", str(free_port()), "--state", str(hub.root / "state")]
    cmd += ["--exchange", str(hub.root / "exchange-parent" / "exchange")]
    cmd += ["--homes", str(hub.root / "homes"), "--prefix", hub.prefix, "--group", hub.group]
    cmd += ["--instructors", INSTRUCTOR, "--users-python", str(users_python(hub.root))]
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


def stop_everything(hub: Hub) -> None:
    """The hub first (it stops the servers and the proxy), then what the accounts left."""
    if hub.proc is not None and hub.proc.poll() is None:
        os.killpg(hub.proc.pid, signal.SIGTERM)
        try:
            hub.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(hub.proc.pid, signal.SIGKILL)
            hub.proc.wait()
    for name in [INSTRUCTOR, *STUDENTS]:
        try:
            uid = pwd.getpwnam(hub.account(name)).pw_uid
        except KeyError:
            continue
        found = subprocess.run(["pgrep", "-U", str(uid)], capture_output=True, text=True)
        for pid in found.stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)
        subprocess.run(["userdel", "--remove", hub.account(name)], capture_output=True)
    subprocess.run(["groupdel", hub.group], capture_output=True)


# What jupyterlab_rise 0.43.1's slideshow page logs on every load, with no extension and no
# notebook of ours (a blank one-cell notebook logs the same): its toolbar's connectedCallback
# recursing, and the lab extensions it loads without the `@jupyterlab/docregistry` share
# scope. They are RISE's, they appear with no hub as well, and the slides render; any other
# console error, on any page, fails the test.
RISE_OWN = (
    "Maximum call stack size exceeded",
    "The getter for the shared module is not a function",
    "Cannot access 'y' before initialization",
)


def console_error(msg, url: str, errors: list[str], who: str) -> None:
    if msg.type != "error":
        return
    if "/rise/" in url and any(known in msg.text for known in RISE_OWN):
        return
    errors.append(f"{who}: console {msg.text[:300]}")


# ------------------------------------------------------------------ one browser's steps
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


def log_in_and_start(page, hub: Hub, name: str) -> None:
    page.goto(f"{hub.url}/hub/login")
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", PASSWORD)
    page.click("input[type=submit], button[type=submit]")
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


def move_a_slider(page, who: str) -> list[str]:
    """Step through the slideshow to the first slider; moving it must change its picture."""
    for _ in range(120):
        found = page.evaluate(slides.CONTROLS_JS, ["slider"])
        if found:
            c = found[0]
            control = slides.Control(c["id"], c["cell"], "slider", c["label"], "", {})
            page.wait_for_timeout(500)
            slides.check_control_changes_picture(page, control)
            return [] if control.changed else [f"{who}: slider {c['label']!r}: {control.problem}"]
        page.keyboard.press("Space")
        page.wait_for_timeout(150)
    return [f"{who}: no slider in the first 120 steps of the slideshow"]


def run_first_exercise(page, hub: Hub, name: str) -> list[str]:
    page.goto(f"{hub.url}/user/{name}/lab/tree/{EXERCISES}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=120_000)
    page.locator(".jp-Notebook .jp-Cell").first.click()
    for _ in range(CHECK_CELL + 1):
        page.keyboard.press("Shift+Enter")
        page.wait_for_timeout(200)
    cell = page.locator(".jp-Notebook .jp-Cell").nth(CHECK_CELL)
    cell.locator(".jp-OutputArea-output").first.wait_for(timeout=180_000)
    text = cell.locator(".jp-OutputArea").inner_text()
    page.keyboard.press("Control+s")
    page.wait_for_timeout(1000)
    if "Traceback" in text or ("✓" not in text and "✗" not in text):
        return [f"{name}: the exercise check showed {text[:400]!r}"]
    return []


def student(hub: Hub, name: str, errors: list[str]) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context, page = new_page(browser, hub, errors, name)
            log_in_and_start(page, hub, name)
            form = {"course_id": "attention", "assignment_id": ASSIGNMENT}
            server_post(page, hub, name, "assignments/fetch", form)
            page.goto(f"{hub.url}/user/{name}/rise/{DECK}")
            page.wait_for_selector(".reveal.ready", timeout=120_000)
            page.wait_for_selector(
                'jp-button[data-command="notebook:restart-run-all"]', state="attached"
            )
            page.wait_for_timeout(3000)  # the kernel session starts; restarting it too soon
            restart_and_run_all(page)
            deck = json.loads((ROOT / "notebooks" / "07_attention.ipynb").read_text())
            errors += [f"{name}: {p}" for p in check_outputs(page, deck)]
            errors += move_a_slider(page, name)
            errors += run_first_exercise(page, hub, name)
            server_post(page, hub, name, "assignments/submit", form)
            context.close()
        except Exception as err:  # one student's failure is reported with the others
            errors.append(f"{name}: {type(err).__name__}: {str(err)[:1500]}")
        finally:
            browser.close()


@pytest.mark.hub
def test_a_course_on_the_hub():
    if os.geteuid() != 0:
        pytest.fail("the hub test creates accounts and runs servers under them: run it as root")
    root = Path(tempfile.mkdtemp(prefix="attnlab-hub-"))
    os.chmod(root, 0o711)  # the accounts reach their homes and the exchange through it
    hub = Hub(root)
    errors: list[str] = []
    try:
        start_hub(hub)
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                context, page = new_page(browser, hub, errors, INSTRUCTOR)
                sign_up(page, hub, INSTRUCTOR)
                log_in_and_start(page, hub, INSTRUCTOR)
                server_post(page, hub, INSTRUCTOR, f"formgrader/api/assignment/{ASSIGNMENT}/assign")
                server_post(
                    page, hub, INSTRUCTOR, f"formgrader/api/assignment/{ASSIGNMENT}/release"
                )
                for name in STUDENTS:
                    with browser.new_context() as other:
                        sign_up(other.new_page(), hub, name)
                    response = page.goto(f"{hub.url}/hub/authorize/{name}")
                    assert response and response.ok, f"authorizing {name}: {response}"
                threads = [
                    threading.Thread(target=student, args=(hub, name, errors)) for name in STUDENTS
                ]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join(timeout=900)
                assert not any(t.is_alive() for t in threads), "a student did not finish"
                server_post(
                    page, hub, INSTRUCTOR, f"formgrader/api/assignment/{ASSIGNMENT}/collect"
                )
                context.close()
            finally:
                browser.close()
        course = Path(pwd.getpwnam(hub.account(INSTRUCTOR)).pw_dir) / "attention-course"
        for name in STUDENTS:
            got = course / "submitted" / hub.account(name) / ASSIGNMENT / Path(EXERCISES).name
            if not got.exists():
                errors.append(f"{name}: not collected ({got} missing)")
        for line in hub.log_tail(10**7).splitlines():
            if " 50" in line and "JupyterHub log" in line:
                errors.append(f"hub: {line[:300]}")
        assert not errors, f"{len(errors)} errors:\n" + "\n".join(errors) + "\n" + hub.log_tail()
    finally:
        stop_everything(hub)
        shutil.rmtree(root, ignore_errors=True)
