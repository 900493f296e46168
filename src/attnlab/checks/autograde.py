r"""Autograding a course's submissions: nbgrader in a sandbox, the grade from outside it.

``python -m attnlab course autograde COURSE_DIR [--assignment lecture07] [--student ID]``:

1. refuses, in one line, when the sandbox (:mod:`attnlab.guard.confine`: bubblewrap and
   prlimit) cannot run here: student code is never graded unprotected;
2. runs ``nbgrader autograde`` for each submission (its records, the autograded notebook,
   the feedback), with each notebook's kernel inside the sandbox: it sees the package, the
   models and that one student's notebook, read-only, a private ``/tmp``, no network, no
   ``gradebook.db`` and no other student's folder, under a memory and a CPU-time limit;
   the false "checksum has changed" warnings nbgrader gives for every cell with hidden tests
   are left out, so that a warning means a student changed a locked cell;
3. then grades each submission from outside (:func:`grade_notebook`): the student's graded
   cells run in a sandboxed worker, the checks replay what it sent against references
   computed here (:mod:`attnlab.checks.isolated`), the experiment is measured by a worker
   that runs none of the students' code, and each graded cell's score in the gradebook is
   set from that verdict, with the verdict's one line as the cell's comment.

Whatever a notebook's kernel did (set ``ATTNLAB_SOLUTIONS``, replace the checks, put an
``attnlab/`` folder beside the notebook, open the gradebook) changes nothing of its grade or
anyone else's: the scores written are the ones reached in step 3.
"""

from __future__ import annotations

import ast
import json
import os
import re
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.apps import NbGraderAPI
from nbgrader.preprocessors import (
    CheckCellMetadata,
    ClearOutput,
    DeduplicateIds,
    OverwriteCells,
    OverwriteKernelspec,
)
from traitlets.config import Config, PyFileConfigLoader

from attnlab.checks.isolated import (
    SETUP,
    Item,
    Job,
    WorkerFailed,
    grade_job,
    item,
    measured_experiment,
    run_worker,
)
from attnlab.checks.results import CheckResult
from attnlab.guard import confine

__all__ = ["AutogradeError", "notebook_job", "grade_notebook", "autograde", "KERNEL"]

KERNEL = "attnlab-sandbox"  # the kernel nbgrader is told to use: python inside bubblewrap
EXPERIMENT_ID = "experiment"  # the grade_id of the locked experiment cell
_HIDDEN = re.compile(r"^### BEGIN HIDDEN TESTS$.*?^### END HIDDEN TESTS$\n?", re.M | re.S)


class AutogradeError(Exception):
    """Why autograding cannot start or go on (one line)."""


def _meta(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def _assigns(source: str, variable: str) -> bool:
    """Whether a cell assigns ``variable`` at its top level (``zeros = 17``)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return f"{variable} =" in source  # it will fail when it runs: still the student's answer
    return any(
        isinstance(node, ast.Assign | ast.AnnAssign)
        and any(
            isinstance(t, ast.Name) and t.id == variable
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        )
        for node in tree.body
    )


def _answer_variable(source: str) -> str:
    """``zeros`` of the grade cell ``checks.check_answer("padding_zeros", zeros)``."""
    call = ast.parse(source.splitlines()[0]).body[0].value
    return call.args[1].id


def _answer_cells(submission, answers: list[Item]) -> list[tuple[int, str, str]]:
    """(index, variable, source) of the last cell before each question that sets its variable."""
    found = []
    for it in answers:
        where = next(
            (i for i, c in enumerate(submission.cells) if _meta(c).get("grade_id") == it.grade_id),
            len(submission.cells),
        )
        before = [
            (i, c.source)
            for i, c in enumerate(submission.cells[:where])
            if c.cell_type == "code" and not _meta(c) and _assigns(c.source, it.variable)
        ]
        if before:
            found.append((before[-1][0], it.variable, before[-1][1]))
    return found


def notebook_job(submission: nbformat.NotebookNode, source: nbformat.NotebookNode) -> Job:
    """What the worker runs for one submitted notebook: the instructor's set-up cells, then the
    student's exercise cells (by grade_id) and answer cells (the last cell before the
    question that sets its variable), in the notebook's order."""
    setup, items = [], []
    for cell in source.cells:
        if _meta(cell):
            break
        if cell.cell_type == "code":
            setup.append(cell.source)
    for cell in source.cells:
        meta = _meta(cell)
        if cell.cell_type == "code" and meta.get("grade") and meta.get("grade_id"):
            grade_id = meta["grade_id"]
            variable = _answer_variable(cell.source) if grade_id.startswith("check_answer_") else ""
            items.append(item(grade_id, variable))
    cells: list[tuple[int, str, str]] = []
    exercises = {it.name for it in items if it.kind != "answer"}
    for index, cell in enumerate(submission.cells):
        meta = _meta(cell)
        if cell.cell_type == "code" and meta.get("solution") and meta.get("grade_id") in exercises:
            cells.append((index, meta["grade_id"], cell.source))
    cells += _answer_cells(submission, [it for it in items if it.kind == "answer"])
    experiment = next(
        (c.source for c in source.cells if _meta(c).get("grade_id") == EXPERIMENT_ID), None
    )
    return Job(
        items,
        [(label, text) for _, label, text in sorted(cells)],
        setup or [SETUP],
        experiment,
    )


