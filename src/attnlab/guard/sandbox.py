r"""Run a student's function so that nothing it does outlasts the call.

A :class:`Session` is one check, or one action of a widget, that calls a student's function
(perhaps hundreds of times, from inside a model).  ``session.call(fn, *args)``:

* **puts back what the function changed**: the attributes of the library's modules and classes
  (:mod:`attnlab.guard.library`), the torch functions the library uses, torch's global state
  and the shared models the session was given (:mod:`attnlab.guard.state`).  What was put back
  is listed in ``session.changes`` (``"`attention.masked_softmax`"``), for the message:
  :meth:`Session.changed_message`;
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

import time
from collections.abc import Callable

from torch import nn

from attnlab.guard.budget import OutOfTime, alarm
from attnlab.guard.errors import StudentRaised, describe, kind_problem
from attnlab.guard.library import LIBRARY_OWNERS, TORCH_OWNERS, Attributes
from attnlab.guard.printed import Printed
from attnlab.guard.state import SharedModel, TorchState

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
        self.models = [SharedModel(label, model) for label, model in shared]
        self.call_budget = CALL_BUDGET_S if call_budget is None else call_budget
        self.run_budget = RUN_BUDGET_S if run_budget is None else run_budget
        self.used = 0.0  # seconds spent inside the student's function
        self.calls = 0
        self.changes: list[str] = []
        self.printed = Printed()

    def share(self, label: str, model: nn.Module) -> None:
        """Also guard ``model`` (called ``label`` in messages) from here on."""
        self.models.append(SharedModel(label, model))

    def call(self, fn: Callable, *args, **kwargs):
        """``fn(*args, **kwargs)``, guarded; raises StudentRaised, OutOfTime, KeyboardInterrupt."""
        left = self.run_budget - self.used
        if left <= 0:
            raise OutOfTime(self.run_budget, whole=True)
        budget, whole = min(self.call_budget, left), left < self.call_budget
        saved = (Attributes(LIBRARY_OWNERS, strict=True), Attributes(TORCH_OWNERS, strict=False))
        torch_state = TorchState()
        for model in self.models:
            model.before()
        start = time.perf_counter()
        self.calls += 1
        try:
            with self.printed.capturing(), alarm(budget) as timer:
                try:
                    out = fn(*args, **kwargs)
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
            self.used += time.perf_counter() - start
            found = torch_state.restore()  # first: the default dtype sets torch.Storage back
            found += [w for s in saved for w in s.restore()]
            found += [w for model in self.models for w in model.restore()]
            self.changes += [w for w in found if w not in self.changes]

    def changed_message(self, who: str = "your function") -> str:
        """'your function changed `attention.masked_softmax`; it was put back.', or ''."""
        if not self.changes:
            return ""
        things = self.changes[:4] + (
            [f"{len(self.changes) - 4} more"] if len(self.changes) > 4 else []
        )
        listed = things[0] if len(things) == 1 else ", ".join(things[:-1]) + " and " + things[-1]
        it = "it was" if len(self.changes) == 1 else "they were"
        return f"{who} changed {listed}; {it} put back."

    def time_message(self, error: OutOfTime, who: str = "your function") -> str:
        """Why the budget ran out, in one sentence."""
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
