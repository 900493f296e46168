r"""The state a call of a student's function may not change, saved before it and put back after.

:class:`TorchState`: the default dtype and device, grad and inference mode, the thread count,
deterministic algorithms, anomaly detection, the float32 matmul precision, flushing denormal
numbers, torch's mode stacks, the global module hooks and the random state.
:class:`ProcessState` (from :mod:`attnlab.guard.process`): the interpreter's and the
process's settings.  :class:`SharedModel`: the parameters, buffers, sub-modules, code attributes
and hooks of a model the student's function runs inside; :func:`register_loaded` adds a model
to those every session guards (a shipped model loaded once and kept in memory), with the files
it was loaded from (:class:`LoadedModels`: a deleted file is named).  Each ``restore()`` puts
back what changed and says what it was, for the message.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

try:
    import resource
except ImportError:  # Windows
    resource = None

import torch
import torch.nn.modules.module as torch_module
from torch import Tensor, nn

from attnlab.files import CHECKPOINT_DIR
from attnlab.guard.process import ProcessState

__all__ = ["TorchState", "ProcessState", "SharedModel", "LoadedModels", "register_loaded"]

_MISSING = object()


#: torch's global module hooks (``register_module_forward_hook`` and its kin): dicts of
#: torch.nn.modules.module that every module's call reads.
_GLOBAL_HOOKS = tuple(
    name
    for name, value in vars(torch_module).items()
    if name.startswith("_global_") and isinstance(value, dict)
)

#: Guards that leave inference mode: kept for good (an ``inference_mode`` entered and never
#: left by a student's function is left by one of these; dropping it would enter it again).
_LEFT_INFERENCE: list[object] = []


def _device_context() -> object:
    return getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None)


def _stack(length, at) -> tuple:
    return tuple(at(i) for i in range(length()))


def _put_stack(saved: tuple, length, pop, push) -> None:
    while length():
        pop()
    for mode in saved:
        push(mode)


#: The smallest denormal double, made without arithmetic (which flushing would make 0).
_DENORMAL = struct.unpack("<d", b"\x01" + bytes(7))[0]


def _flushing_denormals() -> bool:
    """Whether this thread flushes denormal numbers to zero (``torch.set_flush_denormal``: the
    processor's setting, which Python's own arithmetic follows too; torch has no getter)."""
    return _DENORMAL * 3.0 == 0.0


class TorchState:
    """torch's global state (see the module docstring): saved, compared, put back."""

    def __init__(self):
        self.dtype = torch.get_default_dtype()
        self.storage = torch.Storage  # set with the default dtype
        self.device = _device_context()
        self.grad = torch.is_grad_enabled()
        self.inference = torch.is_inference_mode_enabled()
        self.threads = torch.get_num_threads()
        self.rng = torch.get_rng_state()
        self.deterministic = torch.are_deterministic_algorithms_enabled()
        self.anomaly = torch.is_anomaly_enabled()
        self.precision = torch.get_float32_matmul_precision()
        self.flush = _flushing_denormals()
        self.functions = _stack(torch._C._len_torch_function_stack, torch._C._get_function_stack_at)
        self.dispatch = _stack(torch._C._len_torch_dispatch_stack, torch._C._get_dispatch_stack_at)
        self.hooks = {name: dict(getattr(torch_module, name)) for name in _GLOBAL_HOOKS}
        self.full_backward = torch_module._global_is_full_backward_hook

    def restore(self) -> list[str]:
        changed = self._restore_modes()
        if torch.get_default_dtype() != self.dtype:
            changed.append(f"the default dtype (to {torch.get_default_dtype()})")
            torch.set_default_dtype(self.dtype)
        if torch.Storage is not self.storage:
            changed.append("`torch.Storage`")
            torch.Storage = self.storage
        if torch.is_inference_mode_enabled() != self.inference:
            changed.append("inference mode (`torch.inference_mode`)")
            guard = torch._C._InferenceMode(self.inference)
            guard.__enter__()
            _LEFT_INFERENCE.append(guard)
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
        if torch.get_float32_matmul_precision() != self.precision:
            changed.append("the float32 matmul precision (`torch.set_float32_matmul_precision`)")
            torch.set_float32_matmul_precision(self.precision)
        if _flushing_denormals() != self.flush:
            changed.append("flushing denormal numbers (`torch.set_flush_denormal`)")
            torch.set_flush_denormal(self.flush)
        changed += self._restore_hooks()
        torch.set_rng_state(self.rng)  # drawing random numbers is fine: no message
        return changed

    def _restore_modes(self) -> list[str]:
        """The default device and torch's mode stacks (a ``torch.device`` or a mode entered
        and never left): first, so that what follows runs as before the call."""
        changed = []
        if _device_context() is not self.device:
            changed.append(f"the default device (to {torch.get_default_device()})")
            torch.set_default_device(None)  # leaves the function's device context
            if self.device is not None:
                self.device.__enter__()
            torch._GLOBAL_DEVICE_CONTEXT.device_context = self.device
        C = torch._C
        if _stack(C._len_torch_function_stack, C._get_function_stack_at) != self.functions:
            changed.append(
                "torch's function modes (a `TorchFunctionMode` or `torch.device` left on)"
            )
            _put_stack(
                self.functions,
                C._len_torch_function_stack,
                C._pop_torch_function_stack,
                C._push_on_torch_function_stack,
            )
        if _stack(C._len_torch_dispatch_stack, C._get_dispatch_stack_at) != self.dispatch:
            changed.append("torch's dispatch modes (a `TorchDispatchMode` left on)")
            _put_stack(
                self.dispatch,
                C._len_torch_dispatch_stack,
                C._pop_torch_dispatch_stack,
                C._push_on_torch_dispatch_stack,
            )
        return changed

    def _restore_hooks(self) -> list[str]:
        changed = []
        for name, saved in self.hooks.items():
            now = getattr(torch_module, name)
            if not isinstance(now, dict):
                now = type(saved)()
                setattr(torch_module, name, now)
            if not _same(now, saved):
                now.clear()
                now.update(saved)
                changed.append(f"torch's global module hooks (`{name.strip('_')}`)")
        if torch_module._global_is_full_backward_hook is not self.full_backward:
            torch_module._global_is_full_backward_hook = self.full_backward
            changed.append("torch's global module hooks (`global_is_full_backward_hook`)")
        return changed


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(a[k] is b[k] for k in a)


