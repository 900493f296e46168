r"""Hand the exercises out and collect them with nbgrader: the instructor's side.

The committed ``notebooks/07_attention_exercises.ipynb`` is the **student version**, already
marked with nbgrader's cell metadata: each exercise cell is a solution cell (``grade_id`` = the
exercise's name), each check cell an autograded test cell worth one point.  nbgrader wants the
**instructor version** as its source: the same notebook with the solutions between
``### BEGIN SOLUTION`` / ``### END SOLUTION`` and hidden tests that fail when a check fails
(the checks themselves never raise in the student's mode).  This module writes it::

    python -m attnlab course NOTEBOOK COURSE_DIR [--assignment lecture07] [--force]
    cd COURSE_DIR && nbgrader generate_assignment lecture07   # release/: the student version
    nbgrader autograde lecture07                               # after collecting submissions

The solution of each exercise calls the reference, ``checks.reference(name)(...)``, so there
is still one implementation of each equation.  ``nbgrader generate_assignment`` turns the
source back into exactly the committed student version (tests/test_nbgrader.py checks it).

The tool reads the notebook it is given and writes only what it was asked to: never into the
repository that notebook belongs to (the nearest folder above it holding ``pyproject.toml`` or
``.git``: :func:`repository_of`) nor the notebook's own folder, never through a symlink that
leads out of the course folder, and an existing source notebook (an instructor may have edited
it) only with ``--force``, keeping the old one as ``NAME.bak``.  Each refusal, a read-only
folder or a file in the way is answered in one line.
"""

from __future__ import annotations

import ast
import copy
import shutil
from pathlib import Path

import nbformat

from attnlab.files import write_atomic

__all__ = [
    "ASSIGNMENT",
    "CourseError",
    "repository_of",
    "source_notebook",
    "write_source",
]

#: The assignment's default name in a course directory.
ASSIGNMENT = "lecture07"

STUB = "# YOUR CODE HERE\nraise NotImplementedError()"  # nbgrader's default code stub


def _nbgrader(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def _solution(source: str) -> str:
    """The exercise's stub replaced by a solution region that calls the reference."""
    fn = next(node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef))
    args = ", ".join(a.arg for a in fn.args.args)
    stub = "    " + STUB.replace("\n", "\n    ")
    if stub not in source:
        raise ValueError(f"the exercise cell of {fn.name} has no stub:\n{source}")
    region = (
        f'    ### BEGIN SOLUTION\n    return checks.reference("{fn.name}")({args})\n'
        "    ### END SOLUTION"
    )
    return source.replace(stub, region)


def _graded_call(call: str, grade_id: str) -> str:
    """``checks.graded(grade_id, ...)`` for the visible check ``call`` of the cell ``grade_id``:
    the same arguments, without the exercise's name where the check takes one first."""
    node = ast.parse(call).body[0].value
    args = [ast.unparse(a) for a in node.args]
    if node.func.attr in ("in_model", "check_answer"):
        args = args[1:]  # the exercise's or question's name: grade_id says it
    args += [f"{k.arg}={ast.unparse(k.value)}" for k in node.keywords]
    return f"checks.graded({grade_id!r}, {', '.join(args)})"


def _hidden_test(source: str, grade_id: str) -> str:
    """A check cell, plus a hidden test that fails (for the autograder) when the graded check
    (:func:`attnlab.checks.isolated.graded`: the student's cell run in a worker of its own)
    fails."""
    call = source.strip()
    if not call.startswith("checks.") or "\n" in call:
        raise ValueError(f"a test cell should hold one call of a check; got:\n{source}")
    graded = _graded_call(call, grade_id)
    return f"{call}\n### BEGIN HIDDEN TESTS\nassert {graded}.ok\n### END HIDDEN TESTS"


