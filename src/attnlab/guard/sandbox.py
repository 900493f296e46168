r"""Run a student's function so that nothing it does outlasts the call.

A :class:`Session` is one check, or one action of a widget, that calls a student's function
(perhaps hundreds of times, from inside a model).  ``session.call(fn, *args)``:

* **puts back what the function changed**: the attributes of the library's modules and classes
  (``attention.masked_softmax``, ``attention.MultiHeadAttention.forward``, ...), the torch
  functions the library uses, the default dtype, grad mode, the thread count and the random
  state, and the parameters, buffers, sub-modules, attributes and hooks of the shared models
  the session was given.  What was put back is listed in ``session.changes`` (``"`attention.
  masked_softmax`"``), for the message: :meth:`Session.changed_message`;
* **keeps a time budget**: about :data:`CALL_BUDGET_S` seconds a call and
  :data:`RUN_BUDGET_S` seconds for the whole session (time inside the student's function only,
  so a slow machine does not eat the student's budget).  Past it :class:`OutOfTime` is raised
  inside the function and the kernel stays usable;
* **captures what it prints** (:class:`Printed`: counted, and only the first lines kept, so a
  print in a function called 10,000 times costs nothing and is shown once);
* **wraps what it raises**: any exception, ``SystemExit`` and other ``BaseException`` included,
  comes out as :class:`StudentRaised` (an ``Exception``) holding the original.  Only
  ``KeyboardInterrupt`` (the user's stop button) and :class:`OutOfTime` pass through, to stop
  the work.

The time budget uses ``signal.setitimer`` and ``SIGALRM``: it interrupts Python code (``while
True``) and waits (``time.sleep``) in the main thread, where a Jupyter kernel runs cells and
widget callbacks.  It cannot interrupt a single long call into C (one huge matrix product,
``sum(range(10**10))``): the budget is enforced when that call returns.  Off the main thread,
or without ``SIGALRM`` (Windows), there is no budget.

:data:`LIBRARY` holds the library's attributes as imported; :func:`library_in_place` runs a
block with them in place (a check's references, and the model around a student's function, are
the library's own even after a user replaced ``attention.masked_softmax``).
"""

from __future__ import annotations

import contextlib
import io
import signal
import sys
import sysconfig
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import torch
from torch import Tensor, nn

import attnlab.attention
import attnlab.decode
import attnlab.guard.parts
import attnlab.models.base
import attnlab.models.rnn
import attnlab.models.transformer

__all__ = [
    "CALL_BUDGET_S",
    "RUN_BUDGET_S",
    "OutOfTime",
    "StudentRaised",
    "Printed",
    "Session",
    "LIBRARY",
    "library_in_place",
    "replaced_in_session",
    "alarm",
    "describe",
    "where",
    "kind_problem",
]

CALL_BUDGET_S = 2.0  # seconds one call of a student's function may take
RUN_BUDGET_S = 10.0  # seconds all its calls in one session may take together
RING_AGAIN_S = 0.25  # a function that catches OutOfTime is interrupted again after this
PRINT_LINES = 5  # lines of a student's printed output shown
PRINT_KEEP = 2000  # characters of it kept

_MISSING = object()


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


class StudentRaised(Exception):
    """What a student's function raised (``error``, any BaseException), as an Exception."""

    def __init__(self, error: BaseException):
        super().__init__(describe(error))
        self.error = error


# --------------------------------------------------------------------------- describing errors
def describe(error: BaseException, limit: int = 300) -> str:
    """``TypeName: message`` on one line, cut to ``limit`` characters; never raises."""
    name = type(error).__name__
    try:
        text = " ".join(str(error).split())
    except BaseException as inner:  # noqa: BLE001 - a raising __str__ must not escape
        text = f"(its message cannot be shown: str() raised {type(inner).__name__})"
    if isinstance(error, SystemExit):
        text = f"sys.exit({text})" if text else "sys.exit()"
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{name}: {text}" if text else name


_LIBRARY_DIRS = tuple(
    str(Path(m.__file__).resolve().parent) for m in (torch, attnlab.attention, traceback)
)


