r"""The grading worker: runs a student's code in a process of its own and sends back data.

Started by :mod:`attnlab.checks.isolated` as ``python -I -c "...; serve()"`` (isolated
mode: no environment variables read, neither the working directory nor the student's folder
on ``sys.path``), with an empty environment, in an empty folder, inside the sandbox where one
is given.  It reads a *job* (JSON) on standard input::

    {"setup": [code, ...],            the instructor's set-up cells (imports)
     "cells": [{"label", "source"}],  the student's cells that define what is graded
     "exercises": [name, ...],        record every call of these functions in their checks
     "in_model": {name: [model, ...]},  run these inside the shipped models
     "answers": [variable, ...],      send back these variables' values
     "experiment": code or null}      run the instructor's experiment (in a worker of its own)

and answers with one message of :mod:`attnlab.checks.transport` on the standard output it
was started with (the student's code writes to a null device instead).  What it sends is what
the student's functions *returned*, call by call, as the library's own checks called them
(:class:`Recorder`), and what the models did with them (:func:`attnlab.checks.inside_models.
run_swapped`); it judges nothing: the grader replays the same checks on these answers against
references it computed itself.  A cell, a call and a check each keep the in-process session's
time budget, so a loop that never ends costs seconds, not the worker.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable

from attnlab.checks import harness
from attnlab.checks.exercises import BODIES
from attnlab.checks.harness import run_check
from attnlab.checks.inside_models import STRUCTURAL, run_swapped
from attnlab.checks.transport import Encoder, pack
from attnlab.checks.watch import Watch
from attnlab.guard.budget import OutOfTime
from attnlab.guard.errors import describe, where
from attnlab.guard.sandbox import Session, StudentRaised
from attnlab.models.threads import torch_threads

__all__ = ["Recorder", "serve"]


class Recorder:
    """The student's function, with what each call returned or raised written down."""

    def __init__(self, fn: Callable, encoder, watch: Watch):
        self.fn, self.encoder, self.calls = watch.watched(fn), encoder, []

    def __call__(self, *args, **kwargs):
        try:
            out = self.fn(*args, **kwargs)
        except OutOfTime:
            self.calls.append({"timeout": True})
            raise
        except BaseException as error:  # noqa: BLE001 - written down, then raised on as it was
            self.calls.append(
                {
                    "raised": {
                        "type": type(error).__name__[:80],
                        "message": describe(error).partition(": ")[2][:300],
                        "where": where(error)[:300],
                    }
                }
            )
            raise
        self.calls.append({"returned": self.encoder.encode(out)})
        return out


def _run_cells(job: dict, namespace: dict) -> list[dict]:
    """Execute the set-up and the student's cells in ``namespace``, each under a budget."""
    done = []
    for code in job.get("setup", []):
        exec(compile(code, "<set-up>", "exec"), namespace)  # the instructor's: must run
    for cell in job.get("cells", []):
        guard = Session(call_budget=10.0, run_budget=10.0)
        entry = {"label": cell["label"]}
        try:
            guard.call(exec, compile(cell["source"], f"<cell {cell['label']}>", "exec"), namespace)
        except StudentRaised as raised:
            entry["error"] = describe(raised.error)
        except SyntaxError as error:
            entry["error"] = describe(error)
        except BaseException as error:  # noqa: BLE001 - out of time, or a stop from inside
            entry["error"] = describe(error)
        done.append(entry)
    return done


def _record_checks(job: dict, namespace: dict, encoder) -> dict:
    recorded = {}
    for name in job.get("exercises", []):
        fn = namespace.get(name)
        if not callable(fn):
            recorded[name] = {"missing": type(fn).__name__ if name in namespace else None}
            continue
        watch = Watch(name)
        recorder = Recorder(fn, encoder, watch)
        said = run_check(name, recorder, BODIES[name])
        recorded[name] = {"calls": recorder.calls, "said": [said.category, said.details[:2000]]}
        if watch.used:
            recorded[name]["used"] = watch.used
    return recorded


def _record_runs(job: dict, namespace: dict, encoder, checks: dict) -> dict:
    runs: dict[str, dict] = {}
    for name, models in job.get("in_model", {}).items():
        fn = namespace.get(name)
        runs[name] = {}
        said = checks.get(name, {}).get("said", ["", ""])
        if said[0] in STRUCTURAL:  # the grader stops at that failure: no model needs to run
            continue
        for model_name in models:
            kept = {}

            def body(f, name=name, model_name=model_name, kept=kept) -> str:
                kept["run"] = run_swapped(name, f, model_name)
                return "ran"

            if not callable(fn):
                runs[name][model_name] = {"failure": ["not_implemented", "no function"]}
                continue
            watch = Watch(name)
            with torch_threads(1):
                said = run_check(f"{name} in {model_name}", watch.watched(fn), body)
            if watch.used:
                runs[name][model_name] = {"used": watch.used}
                continue
            if said.ok and "run" in kept:
                run = kept["run"]
                runs[name][model_name] = {
                    "outputs": [[int(i) for i in o] for o in run.outputs],
                    "alpha": encoder.encode(run.alpha),
                }
            else:
                runs[name][model_name] = {"failure": [said.category, said.details[:2000]]}
    return runs


def _plain(value: object) -> object:
    """``value`` as JSON's data: dicts, lists and numbers (anything else None)."""
    if isinstance(value, dict):
        return {str(key): _plain(v) for key, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return float(value) if isinstance(value, int | float) else None


def _experiment(code: str, namespace: dict) -> dict:
    """Run the instructor's experiment; its histories (score -> one history a seed), as
    plain numbers."""
    exec(compile(code, "<experiment>", "exec"), namespace)
    return {str(score): _plain(runs) for score, runs in namespace["histories"].items()}


def serve() -> None:
    """Read one job on standard input, answer it on standard output, exit."""
    answer = os.fdopen(os.dup(1), "wb")  # the grader reads this; the student's code cannot
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)  # print, sys.__stdout__ and os.write(1, ...) go nowhere
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - the null device, for the process
    job = json.loads(sys.stdin.read())

    harness.SOLUTIONS = False  # the worker never fills in answers, whatever its environment
    encoder, header = Encoder(), {}
    namespace = {"__name__": "__main__"}
    if job.get("experiment"):
        try:
            _run_cells({"setup": job.get("setup", [])}, namespace)
            header["experiment"] = _experiment(job["experiment"], namespace)
        except BaseException as error:  # noqa: BLE001 - said to the grader in one line
            header["experiment"] = {"error": f"{type(error).__name__}: {error}"[:300]}
    else:
        with torch_threads(1):
            header["cells"] = _run_cells(job, namespace)
        header["checks"] = _record_checks(job, namespace, encoder)
        header["runs"] = _record_runs(job, namespace, encoder, header["checks"])
        header["answers"] = {
            variable: encoder.encode(namespace[variable]) if variable in namespace else None
            for variable in job.get("answers", [])
        }
    answer.write(pack(header, encoder.tensors))
    answer.flush()
    os._exit(0)  # nothing the student's code left behind (threads, atexit) runs after this
