r"""Run a student's function so that nothing it does outlasts the call.

A :class:`Session` is one check, or one action of a widget, that calls a student's function
(perhaps hundreds of times, from inside a model).  ``session.call(fn, *args)``:

* **puts back what the function changed**: the attributes of the library's modules and classes
  (:mod:`attnlab.guard.library`), torch's namespaces and every class of torch.nn (their
  dunders too), the builtins, ``math``, numpy, ``sys``'s hooks and the library's, torch's and
  numpy's entries of ``sys.modules``, the checks' and the guard's own modules and dicts,
  torch's global state, the interpreter's settings (:class:`~attnlab.guard.state.ProcessState`),
  the shared models the session was given and every model registered as loaded
  (:mod:`attnlab.guard.state`).  What
  was put back is listed in ``session.changes`` (``"`attention.masked_softmax`"``), what
  cannot be in ``session.notes`` (a deleted checkpoint), both for the message:
  :meth:`Session.changed_message`;
* **stops what the function started**: a thread still running after the call is stopped (an
  exception raised in it); one that cannot be makes every later call fail, since it could
  change anything; a process it forks ends at once, and a child process it started is killed;
* **keeps a time budget** (:mod:`attnlab.guard.budget`): about :data:`CALL_BUDGET_S` seconds a
  call and :data:`RUN_BUDGET_S` seconds for the whole session (time inside the student's
  function only, so a slow machine does not eat the student's budget).  Past it
  :class:`OutOfTime` is raised inside the function and the kernel stays usable;
* **captures what it prints** (:class:`~attnlab.guard.printed.Printed`);
* **wraps what it raises**: any exception, ``SystemExit`` and other ``BaseException`` included,
  comes out as :class:`StudentRaised` (an ``Exception``) holding the original
  (:mod:`attnlab.guard.errors`).  Only ``KeyboardInterrupt`` (the user's stop button) and
  :class:`OutOfTime` pass through, to stop the work.

The names a session's users need (the two exceptions, :func:`describe`, :func:`kind_problem`)
are importable from here too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator

import torch
from torch import nn

from attnlab.guard.budget import OutOfTime, alarm, drain, raise_in, watchdog_ident
from attnlab.guard.errors import StudentRaised, describe, kind_problem
from attnlab.guard.library import (
    LIBRARY,
    LIBRARY_OWNERS,
    STANDING_OWNERS,
    Attributes,
    Builtins,
    ModuleDicts,
    ModuleEntries,
    Standing,
    grading_modules,
    module_dicts,
)
from attnlab.guard.printed import Printed
from attnlab.guard.state import (
    LoadedModels,
    ProcessState,
    SharedModel,
    TorchState,
    register_loaded,
)

__all__ = [
    "CALL_BUDGET_S",
    "RUN_BUDGET_S",
    "Session",
    "OutOfTime",
    "StudentRaised",
    "describe",
    "kind_problem",
]

CALL_BUDGET_S = 2.0  # seconds one call of a student's function may take
RUN_BUDGET_S = 10.0  # seconds all its calls in one session may take together
CHECK_BUDGET_S = 60.0  # seconds a whole check may take, its calls and the library's work included
STOP_THREADS_S = 0.3  # seconds a thread the function started is given to stop

#: Threads started by a student's function that could not be stopped (idents): while one
#: runs, every call fails (it can change anything, at any time).
_RUNAWAY: list[tuple[int, str]] = []  # a list: the session puts the guard's dicts back
_IN_CALL = [0]  # calls of a student's function now running (a process forked there ends)
_FORKS = [0]  # forks made inside them


def _forked() -> None:
    if _IN_CALL[0]:
        _FORKS[0] += 1


def _forked_child() -> None:
    if _IN_CALL[0]:  # a process the student's function forked: no budget there, so it ends
        os._exit(0)


os.register_at_fork(after_in_parent=_forked, after_in_child=_forked_child)


def _children() -> set[int]:
    """The process's child processes now (from /proc; empty where there is none)."""
    found: set[int] = set()
    with contextlib.suppress(OSError):
        for task in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError), open(f"/proc/self/task/{task}/children") as f:
                found.update(int(pid) for pid in f.read().split())
    return found


_current_frames = sys._current_frames  # bound here: a call may replace sys's attributes


def _threads() -> set[int]:
    return set(_current_frames())


