r"""The state a call of a student's function may not change, saved before it and put back after.

:class:`TorchState`: the default dtype, grad mode, the thread count, deterministic algorithms,
anomaly detection and the random state.  :class:`SharedModel`: the parameters, buffers,
sub-modules, code attributes and hooks of a model the student's function runs inside.  Each
``restore()`` puts back what changed and says what it was, for the message.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["TorchState", "SharedModel"]

_MISSING = object()


class TorchState:
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
