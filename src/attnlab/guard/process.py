r"""The interpreter's and the process's settings a student's call may change in passing, saved
before it and put back after: :class:`ProcessState` (the recursion limit, trace and profile
functions, the SIGINT handler that the stop button needs, the signal mask, the resource limits,
the garbage collector, the thread switch interval, ``threading.excepthook``, ``sys.path`` and
``sys.meta_path``, torch's print options, numpy's error settings, the warnings filters,
``os.environ``, the working directory and the umask; an audit hook, ``sys.addaudithook``, cannot
be seen or removed from Python).  ``restore()`` puts back what changed and says what it was.
"""

from __future__ import annotations

import gc
import os
import random
import signal
import sys
import threading
import warnings

import torch._tensor_str as torch_str

try:
    import resource
except ImportError:  # Windows
    resource = None

__all__ = ["ProcessState"]


def _umask() -> int:
    mask = os.umask(0o077)  # the only way to read it; the stricter one for that moment
    os.umask(mask)
    return mask


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # it was deleted
        return None


def _signal_mask() -> frozenset | None:
    if not hasattr(signal, "pthread_sigmask"):
        return None
    return frozenset(signal.pthread_sigmask(signal.SIG_BLOCK, ()))


def _unblock_alarm(mask: frozenset) -> frozenset:
    """Unblock SIGALRM for the call (its budget rings with it), unless one is pending: it
    would ring now, in a handler not set for it."""
    if signal.SIGALRM in signal.sigpending():
        return mask
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGALRM,))
    return mask - {signal.SIGALRM}


def _drop_pending_alarm() -> None:
    while signal.SIGALRM in signal.sigpending():
        signal.sigtimedwait((signal.SIGALRM,), 0)


#: The resource limits a process can lower (``resource.setrlimit``): name and number.
_LIMITS = (
    tuple(
        (name, getattr(resource, name))
        for name in sorted(dir(resource))
        if name.startswith("RLIMIT_") and name != "RLIMIT_OFILE"  # the same as RLIMIT_NOFILE
    )
    if resource is not None
    else ()
)


def _limits() -> tuple:
    return tuple((name, number, resource.getrlimit(number)) for name, number in _LIMITS)


#: The fields of torch's print options (``torch.set_printoptions``).
_PRINT_FIELDS = tuple(vars(torch_str.PRINT_OPTS))


def _print_options() -> dict:
    return {name: getattr(torch_str.PRINT_OPTS, name, None) for name in _PRINT_FIELDS}


def _numpy_errors() -> dict | None:
    numpy = sys.modules.get("numpy")  # not imported here: a session does not load numpy
    return numpy.geterr() if numpy is not None else None


def _numpy_random() -> tuple | None:
    numpy = sys.modules.get("numpy")  # not imported here: a session does not load numpy
    return numpy.random.get_state() if numpy is not None else None


