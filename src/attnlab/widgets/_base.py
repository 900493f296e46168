"""What every attnlab widget shares: a message line, a picture, a stable text form.

Each widget is an ``ipywidgets.VBox``.  Its picture is a PNG in an ``ipywidgets.Image``
(drawn by :mod:`attnlab.pictures.canvas`), never a pyplot figure in an Output area, so that

* a live kernel updates it in a few milliseconds,
* a notebook saved without a kernel (nbconvert HTML, GitHub) still shows the last picture:
  ``_repr_mimebundle_`` adds it as ``image/png`` beside the widget view,
* nbval compares a fixed ``text/plain`` (no memory addresses, no timings).

Bad input never raises out of a widget: :meth:`BaseWidget.guard` turns the exception into a
short message shown inside the widget (``.message``), and the widget keeps working.
"""

from __future__ import annotations

import base64
import contextlib
import html
from collections.abc import Callable, Iterator

import ipywidgets as widgets
import torch

from attnlab import load
from attnlab.guard.sandbox import describe
from attnlab.pictures.typography import TYPE

__all__ = ["BaseWidget", "short", "load_model", "one_thread", "readable"]

#: Longest message shown to a student; longer ones are cut with an ellipsis.
MAX_MESSAGE = 160


def short(text: str, limit: int = MAX_MESSAGE) -> str:
    """One line of at most ``limit`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def readable(inner: str, px: float = TYPE.table) -> str:
    """HTML at the lecture's table size (a widget's HTML is 13 px by default: too small)."""
    return f'<div style="font-size:{px:g}px; line-height:1.35">{inner}</div>'


def load_model(name: str):
    """``attnlab.load(name)``: a shipped model (FileNotFoundError, CheckpointError)."""
    return load(name)


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one thread inside the block, then restore the setting.

    A widget decodes one short input (batch 1): a second thread brings nothing there, and
    on a busy two-core laptop waiting for it made decoding several times slower.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class BaseWidget(widgets.VBox):
    """A VBox with a message line (``.message``, ``.message_box``) and a current picture.

    Subclasses implement ``describe()`` (the fixed text/plain form) and ``png()`` (the
    picture now shown, as PNG bytes).
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._message = ""
        self.note = ""  # shown by guard() after the next action that succeeds
        # hidden while empty: an empty HTML line still takes ~30 px of a 720 px slide
        self.message_box = widgets.HTML(value="", layout={"display": "none"})

    # ------------------------------------------------------------------ messages
    @property
    def message(self) -> str:
        """The message now shown inside the widget ('' when all is well)."""
        return self._message

    def show_message(self, text: str) -> None:
        self._message = short(text) if text else ""
        shown = f'<span style="color:#b00020">{html.escape(self._message)}</span>'
        self.message_box.value = readable(shown) if self._message else ""
        self.message_box.layout.display = None if self._message else "none"

    def guard(self, action: Callable[[], object]) -> bool:
        """Run ``action``; on bad input show its message instead of raising.

        Returns True when the action succeeded (then ``self.note``, if set, is shown and
        cleared).  ValueError (attnlab.text.vocab.InvalidInput is one) carries a message written for
        students; anything else, any ``BaseException`` (a student's ``SystemExit`` included),
        is reported in one line, so that the slide never shows a traceback and nothing reaches
        ipykernel (which a ``SystemExit`` in a comm handler would end).  A KeyboardInterrupt
        (the kernel's stop button) stops the action and says so.
        """
        try:
            action()
        except ValueError as err:
            self.show_message(str(err) or "That input cannot be used.")
            return False
        except OSError as err:  # a missing model file
            self.show_message(f"Cannot load the model: {err}")
            return False
        except KeyboardInterrupt:
            self.show_message("Interrupted: the widget stopped and still shows what it showed.")
            return False
        except BaseException as err:  # noqa: BLE001 - the deck must never show a traceback
            self.show_message(f"Something went wrong: {describe(err)}")
            return False
        self.show_message(self.note)
        self.note = ""
        return True

    # ------------------------------------------------------------------ display
    def describe(self) -> str:  # pragma: no cover - every subclass overrides it
        return type(self).__name__

    def png(self) -> bytes:  # pragma: no cover - every subclass overrides it
        return b""

    def __repr__(self) -> str:
        return self.describe()

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs) or {}
        data["text/plain"] = self.describe()
        picture = self.png()
        if picture:  # what a viewer without a kernel (or without widgets) shows
            data["image/png"] = base64.b64encode(picture).decode("ascii")
        return data
