"""nbgrader releases the committed exercises notebook as it is and autogrades it.

In a temporary course directory: ``python -m attnlab course source NOTEBOOK COURSE_DIR`` writes
the instructor version, and ``nbgrader generate_assignment`` must turn it back into exactly the
committed student version.  Autograding itself is tested in tests/test_autograde.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from attnlab.checks import course

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "07_attention_exercises.ipynb"  # the student version
BIN = Path(sys.executable).parent  # nbgrader calls `alembic` from the environment's bin
ASSIGNMENT = "lecture07"
CONFIG = """c = get_config()
c.CourseDirectory.course_id = "attention"
c.ExecutePreprocessor.timeout = 300  # the experiment cell trains six models
"""


def nbgrader(course_dir: Path, *args: str) -> None:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "OMP_NUM_THREADS": "1"}
    env.pop("ATTNLAB_SOLUTIONS", None)  # grading happens in the student's mode
    done = subprocess.run(
        [str(BIN / "nbgrader"), *args, "--force"],
        cwd=course_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def course_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("course")
    (root / "nbgrader_config.py").write_text(CONFIG)
    course.write_source(NOTEBOOK, root, ASSIGNMENT)
    nbgrader(root, "generate_assignment", ASSIGNMENT)
    return root


def notebook(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def test_the_repository_protected_is_the_given_notebooks(tmp_path):
    """The tool learns which checkout to keep out of from the notebook it is given (the folder
    above it holding pyproject.toml), not from where the package is installed."""
    checkout = tmp_path / "checkout"
    (checkout / "notebooks").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("[project]\n")
    student = checkout / "notebooks" / NOTEBOOK.name
    shutil.copy(NOTEBOOK, student)
    assert course.repository_of(student) == checkout.resolve()
    assert course.repository_of(NOTEBOOK) == ROOT
    with pytest.raises(course.CourseError, match=f"inside {checkout.resolve()}.*refusing"):
        course.write_source(student, checkout / "course")
    written = course.write_source(student, tmp_path / "course")
    assert written == (tmp_path / "course" / "source" / ASSIGNMENT / NOTEBOOK.name).resolve()
    assert "### BEGIN SOLUTION" in written.read_text()
    with pytest.raises(course.CourseError, match="no exercises notebook"):
        course.write_source(tmp_path / "missing.ipynb", tmp_path / "course2")


def test_the_source_holds_solutions_and_hidden_tests(course_dir):
    source = notebook(course_dir / "source" / ASSIGNMENT / NOTEBOOK.name)
    text = "\n".join(c.source for c in source.cells)
    assert text.count("### BEGIN SOLUTION") == 9  # the nine exercises
    assert 'return checks.reference("dot_score")(s, h)' in text
    assert "assert checks.graded('in_model_decode_step', decode_step).ok" in text
    assert text.count("### BEGIN HIDDEN TESTS") == 20  # every graded cell, graded in a worker


def test_the_release_is_the_committed_student_version(course_dir):
    release = notebook(course_dir / "release" / ASSIGNMENT / NOTEBOOK.name)
    committed = notebook(NOTEBOOK)
    assert [c.source for c in release.cells] == [c.source for c in committed.cells]
    graded = [c for c in release.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert len(graded) == 20 and all(c.metadata["editable"] is False for c in graded)


@pytest.mark.parametrize("where", ["loop", "loop/course"])
def test_a_symlink_loop_is_refused_in_one_line(tmp_path, where):
    from conftest import attnlab_command

    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    done = attnlab_command("course", "source", str(NOTEBOOK), str(tmp_path / where))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "loop" in done.stderr, done.stderr
