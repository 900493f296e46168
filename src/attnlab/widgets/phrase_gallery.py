r"""PhraseGallery: prepared phrases, each translated once, picked from a list.

``PhraseGallery(model, phrases)`` decodes every phrase of ``phrases`` (pairs of the English
and a note the room reads beside it, such as "held out" or "an honest failure") with the
model, greedily, and draws each decoding as one picture: alpha of the last decoder layer's
cross-attention, mean of its heads (rows: the output pieces y_t, columns: the source pieces),
the translation above it and, below it, whether the phrase was seen in training
(:mod:`attnlab.text.seen`).  The ``phrase`` Dropdown picks the picture in the browser
(:class:`attnlab.widgets._frames.FrameGrid`), so an exported page with no kernel offers
every prepared phrase too; a phrase of the room's own goes to the DecodeStepper.
"""

from __future__ import annotations

import warnings

import ipywidgets as widgets
import numpy as np

from attnlab.decode import decode
from attnlab.models.threads import torch_threads
from attnlab.pictures.frame_cache import rendered_all
from attnlab.pictures.heatmaps import tick_labels
from attnlab.text import seen
from attnlab.training import checkpoints

from ._base import BaseWidget, short
from ._frames import FrameGrid
from .decode_frames import DecodeFrames

__all__ = ["PhraseGallery"]


class PhraseGallery(BaseWidget):
    """One pre-rendered decoding per prepared phrase, chosen from a Dropdown.

    Attributes for code and tests: ``phrase`` (Dropdown; its ``index`` picks the frame),
    ``grid`` (the FrameGrid), ``frame`` (the chosen phrase's Frame: ``data`` holds ``text``,
    ``note``, ``translation``, ``seen`` (the :class:`attnlab.text.seen.Seen` line) and
    ``alpha`` (T, n)), ``translation``, ``image``.
    """

    def __init__(self, model: str, phrases: list[tuple[str, str]], lang: str | None = None):
        super().__init__()
        if not phrases or not all(isinstance(p, tuple) and len(p) == 2 for p in phrases):
            raise ValueError("phrases must be a non-empty list of (English, note) pairs")
        self.name = model
        self.model = checkpoints.load(model)
        lang = lang or model.rsplit("-", 1)[-1]
        try:
            index = seen.seen_index(lang)
        except seen.SeenUnavailable as err:
            index = err
        labels = [f"{text}  ({note})" for text, note in phrases]
        self.phrase = widgets.Dropdown(
            options=list(zip(labels, range(len(phrases)), strict=True)), value=0,
            description="phrase", layout={"width": "760px"},
            style={"description_width": "70px"},
        )  # fmt: skip
        self.grid = FrameGrid([(self.phrase, "index")], (len(phrases),), 0)
        self.links = self.grid.links
        with torch_threads(1):  # batch 1: one thread (attnlab.models.threads)
            for i, (text, note) in enumerate(phrases):
                self._draw(i, text, note, seen.verdict(index, text).line)
        self.grid.select((0,))
        self.children = [self.phrase, self.message_box, self.grid.root]

    def _draw(self, i: int, text: str, note: str, seen_line: str) -> None:
        d = decode(self.model, text)
        alpha = d.alpha[-1].mean(axis=0)  # the last layer, mean of heads: (T, n)
        pieces = d.level == "subword"
        source = tick_labels(d.source_tokens, pieces)
        output = tick_labels(d.output_tokens, pieces)
        translation = self.model.tgt_vocab.join(d.output_tokens) if pieces else d.text
        L, H = d.alpha.shape[:2]  # (L, h, T, n)
        title = f"{self.name} cross-attention, layer {L} (last), mean of {H} heads"
        T = len(output)
        # the phrase itself is in the menu and on the axis: the caption is what the model wrote
        captions = [""] * (T - 1) + [short(f"→ '{translation}'", 80)]
        lines = [""] * (T - 1) + [short(seen_line, 90)]
        drawn = [alpha, source, output, title, captions, lines]

        def draw() -> list[bytes]:
            with warnings.catch_warnings():  # a glyph the font lacks: a box, never a warning
                warnings.simplefilter("ignore", UserWarning)
                return DecodeFrames().frames(*drawn)[-1:]  # every row: the whole decoding

        (picture,) = rendered_all(
            "PhraseGallery", [drawn], draw, code=[__name__, DecodeFrames.__module__]
        )
        self.grid.set(
            (i,), picture, text=text, note=note, translation=translation, seen=seen_line,
            alpha=np.asarray(alpha),
        )  # fmt: skip

    # ------------------------------------------------------------------ readouts
    @property
    def frame(self):
        return self.grid.frame()

    @property
    def translation(self) -> str:
        return self.frame.data["translation"]

    @property
    def image(self) -> widgets.Image:
        return self.frame.view

    def png(self) -> bytes:
        return bytes(self.image.value)

    def text_form(self) -> str:
        data = self.frame.data
        return f"PhraseGallery({self.name}: '{data['text']}' -> '{data['translation']}')"
