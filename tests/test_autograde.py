"""A real `nbgrader autograde` of submissions built from the released notebook, in the sandbox.

One course folder, seven students: an honest student who solved everything, a blank
notebook, and five that cheat the ways a course meets (the solutions switch, replaced checks,
the harness's verdict changed from inside a graded function, a shadowing ``attnlab/`` package
beside the notebook, and an attack on ``gradebook.db``).  The grade of each is what its own
solutions earn: 20 for the honest one, 0 for every blank cheater, and the gradebook attack
(graded after the honest student) changes nobody's grade.  Slow: nbgrader runs every notebook.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import submissions

from attnlab.checks import autograde, course, isolated
from attnlab.guard import confine

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "07_attention_exercises.ipynb"
BIN = Path(sys.executable).parent
ASSIGNMENT = "lecture07"
CONFIG = """c = get_config()
c.CourseDirectory.course_id = "attention"
c.Execute.timeout = 300
"""


def test_the_sandbox_runs_here():
    """CI installs bubblewrap (`make setup`): grading must not silently lose its sandbox."""
    assert confine.available() is None


def test_without_the_sandbox_autograde_refuses_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(confine.shutil, "which", lambda name: None)
    with pytest.raises(autograde.AutogradeError, match="bubblewrap.*refusing") as raised:
        autograde.autograde(tmp_path, ASSIGNMENT)
    assert "\n" not in str(raised.value)


def test_the_sandbox_hides_the_course_and_the_network(tmp_path):
    secret = tmp_path / "gradebook.db"
    secret.write_text("scores")
    mine = tmp_path / "student"
    mine.mkdir()
    probe = (
        "import os, socket, pathlib\n"
        f"print(pathlib.Path({str(secret)!r}).exists())\n"
        f"print(pathlib.Path({str(mine)!r}).exists())\n"
        "try:\n    socket.create_connection(('127.0.0.1', 9), timeout=2); print('net')\n"
        "except OSError:\n    print('no net')\n"
        f"try:\n    open({str(mine / 'x')!r}, 'w'); print('wrote')\n"
        "except OSError:\n    print('read-only')\n"
        "print(os.getuid(), sorted(os.environ))\n"
    )
    argv = [*confine.prefix(readable=[mine]), confine.python(), "-I", "-c", probe]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    out = done.stdout.splitlines()
    assert out[:4] == ["False", "True", "no net", "read-only"], done.stderr[-2000:]
    uid, _, names = out[4].partition(" ")
    assert uid == "65534" and set(eval(names)) - {"PWD"} == set(confine.ENVIRONMENT)  # noqa: S307


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """student -> (the gradebook's scores by cell, the total) after one autograde run."""
    from nbgrader.api import Gradebook

    root = tmp_path_factory.mktemp("course")
    (root / "nbgrader_config.py").write_text(CONFIG)
    course.write_source(NOTEBOOK, root, ASSIGNMENT)
    done = subprocess.run(
        [str(BIN / "nbgrader"), "generate_assignment", ASSIGNMENT, "--force"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(root)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    release = nbformat.read(root / "release" / ASSIGNMENT / NOTEBOOK.name, as_version=4)
    source = root / "source" / ASSIGNMENT / NOTEBOOK.name
    job = autograde.notebook_job(release, nbformat.read(source, as_version=4))
    measured = isolated.measured_experiment(
        tuple(job.setup), job.experiment, tuple(confine.prefix())
    )  # what the student saw, measured as the grader measures it (and cached for it)
    mean = {  # each score's held-out exact match over every seed and checkpoint
        score: sum(sum(run["accuracy"]) for run in runs) / sum(len(run["accuracy"]) for run in runs)
        for score, runs in measured.items()
    }
    assert len(measured["dot"]) == len(measured["additive"]) == 3  # one run a seed
    faster = "dot" if mean["dot"] >= mean["additive"] else "additive"
    answers = {"zeros": 17, "variance_qk": 64, "dilated_path": 3, "faster": faster}
    notebooks = {
        "alice": submissions.honest(release, answers),
        "bob": release,
        "carol": submissions.with_first_lines(
            release, 'import os\nos.environ["ATTNLAB_SOLUTIONS"] = "1"\n'
        ),
        "dave": submissions.with_cell_after_setup(release, submissions.PATCH_CHECKS),
        "erin": submissions.with_dot_score(release, submissions.VERDICT),
        "frank": release,
        "zoe": submissions.with_cell_after_setup(release, submissions.GRADEBOOK),
    }
    for student, nb in notebooks.items():
        folder = root / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / NOTEBOOK.name)
    shadow = root / "submitted" / "frank" / ASSIGNMENT / "attnlab"
    shadow.mkdir()
    (shadow / "__init__.py").write_text(submissions.SHADOW_PACKAGE)
    said: list[str] = []
    verdicts = autograde.autograde(root, ASSIGNMENT, say=said.append)
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        scores = {}
        for student in notebooks:
            submission = gradebook.find_submission(ASSIGNMENT, student)
            cells = {g.name: g.score for nb in submission.notebooks for g in nb.grades}
            scores[student] = (cells, submission.score, submission.max_score)
    shutil.rmtree(root, ignore_errors=True)
    return scores, verdicts, said


def test_the_honest_student_gets_every_point(graded):
    scores, verdicts, _ = graded
    cells, total, most = scores["alice"]
    wrong = {g: r.message for g, r in verdicts["alice"].items() if not r.ok}
    assert (total, most) == (20, 20), wrong


@pytest.mark.parametrize("student", ["bob", "carol", "dave", "erin", "frank", "zoe"])
def test_a_blank_notebook_gets_nothing_however_it_cheats(graded, student):
    scores, verdicts, _ = graded
    cells, total, most = scores[student]
    assert most == 20 and total == 0, {g: s for g, s in cells.items() if s}


def test_the_cheats_are_named_in_the_comment(graded):
    _, verdicts, _ = graded
    assert "os.environ" in verdicts["carol"]["check_dot_score"].message
    assert "attnlab.checks.harness" in verdicts["erin"]["check_dot_score"].message


def test_no_false_checksum_warnings_for_honest_notebooks(graded):
    _, _, said = graded
    assert not [line for line in said if "has changed" in line and "alice" in line], said