def _stop_threads(before: set[int]) -> tuple[list[str], list[str]]:
    """Stop the threads started since ``before``: (names stopped, names still running)."""
    new = _threads() - before - {watchdog_ident()}
    if not new:
        return [], []
    names = {t.ident: t.name for t in threading.enumerate()}
    deadline = time.monotonic() + STOP_THREADS_S
    alive = new
    while alive and time.monotonic() < deadline:
        for ident in alive:
            raise_in(ident, SystemExit)  # ends a thread quietly
        time.sleep(0.01)
        alive = alive & _threads()
    drain()  # one sent to a thread that ended before it landed must not linger
    _RUNAWAY.extend((ident, names.get(ident, f"thread {ident}")) for ident in alive)
    stopped = [names.get(i, f"thread {i}") for i in new - alive]
    return stopped, [names.get(i, f"thread {i}") for i in alive]


def _stop_children(before: set[int]) -> list[int]:
    """Kill and reap the child processes started since ``before``."""
    new = _children() - before
    for pid in new:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.waitpid(pid, 0)
    return sorted(new)


def _runaway_error() -> StudentRaised | None:
    running = [name for ident, name in _RUNAWAY if ident in _threads()]
    if not running:
        return None
    error = RuntimeError(
        f"a thread your function started earlier (`{running[0]}`) is still running and can "
        "change anything, so no check can be trusted: restart the kernel (Kernel → Restart)"
    )
    error._attnlab_where = ""
    return StudentRaised(error)


_STANDING: list[Standing] = []  # the last session's (saved once: see _standing)


def _standing() -> Standing:
    """What a call rarely touches, as it is now (:class:`~attnlab.guard.library.Standing`):
    the last session's snapshot where nothing changed since (one comparison, no copies)."""
    if not (_STANDING and _STANDING[0].unchanged()):
        _STANDING[:] = [Standing(STANDING_OWNERS)]
    return _STANDING[0]


