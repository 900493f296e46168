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

import html
import warnings

import ipywidgets as widgets
import numpy as np

from attnlab.decode import decode
from attnlab.models.threads import torch_threads
from attnlab.pictures.frame_cache import rendered_all
from attnlab.pictures.heatmaps import tick_labels
from attnlab.text import seen
from attnlab.training import checkpoints

from ._base import BaseWidget, readable
from ._frames import FrameGrid
from .decode_frames import DecodeFrames

__all__ = ["PhraseGallery", "phrase_words"]

#: The smallest picture's height (px): under the one row of controls it ends above 720 px.
HEIGHT_PX = 500


def phrase_words(text: str, translation: str, verdict: seen.Seen) -> str:
    """The column beside a phrase's picture (HTML at the widget's text size): the English,
    what the model wrote, and whether the phrase was seen in training (in the warning colour
    when it names a training string, as the DecodeStepper says it)."""
    esc = html.escape
    grey, gap = "color:#555555", "margin-top:12px"
    colour = "color:#8a4b00; " if verdict.string else ""
    return readable(
        f"<div style='{grey}'>English</div><div>'{esc(text)}'</div>"
        f"<div style='{grey}; {gap}'>the model writes</div>"
        f"<div><b>'{esc(translation)}'</b></div>"
        f"<div style='{colour}{gap}'>{esc(verdict.line)}</div>"
    )


class PhraseGallery(BaseWidget):
    """One pre-rendered decoding per prepared phrase, chosen from a Dropdown.

    Attributes for code and tests: ``phrase`` (Dropdown; its ``index`` picks the frame),
    ``grid`` (the FrameGrid), ``frame`` (the chosen phrase's Frame: ``data`` holds ``text``,
    ``note``, ``translation``, ``seen`` (the :class:`attnlab.text.seen.Seen` line) and
    ``alpha`` (T, n)), ``translation``, ``image``; ``words`` (the FrameGrid of the column
    beside the picture, HTML, picked by the same Dropdown), ``column``.
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
            description="phrase", layout={"width": "800px"},
            style={"description_width": "80px"},
        )  # fmt: skip
        self.grid = FrameGrid([(self.phrase, "index")], (len(phrases),), 0)
        self.grid.root.layout.flex = "0 0 auto"  # the picture at its own width, never squeezed
        self.words = FrameGrid([(self.phrase, "index")], (len(phrases),), 0, leaf=widgets.HTML)
        self.links = self.grid.links + self.words.links
        with torch_threads(1):  # batch 1: one thread (attnlab.models.threads)
            for i, (text, note) in enumerate(phrases):
                self._draw(i, text, note, seen.verdict(index, text))
        self.grid.select((0,))
        self.words.select((0,))
        # beside the picture, not under it: the slide is wide, and the column reads at 22 px
        self.column = widgets.VBox(
            [self.words.root],
            layout={"flex": "1 1 0", "min_width": "300px", "margin": "8px 0 0 18px"},
        )
        self.children = [
            self.phrase,
            self.message_box,
            widgets.HBox(
                [self.grid.root, self.column],
                layout={"align_items": "flex-start", "flex_flow": "row wrap"},
            ),
        ]

    def _draw(self, i: int, text: str, note: str, verdict: seen.Seen) -> None:
        d = decode(self.model, text)
        alpha = d.alpha[-1].mean(axis=0)  # the last layer, mean of heads: (T, n)
        pieces = d.level == "subword"
        source = tick_labels(d.source_tokens, pieces)
        output = tick_labels(d.output_tokens, pieces)
        translation = self.model.tgt_vocab.join(d.output_tokens) if pieces else d.text
        L, H = d.alpha.shape[:2]  # (L, h, T, n)
        title = f"{self.name} cross-attention, layer {L} (last), mean of {H} heads"
        drawn = [alpha, source, output, title]

        def draw() -> list[bytes]:
            with warnings.catch_warnings():  # a glyph the font lacks: a box, never a warning
                warnings.simplefilter("ignore", UserWarning)
                # every row: the whole decoding; taller than the stepper's (one row of controls)
                return DecodeFrames(height_px=HEIGHT_PX).frames(*drawn, box_last=False)[-1:]

        (picture,) = rendered_all(
            "PhraseGallery", [drawn], draw, code=[__name__, DecodeFrames.__module__]
        )
        self.grid.set(
            (i,), picture, text=text, note=note, translation=translation, seen=verdict.line,
            alpha=np.asarray(alpha),
        )  # fmt: skip
        self.words.set((i,), phrase_words(text, translation, verdict))

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
