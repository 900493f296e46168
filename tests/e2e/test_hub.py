"""The course server for real: deploy/hub/serve.sh, its proxy, an instructor and 4 students.

The hub starts on 127.0.0.1 at free ports with a temporary state folder, exchange and homes,
and accounts under a prefix of this run's own (removed at the end with their homes; the
helpers are tests/e2e/course_hub.py, which benchmarks/hub.py drives too).  Then:

* the instructor signs up in Chromium (an admin: authorized at once), starts a server (whose
  first start makes the course folder), generates and releases the exercises with the
  formgrader's API, and authorizes the 4 students' sign-ups at /hub/authorize;
* the 4 students at once, each in a browser of their own: log in; fetch the exercises through
  the Assignments tab's API (the calls the tab makes, from the student's page); open the deck
  in the RISE slideshow, restart and run every cell (no error output), move the first slider
  and see its picture change; open the fetched exercises, run the first cells and
  ``checks.check_dot_score`` (a check box, no traceback); submit through the exchange;
* the instructor collects: every student's notebook is in the course's ``submitted/``.

0 errors: no failed cell, no page error and no console error in any page (but RISE's own,
``course_hub.RISE_OWN``, on its slideshow page), no HTTP 5xx in a page or in the hub's log.
Whatever happens, the hub (SIGTERM: it stops the users' servers and the proxy), the accounts'
remaining processes (by pid) and the accounts are removed.
"""

from __future__ import annotations

import json
import pwd
import shutil
import tempfile
import threading
import time
from pathlib import Path

import course_hub
import pytest
import slides
from conftest import CHROMIUM, CHROMIUM_ARGS
from course_hub import Hub, log_in_and_start, new_page, server_post
from test_slideshow import check_outputs

ROOT = Path(__file__).resolve().parents[2]
STUDENTS = ["ada", "ben", "cleo", "dev"]
INSTRUCTOR = "teacher"
ASSIGNMENT = "lecture07"
EXERCISES = f"{ASSIGNMENT}/07_attention_exercises.ipynb"
CHECK_CELL = 6  # checks.check_dot_score(dot_score): cells 0-6 are the first exercise
ACTIVE_CELL_JS = """i => document.querySelectorAll('.jp-Notebook .jp-Cell')[i]
    ?.classList.contains('jp-mod-active')"""
# A cell is done when it is not code, or its prompt shows an execution count ("[3]:"); it is
# running at "[*]:" and unrun at "[ ]:".  The next cell runs only once this one is done, so no
# cell can run before the one above it.
CELL_PROMPT_JS = """i => {
    const cell = document.querySelectorAll('.jp-Notebook .jp-Cell')[i];
    if (!cell) return 'absent';
    if (!cell.classList.contains('jp-CodeCell')) return 'done';
    const text = cell.querySelector('.jp-InputPrompt')?.textContent || '';
    if (/\\[\\d+\\]/.test(text)) return 'done';
    return /\\[\\*\\]/.test(text) ? 'running' : 'unrun';
}"""


def move_a_slider(page, who: str) -> list[str]:
    """Step through the slideshow to the first slider; moving it must change its picture."""
    control = course_hub.first_slider(page)
    if control is None:
        return [f"{who}: no slider in the first 120 steps of the slideshow"]
    slides.check_control_changes_picture(page, control)
    return [] if control.changed else [f"{who}: slider {control.label!r}: {control.problem}"]


STATE_JS = """() => ({
    status: document.querySelector('.jp-Notebook-ExecutionIndicator')?.dataset.status,
    kernel: document.querySelector('.jp-KernelStatus')?.textContent,
    dialog: document.querySelector('.jp-Dialog')?.textContent?.slice(0, 200),
    prompts: [...document.querySelectorAll('.jp-Notebook .jp-Cell')].slice(0, 8).map(
        c => (c.classList.contains('jp-mod-active') ? '>' : '')
            + (c.querySelector('.jp-InputPrompt')?.textContent || c.className.split(' ')[1])),
})"""


def state(page) -> str:
    """What the notebook page shows: the kernel's status, a dialog, the first prompts."""
    try:
        return json.dumps(page.evaluate(STATE_JS))
    except Exception as err:  # the page itself is gone
        return f"(no state: {type(err).__name__})"


def run_cell(page, index: int, tries: int = 3) -> bool:
    """Shift+Enter on cell ``index``; True once it shows an execution count.

    Each Shift+Enter runs the active cell and makes the next one active: the press waits for
    the cell to be active, so that a busy machine cannot make it land before the notebook has
    focus.  On a machine busy with 4 students a notebook's kernel can still be connecting when
    the first code cell runs: JupyterLab then clears the cell ("[ ]:", nothing queued), as it
    would for a student, who presses again; so does this, up to ``tries`` times.  A cell that
    runs ("[*]:") gets 180 s.
    """
    for _ in range(tries):
        page.wait_for_function(ACTIVE_CELL_JS, arg=index, timeout=60_000)
        page.keyboard.press("Shift+Enter")
        deadline = time.monotonic() + 180
        unrun_since = None
        while time.monotonic() < deadline:
            prompt = page.evaluate(CELL_PROMPT_JS, index)
            if prompt == "done":
                return True
            if prompt == "unrun":
                unrun_since = unrun_since or time.monotonic()
                if time.monotonic() - unrun_since > 10:
                    break  # not queued: press again on this cell
            else:
                unrun_since = None
            page.wait_for_timeout(250)
        else:
            return False
        page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-InputPrompt").click()
        page.keyboard.press("Escape")
    return False


def run_first_exercise(page, hub: Hub, name: str) -> list[str]:
    page.goto(f"{hub.url}/user/{name}/lab/tree/{EXERCISES}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=120_000)
    page.locator(".jp-Notebook .jp-Cell").first.click()
    page.keyboard.press("Escape")  # command mode
    for index in range(CHECK_CELL + 1):
        if not run_cell(page, index):
            return [f"{name}: cell {index} did not finish: {state(page)}"]
    page.wait_for_function(ACTIVE_CELL_JS, arg=CHECK_CELL + 1, timeout=60_000)
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
            course_hub.open_deck(page, hub, name)
            deck = json.loads((ROOT / "notebooks" / "07_attention.ipynb").read_text())
            slides.use_sources(page, deck)
            _, ran = course_hub.run_deck(page, course_hub.saved_deck(page, hub, name))
            errors += [f"{name}: {p}" for p in check_outputs(page, deck, ran)]
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
    root = Path(tempfile.mkdtemp(prefix="attnlab-hub-"))
    hub = Hub(root)
    errors: list[str] = []
    try:
        try:
            course_hub.start_hub(hub, [INSTRUCTOR])
        except PermissionError as err:
            pytest.fail(f"{err} (sudo make hub-test)")
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                context, page = new_page(browser, hub, errors, INSTRUCTOR)
                course_hub.sign_up(page, hub, INSTRUCTOR)
                log_in_and_start(page, hub, INSTRUCTOR)
                server_post(page, hub, INSTRUCTOR, f"formgrader/api/assignment/{ASSIGNMENT}/assign")
                server_post(
                    page, hub, INSTRUCTOR, f"formgrader/api/assignment/{ASSIGNMENT}/release"
                )
                course_hub.authorize(browser, page, hub, STUDENTS)
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
        errors += hub.errors_in_log()
        assert not errors, f"{len(errors)} errors:\n" + "\n".join(errors) + "\n" + hub.log_tail()
    finally:
        course_hub.stop_everything(hub)
        shutil.rmtree(root, ignore_errors=True)
