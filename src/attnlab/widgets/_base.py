"""What every attnlab widget shares: a message line, a picture, a stable text form.

Each widget is an ``ipywidgets.VBox``.  Its picture is a PNG in an ``ipywidgets.Image``
(drawn by :mod:`attnlab.pictures.canvas`), never a pyplot figure in an Output area, so that

* a live kernel updates it in a few milliseconds,
* a notebook saved without a kernel (nbconvert HTML, GitHub) still shows the last picture:
  ``_repr_mimebundle_`` adds it as ``image/png`` beside the widget view,
* nbval compares a fixed ``text/plain`` (no memory addresses, no timings).

Bad input never raises out of a widget: :meth:`BaseWidget.guard` turns the exception into a
short message shown inside the widget (``.message``), and the widget keeps working (a model
that cannot load included: its FileNotFoundError or CheckpointError is that message).

:class:`ModelWidget` is the one model chooser (DecodeStepper, HeadView): a Dropdown of the
installed shipped models (:mod:`attnlab.models.catalogue`) and the models given loaded, and
the text box, whose name and first text follow what the chosen model reads, and, for a
real-language model, the line that says whether the text shown was seen in training
(:mod:`attnlab.text.seen`: in the training split, a near-twin of a string there, or new).
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable

import ipywidgets as widgets

from attnlab.decode import check_text
from attnlab.guard.sandbox import describe
from attnlab.models import catalogue
from attnlab.text import seen
from attnlab.text.vocab import UNK
from attnlab.training import checkpoints

__all__ = ["BaseWidget", "ModelWidget", "TEXT_PX", "short", "readable", "unknown_words"]

#: The vocabulary levels of the real-language models: what they read is a phrase of words.
WORD_LEVELS = ("word", "subword")
#: Longest message shown to a student; longer ones are cut with an ellipsis.
MAX_MESSAGE = 160
#: The size (CSS px) of every text a widget shows beside its pictures: its HTML lines (the
#: message, the model, seen in training, readouts, tables) here, its controls in
#: notebooks/rise.css.  The controls are what the lecturer points at: larger than a picture's
#: smallest text (attnlab.pictures.typography.MIN_TEXT_PX).
TEXT_PX = 24.0


def short(text: str, limit: int = MAX_MESSAGE) -> str:
    """One line of at most ``limit`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def readable(inner: str, px: float = TEXT_PX) -> str:
    """HTML at the widgets' text size (a widget's HTML is 13 px by default: too small)."""
    return f'<div style="font-size:{px:g}px; line-height:1.35">{inner}</div>'


def unknown_words(model, text: str, source_tokens: list[str]) -> list[str]:
    """The words of ``text`` that ``model`` read as <unk> (word models; [] for characters)."""
    vocab = getattr(model, "src_vocab", None)
    if UNK not in source_tokens or getattr(vocab, "level", "char") != "word":
        return []
    return list(dict.fromkeys(w for w in vocab.tokens(text) if w not in vocab.stoi))


class BaseWidget(widgets.VBox):
    """A VBox with a message line (``.message``, ``.message_box``) and a current picture.

    Subclasses implement ``text_form()`` (the fixed text/plain form) and ``png()`` (the
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
    def text_form(self) -> str:  # pragma: no cover - every subclass overrides it
        return type(self).__name__

    def png(self) -> bytes:  # pragma: no cover - every subclass overrides it
        return b""

    def __repr__(self) -> str:
        return self.text_form()

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs) or {}
        data["text/plain"] = self.text_form()
        picture = self.png()
        if picture:  # what a viewer without a kernel (or without widgets) shows
            data["image/png"] = base64.b64encode(picture).decode("ascii")
        return data


class ModelWidget(BaseWidget):
    """A widget in which a trained model reads a text the room types: the one model chooser.

    ``model_chooser`` (Dropdown): the installed models of the catalogue that
    :attr:`offered` selects, with their labels, then the models given loaded (named by their
    card, else ``"<class> (given)"``).  ``text`` (Text, read on Enter): named and filled by
    what the chosen model reads (a date, digits, a phrase); choosing a model of another task
    replaces the example text of the old one with the new one's.  A model that cannot load,
    or that the widget cannot show, gives a message and the chooser goes back to the model in
    use.  Readouts: ``model``, ``unknown`` (the words read as <unk>), ``message``, ``seen``
    (:class:`attnlab.text.seen.Seen` of the text shown: seen in training, a near-twin, new, or
    unavailable when the shipped training strings cannot be read; None for a model of a
    generated task) and ``seen_box`` (its line, hidden when ``seen`` is None).

    A subclass calls :meth:`_choose` (the controls), builds its own, then :meth:`_start`; it
    implements ``_accept(name, model)`` (ValueError when it cannot show ``model``) and
    ``_show_text()`` (read ``text.value`` with ``model``, render, set ``unknown``; bad text
    raises attnlab.text.vocab.InvalidInput before anything changes).
    """

    #: The model shown when none is given: the lecture's model of a kind (the catalogue's).
    default_model = catalogue.lecture_model("rnnsearch")
    #: The catalogue's filter for the models the chooser offers.
    offered: dict = {"offered": True}
    chooser_width = "470px"  # the longest label at 22 px: "RNNSearch (additive score), dates"

    def _choose(self, model, text: object) -> str:
        """Build ``model_chooser`` and ``text`` for ``model`` (a name, a loaded model or None)
        and ``text`` (None: the example of what the model reads); returns the model's name."""
        self._models: dict[str, object] = {}
        self.model = None
        self.unknown: list[str] = []
        self.seen: seen.Seen | None = None
        self.seen_box = widgets.HTML(value="", layout={"display": "none"})
        name = self._register(model)
        self.model_chooser = widgets.Dropdown(
            options=self._options(name), value=name, description="model",
            layout={"width": self.chooser_width}, style={"description_width": "70px"},
        )  # fmt: skip
        reads = self._reads(name)
        text = reads.default if text is None else text
        self.text = widgets.Text(
            value=text if isinstance(text, str) else "",  # not text: the box starts empty
            description=reads.box, continuous_update=False, placeholder="type, then Enter",
            layout={"width": "490px"}, style={"description_width": "80px"},
        )  # fmt: skip
        return name

    def _start(self, name: str) -> None:
        """Observe the controls, then show ``name`` on the text (or why not)."""
        self.text.observe(self._on_text, names="value")
        self.model_chooser.observe(self._on_model, names="value")
        self._name: str | None = None  # the model whose reading is shown
        if self._show_model(name):
            self._name = name
        else:
            self._show_nothing()

    # ------------------------------------------------------------------ the models
    def _register(self, model) -> str:
        if model is None:
            return self.default_model
        if isinstance(model, str):
            return model
        card = getattr(model, "card", None) or {}
        name = str(card.get("name") or f"{type(model).__name__} (given)")
        self._models[name] = model
        return name

    def _options(self, name: str) -> list[tuple[str, str]]:
        """The installed models the catalogue offers here, the given ones, and ``name``."""
        try:
            installed = set(checkpoints.available())
        except OSError:
            installed = set()
        shipped = [m for m in catalogue.entries(**self.offered) if m.name in installed]
        options = [(m.label, m.name) for m in shipped]
        options += [(key, key) for key in self._models if key not in catalogue.names()]
        if name not in {key for _, key in options}:
            options.append((self._label(name), name))
        return options

    @staticmethod
    def _label(name: str) -> str:
        return catalogue.entry(name).label if name in catalogue.names() else name

    def _reads(self, name: str) -> catalogue.TaskText:
        """What the model ``name`` reads: its task's (catalogue, else its card), else a phrase
        for a word model and a date for any other."""
        model = self._models.get(name)
        task = catalogue.task_of(name, model)
        if task is not None:
            return catalogue.TASK_TEXTS[task]
        if getattr(getattr(model, "src_vocab", None), "level", "char") in WORD_LEVELS:
            return catalogue.TaskText("phrase", "", "a phrase")
        return catalogue.TASK_TEXTS["dates"]

    def _use(self, name: str) -> None:
        if name not in self._models:
            self._models[name] = checkpoints.load(name)  # FileNotFoundError/CheckpointError
        model = self._models[name]
        self._accept(name, model)
        self.model = model

    def _accept(self, name: str, model) -> None:  # pragma: no cover - every subclass overrides it
        pass

    def _show_text(self) -> None:  # pragma: no cover - every subclass overrides it
        pass

    def _checked_show_text(self) -> None:
        """:meth:`_show_text`, once the typed text is within the caps of every typed text
        (:func:`attnlab.decode.check_text`): refused before the model or a student's score
        runs, and before its characters reach a picture or the message line."""
        vocab = getattr(self.model, "src_vocab", None)
        check_text(self.text.value, getattr(vocab, "level", "char") in WORD_LEVELS)
        self._show_text()
        self._show_seen()

    def _language(self) -> str | None:
        """The language the model in use translates English into (its task's), else None."""
        task = catalogue.task_of(self.model_chooser.value, self.model)
        return None if task is None else catalogue.TASK_TEXTS[task].language

    def _show_seen(self) -> None:
        """Say whether the text shown is in the training split of the model's language (a
        real-language model; any other: no line).  The shipped training strings are read once
        per process; when they cannot be read, the line says so."""
        lang = self._language()
        if lang is None:
            self.seen = None
        else:
            try:
                index = seen.seen_index(lang)
            except seen.SeenUnavailable as err:
                index = err
            self.seen = seen.verdict(index, self.text.value)
        line = "" if self.seen is None else self.seen.line
        # said in the warning colour: a training string, one word from one, or holding the text
        colour = "#8a4b00" if getattr(self.seen, "string", None) else None
        style = f' style="color:{colour}"' if colour else ""
        self.seen_box.value = readable(f"<span{style}>{html.escape(line)}</span>") if line else ""
        self.seen_box.layout.display = None if line else "none"

    def _show_nothing(self) -> None:
        """What the widget shows when its first model could not be shown (its message)."""

    # ------------------------------------------------------------------ the controls
    def _show_model(self, name: str) -> bool:
        return self.guard(lambda: self._use(name)) and self._read()

    def _read(self) -> bool:
        """Show ``text.value``; words the model never saw are said in the message line."""
        if not self.guard(self._checked_show_text):
            return False
        if self.unknown:
            words = ", ".join(f"'{w}'" for w in self.unknown[:6])
            more = " …" if len(self.unknown) > 6 else ""
            self.show_message(f"Not in the model's vocabulary, read as {UNK}: {words}{more}")
        return True

    def _on_text(self, change=None) -> None:
        self._read()

    def _on_model(self, change) -> None:
        new, old = change["new"], self._name
        if old is not None and self._reads(new) != self._reads(old):
            if self.text.value == self._reads(old).default:
                self.text.unobserve(self._on_text, names="value")  # read once, below
                self.text.value = self._reads(new).default  # the example of the new task
                self.text.observe(self._on_text, names="value")
        self.text.description = self._reads(new).box
        if self._show_model(new):
            self._name = new
            return
        message = self.message  # could not load or show it: back to the model in use
        if old is not None and old != new:
            self.model_chooser.value = old
        self.show_message(message)