def _watched(value: object) -> bool:
    """Instance attributes a call may not change: code (functions, modules) and the mode.

    Tensors, numbers and None are left alone: a module keeps the weights of its last call
    (``MultiHeadAttention.alpha``), which the library itself sets inside the student's call."""
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
            if (
                t.data_ptr() == ptr
                and t.requires_grad == grad
                and t.shape == value.shape
                and torch.equal(t.detach(), value)
            ):  # written again with the same values (put back by another session)
                self.tensors[name] = (t, t._version, ptr, grad)
                continue
            with torch.no_grad():
                if t.data_ptr() != ptr or t.shape != value.shape:
                    t.data = value.clone()
                else:
                    t.copy_(value)
            t.requires_grad_(grad)
            changed.append(f"the parameters of `{self.label}` (`{name}`)")
        return changed


class SharedModel:
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


#: The models loaded once and kept in memory for later checks, that every session guards:
#: model id -> its guard, made when it was registered (its values as then: as loaded).
_LOADED: dict[int, SharedModel] = {}


def register_loaded(label: str, model: nn.Module) -> None:
    """Guard ``model`` (a model kept in memory for later checks) in every session from now on."""
    if id(model) not in _LOADED:
        _LOADED[id(model)] = SharedModel(label, model)


def _listing(folder: Path) -> frozenset[str]:
    try:
        return frozenset(os.listdir(folder))
    except OSError:
        return frozenset()


class LoadedModels:
    """The registered models a session does not share, compared with their state as
    registered and put back after every call (no snapshot per call: nothing of the library
    changes a model it is not running); and the shipped checkpoints, whose deletion is named
    (it cannot be put back, but the models already loaded stay in use)."""

    def __init__(self):
        self.shared: set[int] = set()
        self.listing = _listing(CHECKPOINT_DIR)

    def forget(self, model: nn.Module) -> None:
        """The session shares ``model`` (its own snapshot before each call)."""
        self.shared.add(id(model))

    def before(self) -> None:
        self.listing = _listing(CHECKPOINT_DIR)

    def restore(self) -> list[str]:
        changed = []
        for key, guard in list(_LOADED.items()):
            if key in self.shared:
                continue
            if found := guard.restore():
                changed += found
                guard.before()  # as put back (its values as registered stay the reference)
        gone = sorted(self.listing - _listing(CHECKPOINT_DIR))
        if gone:
            changed.append(
                f"deleted {', '.join(f'`{name}`' for name in gone[:3])} from the shipped "
                "checkpoints (it cannot be put back; the models loaded stay in use in this "
                "kernel: restore the file from the course's files)"
            )
        return changed