def where(error: BaseException) -> str:
    """' (line N of `f`: `code`)' for the deepest frame in the student's code, or ''."""
    try:
        frames = traceback.extract_tb(error.__traceback__)
    except Exception:  # noqa: BLE001 - a strange traceback: say nothing
        return ""
    here = str(Path(__file__).resolve())
    for frame in reversed(frames):
        path = str(Path(frame.filename).resolve())
        if path != here and not path.startswith(_LIBRARY_DIRS):
            code = f": `{frame.line.strip()}`" if frame.line else ""
            return f" (line {frame.lineno} of `{frame.name}`{code})"
    return ""


def kind_problem(value: object, dtype: torch.dtype, device: torch.device, who: str) -> str | None:
    """Why the tensors in ``value`` cannot go on in a model of ``dtype`` on ``device``, or None."""
    tensors = value if isinstance(value, tuple | list) else (value,)
    for x in tensors:
        if not isinstance(x, Tensor):
            continue
        if x.dtype != dtype:
            got, want = str(x.dtype).removeprefix("torch."), str(dtype).removeprefix("torch.")
            return (
                f"{who} returned {got}; the model works in {want}: keep the dtype of the inputs "
                f"(e.g. `.to(torch.{want})`, or no `dtype=torch.{got}` / numpy arrays)"
            )
        if x.device != device:
            return (
                f"{who} returned a tensor on {x.device}; the model works on {device}: keep "
                "the device of the inputs"
            )
    return None


# --------------------------------------------------------------------------- the time budget
def _can_alarm() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