class ProcessState:
    """The interpreter's and process's settings of the module docstring: saved, put back."""

    def __init__(self):
        self.recursion = sys.getrecursionlimit()
        self.trace, self.profile = sys.gettrace(), sys.getprofile()
        self.thread_trace, self.thread_profile = threading.gettrace(), threading.getprofile()
        self.sigint = signal.getsignal(signal.SIGINT)
        self.numpy = _numpy_errors()
        self.filters = list(warnings.filters)
        self.environ = os.environ._data.copy()  # bytes: no decoding per call
        self.cwd = _cwd()
        self.umask = _umask()
        self.mask = self.during = _signal_mask()
        if self.mask and signal.SIGALRM in self.mask and self._main_thread():
            self.during = _unblock_alarm(self.mask)  # the budget rings during the call
        self.limits = _limits()
        self.gc = gc.isenabled(), gc.get_threshold()
        self.switch = sys.getswitchinterval()
        self.excepthook = threading.excepthook
        self.path, self.path_items = sys.path, tuple(sys.path)
        self.meta_path, self.meta_path_items = sys.meta_path, tuple(sys.meta_path)
        self.print_options = torch_str.PRINT_OPTS, _print_options()
        self.random = random.getstate(), _numpy_random()
        self.notes: list[str] = []  # what could not be put back, in sentences

    def restore(self) -> list[str]:
        changed = []
        if sys.getrecursionlimit() != self.recursion:
            changed.append("the recursion limit (`sys.setrecursionlimit`)")
            sys.setrecursionlimit(self.recursion)
        if sys.gettrace() is not self.trace:
            changed.append("the trace function (`sys.settrace`)")
            sys.settrace(self.trace)
        if sys.getprofile() is not self.profile:
            changed.append("the profile function (`sys.setprofile`)")
            sys.setprofile(self.profile)
        if threading.gettrace() is not self.thread_trace:
            changed.append("the threads' trace function (`threading.settrace`)")
            threading.settrace(self.thread_trace)
        if threading.getprofile() is not self.thread_profile:
            changed.append("the threads' profile function (`threading.setprofile`)")
            threading.setprofile(self.thread_profile)
        if signal.getsignal(signal.SIGINT) is not self.sigint and self._main_thread():
            changed.append("the SIGINT handler (the kernel's stop button)")
            signal.signal(signal.SIGINT, self.sigint)
        numpy = sys.modules.get("numpy")
        if numpy is not None and self.numpy is not None and numpy.geterr() != self.numpy:
            changed.append("numpy's error settings (`np.seterr`)")
            numpy.seterr(**self.numpy)
        if warnings.filters != self.filters:  # the filters are tuples: == compares their items
            changed.append("the warnings filters (`warnings.simplefilter`)")
            warnings.filters[:] = self.filters
            warnings._filters_mutated()
        changed += self._restore_interpreter() + self._restore_signals()
        random.setstate(self.random[0])  # drawing random numbers is fine: no message,
        numpy = sys.modules.get("numpy")  # but a seed set inside leaves no trace after
        if numpy is not None and self.random[1] is not None:
            numpy.random.set_state(self.random[1])
        return changed + self._restore_files() + self._restore_environ()

    def _restore_interpreter(self) -> list[str]:
        """The garbage collector, the thread switch interval, ``threading.excepthook``, the
        import paths and torch's print options."""
        changed = []
        if gc.isenabled() != self.gc[0]:
            changed.append("the garbage collector (`gc.disable`)")
            (gc.enable if self.gc[0] else gc.disable)()
        if gc.get_threshold() != self.gc[1]:
            changed.append("the garbage collector's thresholds (`gc.set_threshold`)")
            gc.set_threshold(*self.gc[1])
        if sys.getswitchinterval() != self.switch:
            changed.append("the thread switch interval (`sys.setswitchinterval`)")
            sys.setswitchinterval(self.switch)
        if threading.excepthook is not self.excepthook:
            changed.append("`threading.excepthook`")
            threading.excepthook = self.excepthook
        if sys.path is not self.path or tuple(sys.path) != self.path_items:
            changed.append("the import path (`sys.path`)")
            self.path[:] = self.path_items
            sys.path = self.path
        if sys.meta_path is not self.meta_path or tuple(sys.meta_path) != self.meta_path_items:
            changed.append("the import system's finders (`sys.meta_path`)")
            self.meta_path[:] = self.meta_path_items
            sys.meta_path = self.meta_path
        options, values = self.print_options
        if torch_str.PRINT_OPTS is not options or _print_options() != values:
            changed.append("torch's print options (`torch.set_printoptions`)")
            torch_str.PRINT_OPTS = options
            for name, value in values.items():
                setattr(options, name, value)
        return changed

    def _restore_signals(self) -> list[str]:
        """The signal mask (a blocked SIGALRM would switch later budgets' alarm off) and the
        resource limits (``resource.setrlimit``)."""
        changed = []
        mask = _signal_mask()
        if mask != self.during:
            changed.append("the signal mask (`signal.pthread_sigmask`)")
        if mask != self.mask:
            if signal.SIGALRM in mask and signal.SIGALRM not in self.mask:
                _drop_pending_alarm()  # the budget's, rung while blocked: it is over
            signal.pthread_sigmask(signal.SIG_SETMASK, self.mask)
        for name, number, saved in self.limits:
            now = resource.getrlimit(number)
            if now == saved:
                continue
            what = f"a resource limit (`resource.setrlimit`, `{name}`)"
            try:
                resource.setrlimit(number, saved)
                changed.append(what)
                continue
            except (ValueError, OSError):  # a lowered hard limit: only a privileged process
                pass  # can raise it
            soft, hard = saved[0], now[1]
            if hard != resource.RLIM_INFINITY and (soft == resource.RLIM_INFINITY or soft > hard):
                soft = hard  # as near as the hard limit allows
            try:
                resource.setrlimit(number, (soft, hard))
            except (ValueError, OSError):
                pass
            if resource.getrlimit(number)[0] == saved[0]:
                changed.append(what)
            self.notes.append(
                f"lowered the hard resource limit `{name}` (`resource.setrlimit`) to {hard}, "
                "which cannot be raised again in this kernel: restart the kernel "
                "(Kernel → Restart)"
            )
        return changed

    def _restore_files(self) -> list[str]:
        """The working directory and the umask: where and how files are written."""
        changed = []
        if self.cwd is not None and _cwd() != self.cwd:
            changed.append("the working directory (`os.chdir`)")
            try:
                os.chdir(self.cwd)
            except OSError:
                changed.append(
                    f"deleted the working directory `{self.cwd}` (it cannot be put back)"
                )
        if _umask() != self.umask:
            changed.append("the umask (`os.umask`)")
            os.umask(self.umask)
        return changed

    @staticmethod
    def _main_thread() -> bool:
        return threading.current_thread() is threading.main_thread()

    def _restore_environ(self) -> list[str]:
        now, saved = os.environ._data, self.environ
        if now == saved:
            return []
        keys = sorted(k for k in now.keys() | saved.keys() if now.get(k) != saved.get(k))
        decode = os.environ.decodekey
        for key in keys:
            if key in saved:
                os.environ[decode(key)] = os.environ.decodevalue(saved[key])
            else:
                del os.environ[decode(key)]
        named = ", ".join(f"`{decode(k)}`" for k in keys[:3]) + (" ..." if len(keys) > 3 else "")
        return [f"`os.environ` ({named})"]