def grade_notebook(
    submitted: Path | str, source: Path | str, sandbox: bool = True
) -> dict[str, CheckResult]:
    """grade_id -> verdict for the notebook ``submitted``, graded against the instructor's
    ``source`` notebook; the student's cells run in a worker (inside the sandbox unless
    ``sandbox`` is False), and nothing of them runs in this process."""
    job = notebook_job(nbformat.read(submitted, as_version=4), nbformat.read(source, as_version=4))
    prefix = tuple(confine.prefix()) if sandbox else ()
    measured = {}
    if job.experiment and any(it.kind == "answer" for it in job.items):
        try:
            measured = measured_experiment(tuple(job.setup), job.experiment, prefix)
        except WorkerFailed as error:
            raise AutogradeError(str(error)) from None
    try:
        header, tensors = run_worker(job.request(), prefix)
    except WorkerFailed as error:
        return {it.grade_id: _not_graded(it, str(error)) for it in job.items}
    return grade_job(job, header, tensors, measured)


def _not_graded(it: Item, why: str) -> CheckResult:
    return CheckResult(it.name, False, "exception", f"Not graded: {why}.")


# --------------------------------------------------------------------------- nbgrader
class OverwriteCellsQuietly(OverwriteCells):
    """nbgrader's OverwriteCells without the false alarm: a locked cell that differs from the
    instructor's source only by the hidden tests nbgrader itself removed is restored silently."""

    def preprocess_cell(self, cell, resources, cell_index):
        self._submitted = cell.source
        return super().preprocess_cell(cell, resources, cell_index)

    def report_change(self, name, attr, old, new):
        if attr == "checksum":
            original = self.gradebook.find_source_cell(
                name, self.notebook_id, self.assignment_id
            ).source
            if _HIDDEN.sub("", original).rstrip() == self._submitted.rstrip():
                return  # the release's own form of the cell: nothing was changed
        super().report_change(name, attr, old, new)


def _write_kernel(kernels: Path, notebook_dir: Path, runtime: Path) -> None:
    """The sandboxed kernel's spec, for the student whose notebook lies in ``notebook_dir``."""
    argv = [
        *confine.limits(),
        *confine.prefix(readable=[notebook_dir], writable=[runtime], cwd=notebook_dir),
        confine.python(),
        "-I",
        "-m",
        "ipykernel_launcher",
        "-f",
        "{connection_file}",
    ]
    folder = kernels / "kernels" / KERNEL
    folder.mkdir(parents=True, exist_ok=True)
    spec = {"argv": argv, "display_name": "Python (attnlab sandbox)", "language": "python"}
    (folder / "kernel.json").write_text(json.dumps(spec))


@contextmanager
def _environment(**values: str):
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def _temporary_files_in(folder: Path):
    """tempfile's default folder set to ``folder`` for a while (its documented ``tempdir``)."""
    saved, tempfile.tempdir = tempfile.tempdir, str(folder)
    try:
        yield
    finally:
        tempfile.tempdir = saved


