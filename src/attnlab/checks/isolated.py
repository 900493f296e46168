r"""Graded checks: the student's code runs in a worker process, the verdict is reached here.

The in-notebook checks (``checks.check_dot_score(dot_score)``) run the student's function in
the notebook's own kernel: instant feedback, but a process that ran the student's code can be
talked into anything.  A *graded* check never believes such a process:

1. the student's cells run in a fresh worker (:mod:`attnlab.checks.worker`: ``python -I``,
   an empty environment, an empty folder, inside the course sandbox when one is given), which
   records what each call of the student's function returned, as the library's checks called
   it, and what the shipped models did with it, and sends that back as plain data
   (:mod:`attnlab.checks.transport`: JSON and plain tensors);
2. here, the same checks run again with the student's function replaced by a :class:`Replay`
   of those answers, against references computed here, by the library, in a process that
   never ran the student's code.  A worker that lies can only send wrong answers: the
   inputs, the references and the comparisons are all this side's;
3. before anything runs, each graded cell's source is read (:mod:`attnlab.checks.source_rules`):
   a cell that calls the library's implementation of its own equation, the graders' code or
   the solutions switch is ✗, and the message names what it used.

:func:`graded` is what the instructor version's hidden tests call inside a notebook (its
function's cell runs in a worker; nothing the kernel's session holds reaches it);
:func:`grade_notebook` is what ``python -m attnlab course autograde`` calls for each
submission, from outside the sandboxed kernel, and writes into the gradebook.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import json
import linecache
import os
import resource
import signal
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from attnlab.checks.exercises import BODIES, EXERCISES
from attnlab.checks.harness import run_check
from attnlab.checks.inside_models import IN_MODEL, SwappedRun, in_model_body, loaded_reference
from attnlab.checks.questions import QUESTIONS, judged
from attnlab.checks.results import CATEGORIES, CheckResult, Failure
from attnlab.checks.source_rules import forbidden
from attnlab.checks.transport import MAX_MESSAGE, Encoder, TransportError, decode, unpack
from attnlab.guard.budget import OutOfTime
from attnlab.guard.confine import python
from attnlab.models.threads import torch_threads

__all__ = [
    "SETUP",
    "WORKER_SECONDS",
    "Item",
    "Job",
    "Replay",
    "item",
    "graded",
    "run_worker",
    "grade_job",
]

#: The exercises' set-up cell (what the worker runs first when it is not given the notebook's).
SETUP = (
    "import math\n\nimport torch\n\nimport attnlab\nfrom attnlab import checks\n"
    "from attnlab.attention import causal_mask, padding_mask\nfrom attnlab.checks import exercise\n"
)
WORKER_SECONDS = 180  # wall-clock seconds a worker may take for one notebook
WORKER_MEMORY = 4 * 2**30  # bytes of address space a worker may map (torch maps ~1.5 GB)


# --------------------------------------------------------------------------- what is graded
@dataclass(frozen=True)
class Item:
    """One graded cell: ``kind`` "check", "in_model" or "answer"; ``name`` the exercise or
    the question; ``variable`` the name an answer is read from."""

    grade_id: str
    kind: str
    name: str
    variable: str = ""


def item(grade_id: str, variable: str = "") -> Item:
    """The graded cell ``grade_id`` names (``check_dot_score``, ``in_model_dot_score``,
    ``check_answer_padding_zeros``)."""
    for prefix, kind, names in (
        ("check_answer_", "answer", QUESTIONS),
        ("in_model_", "in_model", IN_MODEL),
        ("check_", "check", EXERCISES),
    ):
        if grade_id.startswith(prefix) and grade_id[len(prefix) :] in names:
            return Item(grade_id, kind, grade_id[len(prefix) :], variable)
    raise ValueError(f"{grade_id!r} is not a graded cell of the exercises")


@dataclass
class Job:
    """What one worker runs: set-up code, the student's cells (label -> source, in order),
    and what it is asked to record."""

    items: list[Item]
    cells: list[tuple[str, str]]  # (label: exercise name or answer variable, source)
    setup: list[str] = field(default_factory=lambda: [SETUP])
    experiment: str | None = None  # the instructor's experiment, run in a worker of its own

    def rules(self) -> dict[str, str]:
        """label -> what its cell may not use (the first found), for the cells that break a rule."""
        found = {}
        for label, source in self.cells:
            why = forbidden(source, label if label in EXERCISES else None)
            if why:
                found[label] = why
        return found

    def request(self) -> dict:
        exercises = sorted({i.name for i in self.items if i.kind in ("check", "in_model")})
        return {
            "setup": self.setup,
            "cells": [{"label": label, "source": source} for label, source in self.cells],
            "exercises": [e for e in EXERCISES if e in exercises],
            "in_model": {
                i.name: list(IN_MODEL[i.name]) for i in self.items if i.kind == "in_model"
            },
            "answers": sorted({i.variable for i in self.items if i.kind == "answer"}),
        }


# --------------------------------------------------------------------------- the worker
_SERVE = "from attnlab.checks.worker import serve; serve()"  # not a command line: one job, stdin


class WorkerFailed(Exception):
    """The worker gave no answer we can use (one line: why)."""


def run_worker(
    request: dict,
    confine: Sequence[str] = (),
    seconds: float = WORKER_SECONDS,
    memory: int = WORKER_MEMORY,
) -> tuple[dict, dict]:
    """Run the worker on ``request``; its answer (header, tensors), or WorkerFailed.

    ``confine``: a command line prefix that runs the worker inside a sandbox
    (:func:`attnlab.guard.confine.prefix`); without it the worker is a plain isolated
    ``python -I`` process.  Either way it gets no environment of ours and an empty folder.
    """
    with tempfile.TemporaryDirectory(prefix="attnlab-worker-") as folder:
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": folder,
            "TMPDIR": folder,
            "LANG": "C.UTF-8",
            "OMP_NUM_THREADS": "1",
            "MPLBACKEND": "Agg",
        }
        argv = [*confine, python(), "-I", "-c", _SERVE]

        def limits() -> None:  # in the child, before it runs anything
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
            resource.setrlimit(resource.RLIMIT_CPU, (int(seconds), int(seconds) + 5))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=folder,
            env=env,
            start_new_session=True,  # its own process group: stopped as a whole
            preexec_fn=limits,
        )
        try:
            out, err = process.communicate(json.dumps(request).encode(), timeout=seconds)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise WorkerFailed(
                f"the grading of your cells took longer than {seconds:g} s"
            ) from None
        finally:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # what it started goes with it
            except ProcessLookupError:
                pass
    if len(out) > MAX_MESSAGE:
        raise WorkerFailed("the grading worker sent more than we read")
    try:
        header, tensors = unpack(out)
    except TransportError as error:
        last = err.decode(errors="replace").strip().splitlines()[-1:] or [""]
        code = process.returncode
        why = "it ran out of memory or time" if code in (-9, -24, 137) else f"exit code {code}"
        raise WorkerFailed(f"{error} ({why}{'; ' + last[0][:200] if last[0] else ''})") from None
    if not isinstance(header, dict):
        raise WorkerFailed("the grading worker's answer is not one of ours")
    return header, tensors


# --------------------------------------------------------------------------- replaying answers
def _rebuilt(raised: dict) -> Exception:
    """An exception like the one the student's function raised (type name, message, line)."""
    name = str(raised.get("type", "Exception"))[:80]
    message = str(raised.get("message", ""))[:300]
    cls = getattr(builtins, name, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        cls = type(name if name.isidentifier() else "Exception", (Exception,), {})
    try:
        error = cls(message)
    except Exception:  # noqa: BLE001 - a builtin that wants other arguments
        error = type(name, (Exception,), {})(message)
    error._attnlab_where = str(raised.get("where", ""))[:300]
    return error


class Replay:
    """The student's function as the checks call it here: each call answers what the worker
    recorded for the same call (returned value, raised exception, or time out)."""

    def __init__(self, calls: list, tensors: dict, stopped: str | None = None):
        self.calls, self.tensors, self.stopped, self.next = list(calls), tensors, stopped, 0

    def __call__(self, *args, **kwargs):
        if self.next >= len(self.calls):
            raise Failure(
                "exception",
                self.stopped
                or "Your function was not called here when your cell ran on its "
                "own: does it use something defined in another cell? Put it in this cell.",
            )
        record = self.calls[self.next]
        self.next += 1
        if not isinstance(record, dict):
            raise TransportError("a call the worker recorded is not one of ours")
        if "returned" in record:
            return decode(record["returned"], self.tensors)
        if "timeout" in record:
            raise OutOfTime(0.0)
        if "raised" in record and isinstance(record["raised"], dict):
            raise _rebuilt(record["raised"])
        raise TransportError("a call the worker recorded is not one of ours")


def _swapped_runs(runs: dict, tensors: dict) -> Callable[[str, Callable, str], SwappedRun]:
    """run(exercise, fn, model_name) from what the worker recorded of the models."""

    def run(exercise: str, fn: Callable, model_name: str) -> SwappedRun:
        loaded_reference(model_name)  # "model not available" is said the same way
        entry = runs.get(exercise, {}).get(model_name)
        if not isinstance(entry, dict):
            raise Failure("exception", f"`{model_name}` was not run with your function.")
        if "failure" in entry:
            category, details = (list(entry["failure"]) + ["", ""])[:2]
            category = category if isinstance(category, str) else "exception"
            if category not in CATEGORIES or category == "ok":
                category = "exception"
            raise Failure(category, str(details)[:2000])
        outputs, alpha = entry.get("outputs"), decode(entry.get("alpha"), tensors)
        if not isinstance(outputs, list) or not all(
            isinstance(o, list) and all(type(i) is int for i in o) for o in outputs
        ):
            raise TransportError("the translations the worker sent are not token ids")
        if not hasattr(alpha, "shape"):
            raise TransportError("the alpha the worker sent is not a tensor")
        return SwappedRun(outputs, alpha)

    return run


def _with_rule(result: CheckResult, why: str | None) -> CheckResult:
    if why is None:
        return result
    return CheckResult(
        result.name,
        False,
        "not_allowed",
        f"Not graded: your cell {why}. Write the computation yourself, in the cell.",
    )


def _check_label(it: Item) -> str:
    if it.kind == "in_model":
        return f"{it.name} in {' and '.join(IN_MODEL[it.name])}"
    return it.name


def _said_changes(recorded: dict) -> str | None:
    said = recorded.get("said")
    if isinstance(said, list) and len(said) == 2 and said[0] == "side_effect":
        return str(said[1])[:600]
    return None


def grade_job(
    job: Job, header: dict, tensors: dict, measured: dict | None = None
) -> dict[str, CheckResult]:
    """grade_id -> the verdict, for every item of ``job``, from the worker's answer."""
    rules = job.rules()
    checks = header.get("checks") if isinstance(header.get("checks"), dict) else {}
    runs = header.get("runs") if isinstance(header.get("runs"), dict) else {}
    answers = header.get("answers") if isinstance(header.get("answers"), dict) else {}
    results = {}
    for it in job.items:
        label = _check_label(it)
        if it.kind == "answer":
            result = _grade_answer(it, answers.get(it.variable), tensors, measured or {})
            results[it.grade_id] = _with_rule(result, rules.get(it.variable))
            continue
        recorded = checks.get(it.name) if isinstance(checks.get(it.name), dict) else {}
        used = _used(recorded, runs.get(it.name) if it.kind == "in_model" else None)
        if used:
            what = (
                "turned off the grader's watch (`sys.setprofile`)"
                if "setprofile" in used
                else f"called {used}, an implementation of the very equation the exercise "
                "asks you to write"
            )
            results[it.grade_id] = CheckResult(
                label,
                False,
                "not_allowed",
                f"Not graded: while it ran, your function {what}. Write the computation yourself.",
            )
            continue
        missing = _missing(recorded, it.name)
        if missing:
            results[it.grade_id] = _with_rule(
                CheckResult(label, False, "not_implemented", missing), rules.get(it.name)
            )
            continue
        replay = Replay(recorded.get("calls") or [], tensors)
        if it.kind == "check":
            body = BODIES[it.name]
        else:
            names, runner = IN_MODEL[it.name], _swapped_runs(runs, tensors)

            def body(fn, name=it.name, names=names, runner=runner):
                return in_model_body(name, names, fn, runner)

        with torch_threads(1):
            result = run_check(label, replay, body)
        changes = _said_changes(recorded)
        if result.ok and changes:
            result = CheckResult(result.name, False, "side_effect", changes)
        results[it.grade_id] = _with_rule(result, rules.get(it.name))
    return results


def _used(recorded: dict, runs: object) -> str | None:
    """What the worker's watch saw the student's function call that it may not."""
    found = [recorded.get("used")]
    if isinstance(runs, dict):
        found += [run.get("used") for run in runs.values() if isinstance(run, dict)]
    return next((str(u)[:200] for u in found if u), None)


def _missing(recorded: dict, name: str) -> str | None:
    if "missing" in recorded:
        kind = recorded["missing"]
        if kind is None:
            return f"No function `{name}` was defined when your cells ran (did its cell run?)."
        return f"`{name}` is a {str(kind)[:40]}, not a function."
    return None


def _grade_answer(it: Item, sent: object, tensors: dict, measured: dict) -> CheckResult:
    question = QUESTIONS[it.name]

    def body(_fn) -> str:
        if sent is None:
            raise Failure("not_answered", f"No answer: `{it.variable}` was not set by your cell.")
        answer = decode(sent, tensors)
        missing = [key for key in question.measured if key not in measured]
        if missing:
            raise Failure(
                "exception", "The experiment could not be measured: " + ", ".join(missing)
            )
        return judged(
            question, answer, question.right(**{k: measured[k] for k in question.measured})
        )

    return run_check(it.name, lambda: None, body)


# --------------------------------------------------------------------------- inside a notebook
def _cell_of(fn: Callable) -> str:
    """The whole cell that defined ``fn`` (IPython keeps each cell's source in linecache)."""
    try:
        filename = fn.__code__.co_filename
    except AttributeError:
        raise ValueError("not a function defined in a cell") from None
    lines = linecache.getlines(filename)
    if not lines:
        try:
            return inspect.getsource(fn)
        except (OSError, TypeError):
            raise ValueError("its source cannot be found") from None
    return "".join(lines)


def graded(grade_id: str, answer: object, **measured: object) -> CheckResult:
    """The graded form of a check cell (what the hidden tests call): ``grade_id`` as in the
    notebook (``check_dot_score``, ``in_model_dot_score``, ``check_answer_padding_zeros``);
    ``answer`` the student's function, or the answer of a question; ``measured`` what a
    question's answer is judged against (the experiment's histories).

    A function's cell runs in a fresh worker; the verdict is reached here from what it sent.
    """
    it = item(grade_id, "answer" if grade_id.startswith("check_answer_") else "")
    if it.kind == "answer":
        return _graded_answer(it, answer, measured)
    try:
        source = _cell_of(answer)
    except ValueError as error:
        return CheckResult(_check_label(it), False, "wrong_type", f"Give your function: {error}.")
    job = Job([it], [(it.name, source)])
    try:
        header, tensors = run_worker(job.request())
    except WorkerFailed as error:
        return CheckResult(_check_label(it), False, "exception", f"Not graded: {error}.")
    return grade_job(job, header, tensors)[grade_id]


def _graded_answer(it: Item, answer: object, measured: dict) -> CheckResult:
    encoder = Encoder()
    sent = encoder.encode(answer)
    return _grade_answer(it, sent, encoder.tensors, measured)


@functools.lru_cache(maxsize=4)
def measured_experiment(setup: tuple[str, ...], code: str, confine: tuple[str, ...] = ()) -> dict:
    """The instructor's experiment, run in a worker that runs no student code: its
    histories, keyed as ``check_answer``'s measured arguments (``dot=``, ``additive=``)."""
    header, _ = run_worker({"setup": list(setup), "experiment": code}, confine)
    histories = header.get("experiment")
    if not isinstance(histories, dict) or "error" in histories:
        why = histories.get("error") if isinstance(histories, dict) else "no answer"
        raise WorkerFailed(f"the experiment failed: {why}")
    return histories
