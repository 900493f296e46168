r"""What a graded function calls while it runs: the grading worker's watch.

Reading a cell's source (:mod:`attnlab.checks.source_rules`) names the plain ways to call the
library's implementation of the exercise's own equation; a name built from strings, a
reference fished out of a closure or a module's ``__dict__`` does not show in the source.
While the worker runs the student's function, :class:`Watch` is the thread's profile function
(``sys.setprofile``): a call into any code object of that equation (the library's, the
checks' reference, torch's fused version) is written down, however it was reached, and the
grader marks the exercise ✗ with what was called.  A function that turns the watch off is
written down too.

Only calls made while the student's function runs are watched, so the checks' own
references, computed before and after, are not counted; a copy of the library's code under
another code object is beyond any watch (and beyond any autograder's).
"""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Callable

import torch

from attnlab import attention
from attnlab.checks.exercises import reference
from attnlab.checks.source_rules import SAME_EQUATION
from attnlab.models import rnn, transformer

__all__ = ["Watch"]

_MODULES = (
    attention,
    rnn,
    transformer,
    torch.nn.functional,
    torch.nn.modules.activation,
    torch.nn.modules.transformer,
)
_TORCH_EXTRA = {  # torch's C entry points that the Python names above forward to
    "scaled_dot_product_attention": ("_C._nn.scaled_dot_product_attention",),
}


def _codes_of(value: object) -> set[types.CodeType]:
    """The code objects a callable runs: a function's, a class's methods'."""
    if isinstance(value, types.FunctionType):
        return {value.__code__}
    if isinstance(value, type):
        return {
            member.__code__
            for member in vars(value).values()
            if isinstance(member, types.FunctionType)
        }
    return set()


def _forbidden(exercise: str) -> tuple[set[types.CodeType], dict[int, str]]:
    """(Python code objects, {id: name} of C functions) implementing ``exercise``'s equation."""
    names = SAME_EQUATION.get(exercise, set())
    codes: set[types.CodeType] = set(_codes_of(reference(exercise)))
    builtins: dict[int, str] = {}
    for module in _MODULES:
        for name, value in vars(module).items():
            if name not in names:
                continue
            codes |= _codes_of(value)
            if inspect.isbuiltin(value) or type(value).__name__ == "builtin_function_or_method":
                builtins[id(value)] = f"{module.__name__}.{name}"
    for path in _TORCH_EXTRA.get(exercise, ()):
        value = torch
        for part in path.split("."):
            value = getattr(value, part, None)
        if value is not None:
            builtins[id(value)] = f"torch.{path}"
    return codes, builtins


class Watch:
    """The profile function that writes down the first forbidden call (``used``)."""

    def __init__(self, exercise: str):
        self.codes, self.builtins = _forbidden(exercise)
        self.names = {code: code.co_qualname for code in self.codes}
        self.used: str | None = None

    def __call__(self, frame, event: str, arg) -> None:
        if self.used is not None:
            return
        if event == "call" and frame.f_code in self.codes:
            code = frame.f_code
            self.used = f"`{code.co_qualname}` of `{frame.f_globals.get('__name__', '?')}`"
        elif event == "c_call" and id(arg) in self.builtins:
            self.used = f"`{self.builtins[id(arg)]}`"

    def watched(self, fn: Callable) -> Callable:
        """``fn`` run under the watch; turning the watch off inside it is written down."""

        def run(*args, **kwargs):
            before = sys.getprofile()
            sys.setprofile(self)
            try:
                return fn(*args, **kwargs)
            finally:
                if sys.getprofile() is not self and self.used is None:
                    self.used = "`sys.setprofile`"
                sys.setprofile(before)

        return run
