r"""The time budget of a student's function: :class:`alarm` raises :class:`OutOfTime` inside it.

It uses ``signal.setitimer`` and ``SIGALRM``: it interrupts Python code (``while True``) and
waits (``time.sleep``) in the main thread, where a Jupyter kernel runs cells and widget
callbacks.  It cannot interrupt a single long call into C (one huge matrix product,
``sum(range(10**10))``): the budget is enforced when that call returns.  Off the main thread,
or without ``SIGALRM`` (Windows), there is no budget.
"""

from __future__ import annotations

import signal
import sys
import sysconfig
import threading
import time
from pathlib import Path

import torch

__all__ = ["RING_AGAIN_S", "OutOfTime", "alarm"]

RING_AGAIN_S = 0.25  # a function that catches OutOfTime is interrupted again after this


class OutOfTime(BaseException):
    """Raised inside a student's function when its budget is spent (not an ``Exception``,
    so that ``except Exception`` in the student's code does not swallow it)."""

    def __init__(self, seconds: float, whole: bool = False):
        super().__init__(seconds, whole)
        self.seconds, self.whole = seconds, whole

    def __str__(self) -> str:
        if self.whole:
            return f"your function took longer than {self.seconds:g} s in all"
        return f"your function took longer than {self.seconds:g} s in one call"


def _can_alarm() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


#: Where the library, the standard library and the installed packages live: the time budget
#: never raises in their code (only in the student's), so that their clean-up always runs.
_SAFE_DIRS = tuple(
    {
        str(Path(__file__).resolve().parents[1]),  # the attnlab package
        str(Path(sysconfig.get_paths()["stdlib"]).resolve()),
        str(Path(sysconfig.get_paths()["purelib"]).resolve()),
        str(Path(torch.__file__).resolve().parents[1]),
    }
)


class alarm:  # noqa: N801 - used as a function: `with alarm(seconds) as timer:`
    """Raise :class:`OutOfTime` in the code run inside the block after ``seconds`` (and again
    every :data:`RING_AGAIN_S`, and at every line of the student's code, until the block ends:
    a function that catches OutOfTime in a loop is stopped all the same); ``.fired`` says it
    rang.  A class, not a generator: no frame of its own code can be interrupted."""

    def __init__(self, seconds: float):
        self.seconds, self.fired, self.active = seconds, False, False

    def __enter__(self) -> alarm:
        if not _can_alarm():
            return self
        self.active = True
        self.previous = signal.signal(signal.SIGALRM, self._ring)
        self.tracing = sys.gettrace()
        self.outer, _ = signal.setitimer(signal.ITIMER_REAL, max(self.seconds, 1e-3))
        self.start = time.monotonic()
        return self

    def __exit__(self, *exc) -> None:
        if not self.active:
            return
        signal.setitimer(signal.ITIMER_REAL, 0)
        self.active = False
        if self.fired:
            sys.settrace(self.tracing)
        signal.signal(signal.SIGALRM, self.previous)
        if self.outer:  # an enclosing alarm keeps what is left of its time
            left = self.outer - (time.monotonic() - self.start)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-3))

    def _ring(self, signum, frame) -> None:
        if not self.active:
            return
        self.fired = True
        signal.setitimer(signal.ITIMER_REAL, RING_AGAIN_S)
        sys.settrace(self._trace)
        while frame is not None:
            frame.f_trace, frame.f_trace_lines = self._trace, True
            frame = frame.f_back
        raise OutOfTime(self.seconds)

    def _trace(self, frame, event, arg):
        if not self.active:
            return None
        if event == "line" and not frame.f_code.co_filename.startswith(_SAFE_DIRS):
            raise OutOfTime(self.seconds)  # a line of the student's code, after the budget
        return self._trace
