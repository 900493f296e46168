r"""What a student's function raised, said in one line: :class:`StudentRaised`, :func:`describe`,
:func:`where` (the line of the student's code), and :func:`kind_problem` (a returned tensor of
the wrong dtype or device)."""

from __future__ import annotations

import traceback
from pathlib import Path

import torch
from torch import Tensor

__all__ = ["StudentRaised", "describe", "where", "kind_problem"]


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
    """' (line N of `f`: `code`)' for the deepest frame in the student's code, or ''."""
    try:
        frames = traceback.extract_tb(error.__traceback__)
    except Exception:  # noqa: BLE001 - a strange traceback: say nothing
        return ""
    for frame in reversed(frames):
        if not str(Path(frame.filename).resolve()).startswith(_LIBRARY_DIRS):
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
