r"""Hand the exercises out and collect them with nbgrader: the instructor's side.

The committed ``notebooks/07_attention_exercises.ipynb`` is the **student version**, already
marked with nbgrader's cell metadata: each exercise cell is a solution cell (``grade_id`` = the
exercise's name), each check cell an autograded test cell worth one point.  nbgrader wants the
**instructor version** as its source: the same notebook with the solutions between
``### BEGIN SOLUTION`` / ``### END SOLUTION`` and hidden tests that fail when a check fails
(the checks themselves never raise in the student's mode).  This module writes it::

    python -m attnlab.course source COURSE_DIR [--assignment lecture07]
    cd COURSE_DIR && nbgrader generate_assignment lecture07   # release/: the student version
    nbgrader autograde lecture07                               # after collecting submissions

The solution of each exercise calls the reference, ``checks.reference(name)(...)``, so there
is still one implementation of each equation.  ``nbgrader generate_assignment`` turns the
source back into exactly the committed student version (tests/test_nbgrader.py checks it).
"""

from __future__ import annotations

import argparse
import ast
import copy
from pathlib import Path

import nbformat

from attnlab.checkpoints import write_atomic

__all__ = ["NOTEBOOK", "ASSIGNMENT", "source_notebook", "write_source", "main"]

#: The student version, as committed.
NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "07_attention_exercises.ipynb"
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


def _hidden_test(source: str) -> str:
    """A check cell, plus a hidden test that fails (for the autograder) when the check fails."""
    call = source.strip()
    if not call.startswith("checks.") or "\n" in call:
        raise ValueError(f"a test cell should hold one call of a check; got:\n{source}")
    return f"{call}\n### BEGIN HIDDEN TESTS\nassert {call}.ok\n### END HIDDEN TESTS"


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
            cell.source = _hidden_test(cell.source)
        cell.outputs, cell.execution_count = [], None
    return nb


def write_source(
    course_dir: Path | str, assignment: str = ASSIGNMENT, notebook: Path | str = NOTEBOOK
) -> Path:
    """Write COURSE_DIR/source/<assignment>/<notebook's name> for nbgrader; return its path."""
    notebook = Path(notebook)
    if not notebook.is_file():
        raise SystemExit(f"no exercises notebook at {notebook}: pass --notebook PATH")
    folder = Path(course_dir) / "source" / assignment
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / notebook.name
    nb = source_notebook(nbformat.read(notebook, as_version=4))
    write_atomic(path, nbformat.writes(nb) + "\n")  # a reader never sees half a notebook
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m attnlab.course", description="nbgrader source of the exercises"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    src = sub.add_parser("source", help="write COURSE_DIR/source/ASSIGNMENT/ for nbgrader")
    src.add_argument("course_dir", type=Path)
    src.add_argument("--assignment", default=ASSIGNMENT)
    src.add_argument("--notebook", type=Path, default=NOTEBOOK, help="the student version")
    args = parser.parse_args(argv)
    print(write_source(args.course_dir, args.assignment, args.notebook))


if __name__ == "__main__":
    main()