class Session:
    """Calls of a student's function that leave nothing behind (see the module docstring).

    ``shared``: (label, model) pairs whose state the function must not change;
    ``call_budget``/``run_budget``: seconds (default :data:`CALL_BUDGET_S`,
    :data:`RUN_BUDGET_S`, read when the session starts).
    """

    def __init__(
        self,
        shared: tuple[tuple[str, nn.Module], ...] = (),
        call_budget: float | None = None,
        run_budget: float | None = None,
    ):
        self.models: list[SharedModel] = []
        self.loaded = LoadedModels()
        for label, model in shared:
            self.share(label, model)
        self.grading = [*grading_modules(), LIBRARY]
        self.dicts = module_dicts(self.grading)
        self.builtins = Builtins()
        self.standing = _standing()
        self.entries = ModuleEntries()
        self.children = _children()
        self.call_budget = CALL_BUDGET_S if call_budget is None else call_budget
        self.run_budget = RUN_BUDGET_S if run_budget is None else run_budget
        self.used = 0.0  # seconds spent inside the student's function
        self.calls = 0
        self.changes: list[str] = []
        self.notes: list[str] = []  # what it did that could not be put back, in sentences
        self.printed = Printed()

    def share(self, label: str, model: nn.Module) -> None:
        """Also guard ``model`` (called ``label`` in messages) from here on."""
        register_loaded(label, model)  # kept in memory: every later session guards it
        self.loaded.forget(model)
        self.models.append(SharedModel(label, model))

    def call(self, fn: Callable, *args, **kwargs):
        """``fn(*args, **kwargs)``, guarded; raises StudentRaised, OutOfTime, KeyboardInterrupt."""
        left = self.run_budget - self.used
        if left <= 0:
            raise OutOfTime(self.run_budget, whole=True)
        if _RUNAWAY and (unsafe := _runaway_error()) is not None:
            raise unsafe
        budget, whole = min(self.call_budget, left), left < self.call_budget
        saved = self._snapshot()
        start = time.perf_counter()
        self.calls += 1
        timer = alarm(budget)
        _IN_CALL[0] += 1
        try:
            with self.printed.capturing(), timer:
                try:
                    try:
                        out = fn(*args, **kwargs)
                    finally:  # first of all: all that follows calls the builtins
                        self._builtins_changed = self.builtins.restore()
                except (KeyboardInterrupt, OutOfTime):
                    raise
                except BaseException as error:  # noqa: BLE001 - SystemExit too: never escapes
                    raise StudentRaised(error) from None
            if timer.fired:  # it rang, and the function caught OutOfTime
                raise OutOfTime(self.run_budget if whole else budget, whole)
            return out
        except OutOfTime:
            raise OutOfTime(self.run_budget if whole else budget, whole) from None
        finally:
            _IN_CALL[0] -= 1
            self.used += time.perf_counter() - start
            self._restore(saved, timer)

    def _snapshot(self) -> tuple:
        """What the call may not change, as it is now (see the module docstring)."""
        for model in self.models:
            model.before()
        self.loaded.before()
        self._builtins_changed = []
        attributes = (
            Attributes(LIBRARY_OWNERS, strict=True),
            Attributes(self.grading, strict=True),
        )
        return (
            TorchState(),
            ProcessState(),
            attributes,
            ModuleDicts(self.dicts),
            _threads(),
            _FORKS[0],
        )

    def _restore(self, saved: tuple, timer: alarm) -> None:
        torch_state, process, attributes, dicts, threads, forks = saved
        stopped, running = _stop_threads(threads)  # first: a thread could change it all again
        killed = _stop_children(self.children)
        found = self._builtins_changed + self.builtins.restore()  # a thread's, since
        found += self.standing.restore()  # torch's, sys's: before the code that reads them
        found += self.entries.restore()
        found += torch_state.restore()  # first of torch's state: the default dtype sets
        found += process.restore()  # torch.Storage back
        self.notes += [n for n in process.notes if n not in self.notes]
        found += [w for s in attributes for w in s.restore()]
        found += dicts.restore()
        found += [w for model in self.models for w in model.restore()]
        found += self.loaded.restore()
        if timer.tampered:
            found.append("the time budget's timer (`signal.alarm`, `signal.setitimer` or SIGALRM)")
        notes = [w for w in found if w.startswith("deleted ")]
        self.changes += [w for w in found if w not in self.changes and w not in notes]
        if _FORKS[0] != forks or killed:
            notes.append("started a process (`os.fork`, `subprocess`); it was stopped")
        if stopped:
            notes.append(f"started a thread (`{stopped[0]}`); it was stopped")
        if running:
            notes.append(
                f"started a thread (`{running[0]}`) that is still running and can change "
                "anything: restart the kernel (Kernel → Restart)"
            )
        self.notes += [n for n in notes if n not in self.notes]

    def changed_message(self, who: str = "your function") -> str:
        """'your function changed `attention.masked_softmax`; it was put back.', or ''; then
        what it did that could not be put back."""
        said = [self._changed(who)] if self.changes else []
        if self.notes:
            also = " also" if said else ""
            said.append(f"{who if not said else 'It'}{also} " + "; ".join(self.notes) + ".")
        return " ".join(said)

    def _changed(self, who: str) -> str:
        things = self.changes[:4] + (
            [f"{len(self.changes) - 4} more"] if len(self.changes) > 4 else []
        )
        listed = things[0] if len(things) == 1 else ", ".join(things[:-1]) + " and " + things[-1]
        it = "it was" if len(self.changes) == 1 else "they were"
        return f"{who} changed {listed}; {it} put back."

    @contextlib.contextmanager
    def checking(self, dtype: torch.dtype, device: torch.device) -> Iterator[None]:
        """A check's own work (its examples, references and comparisons) in ``dtype`` on
        ``device`` whatever the notebook set (a cell's ``torch.set_default_dtype``), and under
        :data:`CHECK_BUDGET_S`: a returned object whose methods never return is stopped too."""
        with contextlib.ExitStack() as stack:
            if torch.get_default_dtype() != dtype:
                stack.callback(torch.set_default_dtype, torch.get_default_dtype())
                torch.set_default_dtype(dtype)
            if torch.get_default_device() != device:
                stack.enter_context(torch.device(device))
            timer = stack.enter_context(alarm(CHECK_BUDGET_S))
            try:
                yield
            except OutOfTime as error:
                if not timer.fired or error.after:
                    raise
                raise OutOfTime(CHECK_BUDGET_S, after=True) from None
            if timer.fired:  # it rang, and something caught OutOfTime
                raise OutOfTime(CHECK_BUDGET_S, after=True)

    def time_message(self, error: OutOfTime, who: str = "your function") -> str:
        """Why the budget ran out, in one sentence."""
        if error.after:
            return (
                f"Stopped: checking what {who} returned took longer than {error.seconds:g} s. "
                "Does it return an object whose methods never end (a subclass of torch.Tensor "
                "with its own `__torch_function__`, say)? Return a plain torch.Tensor."
            )
        per = f"{self.calls} call{'s' * (self.calls != 1)}"
        if error.whole:
            return (
                f"Stopped: {who} took longer than {error.seconds:g} s in all ({per}). "
                "Is it much slower than it needs to be (a Python loop over the entries)?"
            )
        return (
            f"Stopped: {who} took longer than {error.seconds:g} s in one call. Is there "
            "a loop that never ends, or a `time.sleep`?"
        )
