r"""The harness every check runs in: running a student's function safely.

:func:`run_check` runs a check's body in a :class:`attnlab.guard.sandbox.Session` with the
library's own functions in place (:func:`attnlab.guard.library.library_in_place`), under
``torch.no_grad`` and a forked random state; whatever happens (a wrong answer, an exception of
any kind, the time budget, the user's stop button) it answers a
:class:`~attnlab.checks.results.CheckResult`, and raises only in solutions mode.
:func:`call_student` is the one way a check calls the student's function.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable

import torch
from torch import Tensor, nn

from attnlab.checks.results import LAST, CheckResult, Failure
from attnlab.guard.budget import OutOfTime
from attnlab.guard.errors import StudentRaised, describe, not_plain, where
from attnlab.guard.library import library_in_place
from attnlab.guard.sandbox import Session

__all__ = ["ENV_VAR", "SOLUTIONS", "solutions_mode", "run_check", "session", "call_student"]

#: Set this environment variable to 1 to fill in the reference answers (CI does).
ENV_VAR = "ATTNLAB_SOLUTIONS"


def _switch_on(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes")


#: Read once, when the checks are imported, from the environment the kernel was started with
#: (CI's test run sets it); a cell that sets ``os.environ`` later changes nothing, and the
#: grading worker (:mod:`attnlab.checks.worker`) always runs with it off.
SOLUTIONS = _switch_on(os.environ.get(ENV_VAR))


def solutions_mode() -> bool:
    """True when ``ATTNLAB_SOLUTIONS`` was 1 (or true/yes) as the checks were imported: CI's
    mode, in which the references fill in the exercises and a failing check raises."""
    return SOLUTIONS


_SESSIONS: list[Session] = []  # the session of the check now running (innermost last)


# --------------------------------------------------------------------------- running a check
def session() -> Session:
    """The session of the check now running."""
    return _SESSIONS[-1]


def run_check(
    name: str, fn: object, body: Callable[[Callable], str], usage: str | None = None
) -> CheckResult:
    """Run ``body(fn)`` safely; turn what happens into a CheckResult; raise only in solutions
    mode (AssertionError, when the result is not ok)."""
    guard = Session()
    _SESSIONS.append(guard)
    try:
        result = _result(name, fn, body, usage, guard)
    finally:
        _SESSIONS.pop()
    LAST[name] = result
    if not result.ok and solutions_mode():
        raise AssertionError(str(result))
    return result


def _result(
    name: str, fn: object, body: Callable[[Callable], str], usage: str | None, guard: Session
) -> CheckResult:
    replaced: list[str] = []
    try:
        if not callable(fn):
            usage = usage or f"`check_{name}` needs your function, e.g. `check_{name}({name})`"
            raise Failure("wrong_type", f"{usage}; got {type(fn).__name__}.")
        with (
            guard.checking(torch.float32, torch.device("cpu")),  # the models' dtype and device
            library_in_place() as replaced,
            torch.random.fork_rng(devices=[]),
            torch.no_grad(),
        ):
            category, details = "ok", body(fn)
    except Failure as failure:
        category, details = failure.category, failure.message
    except OutOfTime as error:
        category, details = "timeout", guard.time_message(error)
    except KeyboardInterrupt:
        category, details = (
            "interrupted",
            (
                "The check was interrupted (the kernel's stop button, or a KeyboardInterrupt) "
                "before it finished, so it says nothing about your function yet: run it again."
            ),
        )
    except StudentRaised as raised:  # raised where no check expected it
        category = "exception"
        details = f"Your function raised {describe(raised.error)}{where(raised.error)}."
    except BaseException as error:  # noqa: BLE001 - a strange output must never crash the check
        category, details = "exception", f"Checking your output failed: {describe(error)}."
    return CheckResult(name, *_verdict(category, details, guard, replaced))


def _verdict(
    category: str, details: str, guard: Session, replaced: list[str]
) -> tuple[bool, str, str, str]:
    """(ok, category, details, printed), with what the function changed and put back said."""
    changed = guard.changed_message()
    if changed and category == "ok":
        category = "side_effect"
        details = (
            f"Careful: {changed} A function must not change the library or the model: "
            f"return your result instead. Apart from that: {details}"
        )
    elif changed:
        details = f"{details} Also, {changed}"
    elif category == "ok" and replaced:
        details += (
            f" (Your session has replaced {', '.join(replaced)}; the check used the library's own.)"
        )
    return category == "ok", category, details, guard.printed.shown()


def _clone(x: object) -> object:
    if isinstance(x, Tensor):
        return x.clone()
    if isinstance(x, nn.Module):
        return copy.deepcopy(x)
    return x


def call_student(fn: Callable, args: tuple, where_: str) -> object:
    """fn(*copies of args) in the check's session; what goes wrong becomes a Failure."""
    guard = session()
    try:
        out = guard.call(fn, *(_clone(a) for a in args))
    except StudentRaised as raised:
        error = raised.error
        if isinstance(error, NotImplementedError):
            raise Failure(
                "not_implemented",
                "Replace `raise NotImplementedError` under `# YOUR CODE HERE` with your code, "
                "run that cell, then run this one again.",
            ) from None
        raise Failure(
            "exception", f"Your function raised {describe(error)}{where(error)} {where_}."
        ) from None
    except OutOfTime as error:
        raise Failure("timeout", f"{guard.time_message(error)} ({where_})") from None
    problem = not_plain(out)  # a tensor subclass: its methods would run unguarded from here
    if problem is not None:
        raise Failure("wrong_type", f"{problem[0].upper()}{problem[1:]} ({where_}).")
    return out