#: Where the library, the standard library and the installed packages live: the time budget
#: never raises in their code (only in the student's), so that their clean-up always runs.
_SAFE_DIRS = tuple(
    {
        str(Path(attnlab.attention.__file__).resolve().parent),
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


# --------------------------------------------------------------------------- printed output
class Printed(io.TextIOBase):
    """A stream that counts what is written to it and keeps only the first characters."""

    def __init__(self, keep: int = PRINT_KEEP):
        super().__init__()
        self.keep, self.head, self.chars, self.breaks = keep, "", 0, 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        text = str(text)
        self.chars += len(text)
        self.breaks += text.count("\n")
        if len(self.head) < self.keep:
            self.head += text[: self.keep - len(self.head)]
        return len(text)

    @property
    def lines(self) -> int:
        return self.breaks + (0 if self.head.endswith("\n") or not self.head else 1)

    def shown(self, lines: int = PRINT_LINES, who: str = "Your function") -> str:
        """'' if nothing was printed; else a heading and the first ``lines`` lines."""
        if not self.chars:
            return ""
        first = self.head.splitlines()[:lines]
        first = [line if len(line) <= 120 else line[:119] + "…" for line in first]
        total = self.lines
        more = f", the first {len(first)} shown" if total > len(first) else ""
        heading = f"{who} printed {total:,} line{'s' * (total != 1)} (shown once{more}):"
        return "\n".join([heading, *first])

    @contextlib.contextmanager
    def capturing(self) -> Iterator[None]:
        with contextlib.redirect_stdout(self), contextlib.redirect_stderr(self):
            yield


# --------------------------------------------------------------------------- attributes
def _label(owner: object) -> str:
    name = getattr(owner, "__module__", None) if isinstance(owner, type) else None
    if isinstance(owner, ModuleType):
        full = owner.__name__
    else:
        full = f"{name}.{owner.__qualname__}"
    return full.removeprefix("attnlab.")


def _library_owners() -> list[object]:
    """The library's modules whose attributes the models read, and the classes they define."""
    modules = [
        attnlab.attention,
        attnlab.models.rnn,
        attnlab.models.transformer,
        attnlab.models.base,
        attnlab.decode,
        attnlab.guard.parts,
    ]
    classes = [
        value
        for module in modules
        for value in vars(module).values()
        if isinstance(value, type) and value.__module__ == module.__name__
    ]
    return modules + classes


#: torch's own namespaces: a change of an existing attribute counts (new ones are lazy imports).
_TORCH_OWNERS = (torch, torch.nn.functional, torch.Tensor, nn.Module)


def _public(attrs: dict) -> dict:
    return {k: v for k, v in attrs.items() if not (k.startswith("__") and k.endswith("__"))}


class _Attributes:
    """The attributes of some modules and classes, to compare with and put back."""

    def __init__(self, owners: list[object], strict: bool):
        self.saved = [(owner, _public(dict(vars(owner)))) for owner in owners]
        self.strict = strict  # new attributes count too

    def restore(self) -> list[str]:
        changed = []
        for owner, saved in self.saved:
            now = _public(dict(vars(owner)))
            names = (now.keys() | saved.keys()) if self.strict else saved.keys()
            for name in names:
                if now.get(name, _MISSING) is saved.get(name, _MISSING):
                    continue
                _put(owner, name, saved.get(name, _MISSING))
                changed.append(f"`{_label(owner)}.{name}`")
        return changed


def _put(owner: object, name: str, value: object) -> None:
    if value is _MISSING:
        delattr(owner, name)
    else:
        setattr(owner, name, value)


#: The library's attributes as imported (captured when attnlab.guard.sandbox is first imported; the
#: functions of attnlab.attention as defined, even if the user replaced one before that).
LIBRARY = _Attributes(_library_owners(), strict=True)
dict(LIBRARY.saved)[attnlab.attention].update(attnlab.attention.AS_DEFINED)


@contextlib.contextmanager
def library_in_place() -> Iterator[list[str]]:
    """Run the block with the library's own attributes; put the user's back afterwards.

    Yields the attributes that were not the library's when the block began (``["`attention.
    masked_softmax`"]`` after ``attention.masked_softmax = mine``).
    """
    users = _Attributes([owner for owner, _ in LIBRARY.saved], strict=True)
    replaced = LIBRARY.restore()
    try:
        yield replaced
    finally:
        LIBRARY.restore()  # whatever the block left, then the user's own again
        users.restore()


def replaced_in_session() -> list[str]:
    """The library attributes that the user's session has replaced (without changing them)."""
    return [
        f"`{_label(owner)}.{name}`"
        for owner, saved in LIBRARY.saved
        for name, value in saved.items()
        if vars(owner).get(name, _MISSING) is not value
    ]


# --------------------------------------------------------------------------- torch's state
class _TorchState:
    """Default dtype, grad mode, threads, random state: saved, compared, put back."""

    def __init__(self):
        self.dtype = torch.get_default_dtype()
        self.grad = torch.is_grad_enabled()
        self.threads = torch.get_num_threads()
        self.rng = torch.get_rng_state()
        self.deterministic = torch.are_deterministic_algorithms_enabled()
        self.anomaly = torch.is_anomaly_enabled()

    def restore(self) -> list[str]:
        changed = []
        if torch.get_default_dtype() != self.dtype:
            changed.append(f"the default dtype (to {torch.get_default_dtype()})")
            torch.set_default_dtype(self.dtype)
        if torch.is_grad_enabled() != self.grad:
            changed.append("grad mode (`torch.set_grad_enabled`)")
            torch.set_grad_enabled(self.grad)
        if torch.get_num_threads() != self.threads:
            changed.append("the number of threads")
            torch.set_num_threads(self.threads)
        if torch.are_deterministic_algorithms_enabled() != self.deterministic:
            changed.append("`torch.use_deterministic_algorithms`")
            torch.use_deterministic_algorithms(self.deterministic)
        if torch.is_anomaly_enabled() != self.anomaly:
            changed.append("anomaly detection")
            torch.set_anomaly_enabled(self.anomaly)
        torch.set_rng_state(self.rng)  # drawing random numbers is fine: no message
        return changed


# --------------------------------------------------------------------------- shared models
def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(a[k] is b[k] for k in a)


def _watched(value: object) -> bool:
    """Instance attributes a call may not change: code (functions, modules) and the mode.

    Tensors, numbers and None are left alone: a module keeps the weights of its last call
    (``MultiHeadAttention.attn``), which the library itself sets inside the student's call."""
    return callable(value) or isinstance(value, bool)


class _ModuleState:
    """One module's sub-modules, parameters, buffers, hooks and code attributes before a call,
    and its tensors' versions; ``values`` holds their values as first seen (to put back)."""

    def __init__(self, label: str, module: nn.Module, values: dict[int, Tensor]):
        self.label, self.module = label, module
        attrs = vars(module)
        self.dicts = {k: dict(v) for k, v in attrs.items() if isinstance(v, dict)}
        self.attrs = {k: v for k, v in attrs.items() if k not in self.dicts and _watched(v)}
        self.tensors = {
            k: (t, t._version, t.data_ptr(), t.requires_grad)
            for k, t in {**module._parameters, **module._buffers}.items()
            if t is not None
        }
        for t, *_ in self.tensors.values():
            if id(t) not in values:  # the value as first seen, copied once per session
                values[id(t)] = t.detach().clone()
        self.values = values

    def restore(self) -> list[str]:
        changed, now = [], vars(self.module)
        for name, saved in self.dicts.items():
            if now.get(name) is None or not isinstance(now[name], dict):
                now[name] = type(saved)()
            if not _same(now[name], saved):
                now[name].clear()
                now[name].update(saved)
                changed.append(self._what(name))
        code_now = {k: v for k, v in now.items() if k not in self.dicts and _watched(v)}
        for name in code_now.keys() | self.attrs.keys():
            old = self.attrs.get(name, _MISSING)
            if code_now.get(name, _MISSING) is old:
                continue
            if old is _MISSING:
                now.pop(name)
            else:
                now[name] = old
            changed.append(f"`{self.label}.{name}`")
        return changed + self._restore_values()

    def _what(self, name: str) -> str:
        if "hook" in name:
            return f"the hooks of `{self.label}`"
        return f"`{self.label}`'s {name.strip('_')}"

    def _restore_values(self) -> list[str]:
        changed = []
        for name, (t, version, ptr, grad) in self.tensors.items():
            if t._version == version and t.data_ptr() == ptr and t.requires_grad == grad:
                continue
            value = self.values[id(t)]
            with torch.no_grad():
                if t.data_ptr() != ptr or t.shape != value.shape:
                    t.data = value.clone()
                else:
                    t.copy_(value)
            t.requires_grad_(grad)
            changed.append(f"the parameters of `{self.label}` (`{name}`)")
        return changed


class _Model:
    """A shared model: its tensors' values as first seen, and a snapshot before each call."""

    def __init__(self, label: str, model: nn.Module):
        self.label, self.model, self.values = label, model, {}
        self.before()

    def before(self) -> None:
        self.modules = [
            _ModuleState(f"{self.label}.{name}" if name else self.label, module, self.values)
            for name, module in self.model.named_modules()
        ]

    def restore(self) -> list[str]:
        return [what for state in self.modules for what in state.restore()]


# --------------------------------------------------------------------------- a session
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
        self.models = [_Model(label, model) for label, model in shared]
        self.call_budget = CALL_BUDGET_S if call_budget is None else call_budget
        self.run_budget = RUN_BUDGET_S if run_budget is None else run_budget
        self.used = 0.0  # seconds spent inside the student's function
        self.calls = 0
        self.changes: list[str] = []
        self.printed = Printed()

    def share(self, label: str, model: nn.Module) -> None:
        """Also guard ``model`` (called ``label`` in messages) from here on."""
        self.models.append(_Model(label, model))

    def call(self, fn: Callable, *args, **kwargs):
        """``fn(*args, **kwargs)``, guarded; raises StudentRaised, OutOfTime, KeyboardInterrupt."""
        left = self.run_budget - self.used
        if left <= 0:
            raise OutOfTime(self.run_budget, whole=True)
        budget, whole = min(self.call_budget, left), left < self.call_budget
        saved = (_Attributes(LIBRARY_OWNERS, strict=True), _Attributes(TORCH_OWNERS, False))
        torch_state = _TorchState()
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


LIBRARY_OWNERS = [owner for owner, _ in LIBRARY.saved]
TORCH_OWNERS = list(_TORCH_OWNERS)
