r"""What a student's function raised, said in one line: :class:`StudentRaised`, :func:`describe`,
:func:`where` (the line of the student's code); and what it returned: :func:`kind_problem` (a
returned tensor of the wrong dtype or device), :func:`not_plain` (a subclass of torch.Tensor,
whose own methods would run the student's code where no budget guards it)."""

from __future__ import annotations

import traceback
from pathlib import Path

import torch
from torch import Tensor

__all__ = ["StudentRaised", "describe", "where", "kind_problem", "not_plain"]


class StudentRaised(Exception):
    """What a student's function raised (``error``, any BaseException), as an Exception."""

    def __init__(self, error: BaseException):
        super().__init__(describe(error))
        self.error = error


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


#: The library's code, torch's and the standard library's: frames there are not the student's.
_LIBRARY_DIRS = tuple(
    str(Path(path).resolve().parent)
    for path in (torch.__file__, traceback.__file__, Path(__file__).resolve().parent)
)  # the folders of torch, of the standard library, and of attnlab (the parent of guard/)


def where(error: BaseException) -> str:
    """' (line N of `f`: `code`)' for the deepest frame in the student's code, or ''.

    An error that carries its own place (a str ``_attnlab_where``) is said there."""
    try:
        own = getattr(error, "_attnlab_where", None)
    except Exception:  # noqa: BLE001 - a strange exception: no place of its own
        own = None
    if isinstance(own, str):
        return own
    try:
        frames = traceback.extract_tb(error.__traceback__)
    except Exception:  # noqa: BLE001 - a strange traceback: say nothing
        return ""
    for frame in reversed(frames):
        if not str(Path(frame.filename).resolve()).startswith(_LIBRARY_DIRS):
            code = f": `{frame.line.strip()}`" if frame.line else ""
            return f" (line {frame.lineno} of `{frame.name}`{code})"
    return ""


#: torch.Tensor, and torch's own subclass whose ``__torch_function__`` is switched off.
_PLAIN_ENOUGH = (Tensor, torch.nn.Parameter)


def not_plain(value: object, who: str = "your function") -> str | None:
    """Why ``value`` (or an item of a tuple or list of it) cannot be read safely, or None:
    a subclass of torch.Tensor (its ``__torch_function__`` would run on every comparison,
    where it could loop or answer ``allclose`` with yes), or a tuple or list of our own
    kind that is a subclass.  Only ``type()`` is asked: no method of the value runs."""
    kind = type(value)
    if kind in (tuple, list):
        for item in value:
            if (problem := not_plain(item, who)) is not None:
                return problem
        return None
    if issubclass(kind, Tensor) and kind not in _PLAIN_ENOUGH:
        return f"{who} returned a {kind.__name__}, a subclass of torch.Tensor: return a plain torch.Tensor"
    if issubclass(kind, tuple | list):
        return f"{who} returned a {kind.__name__}: return a plain tuple"
    return None


def kind_problem(value: object, dtype: torch.dtype, device: torch.device, who: str) -> str | None:
    """Why the tensors in ``value`` cannot go on in a model of ``dtype`` on ``device``, or None
    (a subclass of torch.Tensor cannot: :func:`not_plain`)."""
    problem = not_plain(value, who)
    if problem is not None:
        return problem
    tensors = value if type(value) in (tuple, list) else (value,)
    for x in tensors:
        if type(x) is not Tensor:
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