def _config(course: Path, runtime: Path) -> Config:
    config = Config()
    if (course / "nbgrader_config.py").is_file():
        config.merge(PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config())
    config.CourseDirectory.root = str(course)
    config.Execute.kernel_name = KERNEL
    config.KernelManager.transport = "ipc"  # sockets in a folder: the sandbox has no network
    config.KernelManager.ip = str(runtime / "kernel")  # the folder the sandbox shares
    config.Autograde.sanitize_preprocessors = [
        ClearOutput,
        DeduplicateIds,
        OverwriteKernelspec,
        OverwriteCellsQuietly,
        CheckCellMetadata,
    ]
    return config


def _write_grades(db_url: str, assignment: str, student: str, notebook: str, results) -> None:
    with Gradebook(db_url) as gradebook:
        for grade_id, result in results.items():
            grade = gradebook.find_grade(grade_id, notebook, assignment, student)
            grade.auto_score = float(grade.max_score) if result.ok else 0.0
            grade.needs_manual_grade = False
            try:
                comment = gradebook.find_comment(grade_id, notebook, assignment, student)
                comment.auto_comment = result.message[:2000]
            except MissingEntry:
                pass
        gradebook.db.commit()


def _what_to_grade(
    course: Path, assignment: str, students: list[str] | None
) -> tuple[list[Path], list[str]]:
    """The source notebooks and the students to grade, or AutogradeError saying what is missing."""
    source_dir = course / "source" / assignment
    sources = sorted(source_dir.glob("*.ipynb")) if source_dir.is_dir() else []
    if not sources:
        raise AutogradeError(f"no source notebook in {source_dir}: run `course source` first")
    submitted = course / "submitted"
    found = []
    if submitted.is_dir():
        found = sorted(p.name for p in submitted.iterdir() if (p / assignment).is_dir())
    missing = [s for s in students or () if s not in found]
    if missing:
        raise AutogradeError(
            f"no submission of {assignment} by {', '.join(missing)} in {submitted}"
        )
    return sources, list(students or found)


def autograde(
    course_dir: Path | str,
    assignment: str,
    students: list[str] | None = None,
    say: Callable[[str], None] = print,
) -> dict[str, dict[str, CheckResult]]:
    """Autograde ``assignment``'s submissions in ``course_dir`` (module docstring); returns
    student -> grade_id -> verdict.  AutogradeError (one line) when it cannot."""
    why = confine.available()
    if why:
        raise AutogradeError(why)
    course = Path(course_dir).expanduser().resolve()
    sources, students = _what_to_grade(course, assignment, students)
    submitted = course / "submitted"
    verdicts, failed = {}, []
    with tempfile.TemporaryDirectory(prefix="attnlab-autograde-") as scratch:
        kernels, runtime = Path(scratch) / "share", Path(scratch) / "runtime"
        runtime.mkdir()
        api = NbGraderAPI(config=_config(course, runtime))
        jupyter_path = os.pathsep.join(filter(None, [str(kernels), os.environ.get("JUPYTER_PATH")]))
        with (
            _environment(JUPYTER_PATH=jupyter_path, JUPYTER_RUNTIME_DIR=str(runtime)),
            _temporary_files_in(runtime),  # jupyter_client writes connection files there
        ):
            for student in students:
                notebook_dir = course / "autograded" / student / assignment
                _write_kernel(kernels, notebook_dir, runtime)
                outcome = api.autograde(assignment, student, force=True, create=True)
                for line in (outcome.get("log") or "").splitlines():
                    if "has changed" in line or "ERROR" in line:
                        say(f"{student}: {line.strip()}")
                if not outcome.get("success"):  # said, and the others are still graded
                    tail = (outcome.get("error") or "").strip().splitlines()[-1:] or ["?"]
                    failed.append(student)
                    say(f"{student}: nbgrader could not autograde this submission: {tail[0]}")
                    continue
                verdicts[student] = {}
                for source in sources:
                    mine = submitted / student / assignment / source.name
                    results = grade_notebook(mine, source) if mine.is_file() else {}
                    _write_grades(api.coursedir.db_url, assignment, student, source.stem, results)
                    verdicts[student].update(results)
                points = sum(r.ok for r in verdicts[student].values())
                say(f"{student}: {points} / {len(verdicts[student])}")
    if failed:
        raise AutogradeError(
            f"graded {len(verdicts)} of {len(students)}; nbgrader could not autograde "
            f"{', '.join(failed)} (see above)"
        )
    return verdicts
