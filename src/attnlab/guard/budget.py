r"""The time budget of a student's function: :class:`alarm` raises :class:`OutOfTime` inside it.

It uses ``signal.setitimer`` and ``SIGALRM``: it interrupts Python code (``while True``) and
waits (``time.sleep``) in the main thread, where a Jupyter kernel runs cells and widget
callbacks.  It cannot interrupt a single long call into C (one huge matrix product,
``sum(range(10**10))``): the budget is enforced when that call returns.  Off the main thread,
or without ``SIGALRM`` (Windows), there is no budget.

A function cannot switch the budget off: a watchdog thread follows each alarm, and when the
alarm has not rung on time (the function cancelled the timer with ``signal.alarm(0)``, put
another SIGALRM handler in, or put the timer off) it raises :class:`OutOfTime` in the main
thread itself (``PyThreadState_SetAsyncExc``, which Python code cannot refuse), again every
:data:`RING_AGAIN_S` until the block ends; ``.tampered`` says so, and the block's end puts
the handler and the timer back.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import sysconfig
import threading
import time
from pathlib import Path

import torch

__all__ = ["RING_AGAIN_S", "WATCHDOG", "OutOfTime", "alarm", "watchdog_ident", "raise_in", "drain"]

RING_AGAIN_S = 0.25  # a function that catches OutOfTime is interrupted again after this


class OutOfTime(BaseException):
    """Raised inside a student's function when its budget is spent (not an ``Exception``,
    so that ``except Exception`` in the student's code does not swallow it)."""

    def __init__(self, seconds: float = 0.0, whole: bool = False, after: bool = False):
        super().__init__(seconds, whole)
        self.seconds, self.whole = seconds, whole
        self.after = after  # spent after the calls: in what the function returned

    def __str__(self) -> str:
        if self.after:
            return f"checking what your function returned took longer than {self.seconds:g} s"
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


def raise_in(ident: int, error: type[BaseException]) -> None:
    """Raise ``error`` in thread ``ident`` at its next line."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(error))


class _Drained(BaseException):
    """Raised in this thread by :func:`drain` and caught there."""


def drain() -> None:
    """Take back a raise sent to this thread and not landed yet, and leave the interpreter as
    if none had been sent: a raise that is sent and never lands (its thread ended first, or
    one taken back with NULL) keeps every thread checking for one at every instruction."""
    try:
        raise_in(threading.get_ident(), _Drained)  # replaces one pending here
        for _ in range(10_000):  # it lands at the loop's next turn
            pass
    except _Drained:
        pass


class _Watchdog:
    """One thread that raises :class:`OutOfTime` in the main thread when the innermost alarm
    has not rung on time (see the module docstring)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.wake = threading.Condition(self.lock)
        self.alarms: list[alarm] = []  # the active ones, innermost last
        self.thread: threading.Thread | None = None

    def follow(self, timer: alarm) -> None:
        with self.lock:
            if self.thread is None:
                self.thread = threading.Thread(target=self._watch, name=WATCHDOG, daemon=True)
                self.thread.start()
            self.alarms.append(timer)  # no wake-up: it looks every RING_AGAIN_S (a wake-up
            # would take the interpreter from the call at once, twice a call)

    def leave(self, timer: alarm) -> None:
        """``timer`` is over: never raise for it again, nor let a raise already sent land."""
        with self.lock:
            timer.active = False
            if timer in self.alarms:
                self.alarms.remove(timer)
            sent = timer.sent
        if sent:
            drain()

    def _watch(self) -> None:
        with self.lock:
            while True:
                if not self.alarms:
                    self.wake.wait(RING_AGAIN_S)
                    continue
                timer, now = self.alarms[-1], time.monotonic()
                if now < timer.check_at:
                    self.wake.wait(min(timer.check_at - now, RING_AGAIN_S))
                    continue
                timer.check_at = now + RING_AGAIN_S
                if timer.silenced(now):
                    timer.fired = timer.tampered = timer.sent = True
                    main = threading.main_thread().ident
                    raise_in(main, OutOfTime)
                    handler = signal.getsignal(signal.SIGALRM)
                    if callable(handler):  # wakes a sleep; a default handler would end the process
                        signal.pthread_kill(main, signal.SIGALRM)


WATCHDOG = "attnlab-budget-watchdog"  # the watchdog thread's name


def watchdog_ident() -> int | None:
    """The watchdog thread's ident (not a thread of the student's), or None before it runs."""
    thread = _WATCHDOG.thread
    return thread.ident if thread is not None else None


_WATCHDOG = _Watchdog()
os.register_at_fork(after_in_child=lambda: globals().update(_WATCHDOG=_Watchdog()))


class alarm:  # noqa: N801 - used as a function: `with alarm(seconds) as timer:`
    """Raise :class:`OutOfTime` in the code run inside the block after ``seconds`` (and again
    every :data:`RING_AGAIN_S`, and at every line of the student's code, until the block ends:
    a function that catches OutOfTime in a loop is stopped all the same); ``.fired`` says it
    rang, ``.tampered`` that the block's code switched the timer or its handler off (the
    watchdog stopped it then).  A class, not a generator: no frame of its own code can be
    interrupted."""

    def __init__(self, seconds: float):
        self.seconds, self.fired, self.active, self.tampered = seconds, False, False, False
        self.sent = False  # the watchdog raised in the main thread

    def __enter__(self) -> alarm:
        if not _can_alarm():
            return self
        self.active = True
        self.handler = self._ring  # one bound method: compared by identity
        self.previous = signal.signal(signal.SIGALRM, self.handler)
        self.tracing = sys.gettrace()
        self.outer, _ = signal.setitimer(signal.ITIMER_REAL, max(self.seconds, 1e-3))
        self.start = time.monotonic()
        self.rang = self.start + self.seconds  # when it rings (again)
        self.check_at = self.rang + RING_AGAIN_S
        _WATCHDOG.follow(self)
        return self

    def silenced(self, now: float) -> bool:
        """The alarm has not rung when it should have (asked by the watchdog)."""
        ours = signal.getsignal(signal.SIGALRM) is self.handler
        return not ours or now - self.rang > 2 * RING_AGAIN_S

    def __exit__(self, *exc) -> None:
        if not self.active:
            return
        while True:
            try:
                self._finish()
                return
            except OutOfTime:  # rang as the block ended: it is over all the same
                continue

    def _finish(self) -> None:
        left, _ = signal.setitimer(signal.ITIMER_REAL, 0)
        _WATCHDOG.leave(self)
        due = self.rang - time.monotonic()  # when it would have rung
        cancelled = left == 0 and due > 0.05  # signal.alarm(0), setitimer(ITIMER_REAL, 0)
        if cancelled or left > due + 0.05 or signal.getsignal(signal.SIGALRM) is not self.handler:
            self.tampered = True
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
        self.rang = time.monotonic() + RING_AGAIN_S
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