def source_notebook(student: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The instructor version (nbgrader's source) of the student version ``student``."""
    nb = copy.deepcopy(student)
    for cell in nb.cells:
        meta = _nbgrader(cell)
        if cell.cell_type != "code" or not meta:
            continue
        if meta.get("solution"):
            cell.source = _solution(cell.source)
        elif meta.get("grade"):
            cell.source = _hidden_test(cell.source, meta["grade_id"])
        cell.outputs, cell.execution_count = [], None
    return nb


class CourseError(Exception):
    """Why ``write_source`` refuses or cannot write, in one line."""


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def repository_of(path: Path) -> Path | None:
    """The checkout ``path`` lies in: the nearest folder above it holding ``pyproject.toml`` or
    ``.git`` (None when there is none, e.g. a notebook downloaded on its own)."""
    for folder in path.resolve().parents:
        if (folder / "pyproject.toml").is_file() or (folder / ".git").exists():
            return folder
    return None


def _target(course_dir: Path | str, assignment: str, notebook: Path) -> Path:
    """COURSE/source/ASSIGNMENT/<notebook's name>, resolved, or CourseError saying why not."""
    if Path(assignment).name != assignment or assignment in ("", ".", ".."):
        raise CourseError(
            f"--assignment must be a plain folder name, not a path; got {assignment!r}: "
            "refusing to write outside COURSE_DIR/source"
        )
    try:
        course = Path(course_dir).expanduser().resolve()
        path = course / "source" / assignment / notebook.name
        resolved = path.resolve()  # through every symlink on the way
    except (RuntimeError, OSError) as err:  # a loop of symlinks, a name too long
        raise CourseError(f"cannot follow the path {course_dir}: {err}") from None
    if not _inside(resolved, course):
        raise CourseError(
            f"{course / 'source' / assignment} leads out of the course folder {course} "
            f"(to {resolved.parent}) through a symlink; refusing to write there"
        )
    for protected in (repository_of(notebook), notebook.resolve().parent):
        if protected is not None and _inside(resolved, protected):
            raise CourseError(
                f"{resolved} is inside {protected} (the repository or the student version's "
                "folder); refusing to write there: choose a course folder outside it"
            )
    return resolved


def _backup(path: Path) -> Path:
    """A free name beside ``path``: NAME.bak, then NAME.bak1, NAME.bak2, ..."""
    for i in range(1000):
        backup = path.with_name(f"{path.name}.bak{i or ''}")
        if not backup.exists() and not backup.is_symlink():
            return backup
    raise CourseError(f"too many backups of {path} already; remove some")


def write_source(
    notebook: Path | str,
    course_dir: Path | str,
    assignment: str = ASSIGNMENT,
    force: bool = False,
) -> Path:
    """Write COURSE_DIR/source/<assignment>/<notebook's name>, the instructor version of the
    student version ``notebook``, for nbgrader; return its path.

    Refuses (:class:`CourseError`, one line) to write into the notebook's repository or folder
    or through a symlink that leads out of the course folder, and to replace an existing source
    notebook (an instructor's edits) unless ``force``; then the old one is kept as ``NAME.bak``.
    """
    notebook = Path(notebook)
    if not notebook.is_file():
        raise CourseError(f"no exercises notebook at {notebook}: give the student version's path")
    path = _target(course_dir, assignment, notebook)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise CourseError(f"{path} is in the way (not a regular file); move it away first")
    nb = source_notebook(nbformat.read(notebook, as_version=4))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            if not force:
                raise CourseError(
                    f"{path} already exists (an edited source?); pass --force to replace it "
                    "(the old one is kept as a .bak file beside it)"
                )
            shutil.copy2(path, _backup(path))
        write_atomic(path, nbformat.writes(nb) + "\n")  # a reader never sees half a notebook
    except (FileExistsError, NotADirectoryError) as err:
        raise CourseError(f"cannot write {path}: {_first(err)} is a file in the way") from None
    except PermissionError as err:
        raise CourseError(f"cannot write {path}: permission denied ({_first(err)})") from None
    except OSError as err:
        raise CourseError(f"cannot write {path}: {err.strerror or err}") from None
    return path


def _first(err: OSError) -> str:
    return str(err.filename or err)
