r"""ScoreLab: four RNNSearch models, trained alike but for their score, read the same date.

alpha_{t,i} = softmax_i score(s_{t-1}, h_i) for

* dot:         score = s^T h_i
* scaled dot:  score = s^T h_i / sqrt(d)
* general:     score = s^T W_a h_i          (Luong)
* additive:    score = v^T tanh(W s + U h_i)  (Bahdanau)

Each panel is one trained model's alpha (output characters y_t down, source characters h_i
across, both 1-based) on the same date, titled with its score's formula and its held-out
exact match (from its checkpoint card); every character is labelled (the picture grows, or goes two by two, when a
long date needs the room).  Choose an example date (each is rendered when the widget is
built, so the choice works in an exported page without a kernel) or type your own (decoded by
the kernel and added).  One frame per date in a :class:`attnlab.widgets._frames.FrameGrid`:
the readouts (``decodings``, ``alphas``, ``translations``) are the frame's.
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from attnlab.decode import decode
from attnlab.models import catalogue
from attnlab.models.threads import torch_threads
from attnlab.pictures.canvas import png_bytes, slide_figure
from attnlab.pictures.frame_cache import rendered
from attnlab.pictures.heatmaps import Heatmap, heatmap_room
from attnlab.pictures.typography import TYPE, literal
from attnlab.training.checkpoints import load

from ._base import BaseWidget, short
from ._frames import FrameGrid

__all__ = ["ScoreLab", "SCORE_MODELS", "FORMULAS", "EXAMPLE_DATES"]

#: The four score models (:mod:`attnlab.models.catalogue`), by their score (a key of
#: :data:`attnlab.attention.SCORES`).
SCORE_MODELS = {m.score: m.name for m in catalogue.entries() if m.score is not None}
FORMULAS = {
    "dot": "sᵀhᵢ",
    "scaled_dot": "sᵀhᵢ / √d",
    "general": "sᵀWₐhᵢ",
    "additive": "vᵀtanh(Ws + Uhᵢ)",
}
EXAMPLE_DATES = ("3 May 1979", "14 July 1989", "1 Jan 2000", "12/05/2001", "21.08.1999")
WIDTH_PX, HEIGHT_PX = 1205, 350  # the widest picture; the height grows with a long date


def said(score: str) -> str:
    """A score's key as the panels and the text form say it: "scaled_dot" -> "scaled dot"."""
    return score.replace("_", " ")


def recorded_exact_match(model) -> float | None:
    """The held-out exact match its checkpoint card records (None if it has none)."""
    card = getattr(model, "card", None) or {}
    value = card.get("heldout_accuracy")
    return float(value) if isinstance(value, (int, float)) else None


class ScoreLab(BaseWidget):
    r"""The four score models' alpha on the same date, side by side, with their exact match.

    ``ScoreLab(models=SCORE_MODELS, dates=EXAMPLE_DATES)``: ``models`` maps a score's name
    to a shipped model's name or a loaded model.

    Attributes for code and tests:

    * ``date`` (Dropdown of the example dates, then the typed ones), ``text`` (Text: type a
      date, decoded on Enter and added to ``date``);
    * ``models`` (name -> model), ``grid`` (FrameGrid, one frame per date, linked to
      ``date`` in the browser), ``frames`` (its Stack), ``frame`` (the date's Frame);
    * from the frame: ``decodings`` (name -> the Decoding of the date shown), ``titles``
      (the panel titles drawn), ``fig`` and ``panels`` (name -> Heatmap) of its picture,
      ``alphas``
      (name -> (T, n)), ``translations`` (name -> the output); ``image``, ``message``.
    """

    def __init__(self, models: dict | None = None, dates=EXAMPLE_DATES):
        super().__init__()
        refs = dict(SCORE_MODELS if models is None else models)
        self.models = {name: load(m) if isinstance(m, str) else m for name, m in refs.items()}
        self.date = widgets.Dropdown(options=[], description="date", layout={"width": "280px"},
                                     style={"description_width": "60px"})  # fmt: skip
        self.text = widgets.Text(description="your date", continuous_update=False,
                                 placeholder="e.g. 24 Dec 1999, then Enter",
                                 layout={"width": "480px"},
                                 style={"description_width": "110px"})  # fmt: skip
        self.grid = FrameGrid([(self.date, "index")], (1,), WIDTH_PX)
        self.frames, self.links = self.grid.root, self.grid.links
        for text in dates:
            self.guard(lambda text=text: self._add(text))
        if self.date.options:
            self.date.index = 0  # the first date, shown and chosen
        self.grid.select((0,))
        self.children = [
            widgets.HBox([self.date, self.text]),
            self.message_box,
            self.frames,  # the panel titles carry each score's formula and exact match
        ]
        self.date.observe(lambda _: self.guard(self._show), names="value")
        self.text.observe(lambda _: self.guard(self._typed), names="value")
        self._show()

    def _figure(self, decodings: dict):
        """A figure with one panel per model, each large enough for all its labels."""
        tick = TYPE.tick
        n_out = max(max(len(d.output_tokens) for d in decodings.values()), 1)
        sample = next(iter(decodings.values()))
        need_w, need_h = heatmap_room(sample.source_tokens, ["y"] * n_out, tick)
        k = len(decodings)
        left, right, gap = 58, 65, 24
        bar = 1 / (1 - 0.046 - 0.03)  # the colorbar takes that share of its panel (Heatmap)
        cols = next(c for c in (k, 2, 1)
                    if left + right + (c - 1 + bar) * need_w + (c - 1) * gap <= WIDTH_PX
                    or c == 1)  # fmt: skip
        rows = -(-k // cols)
        title_px, labels_px = 2 * 1.5 * TYPE.label + 8, 1.4 * TYPE.label + 3.2 * tick + 10
        panel_h = max(need_h * 1.02, 120)
        height = rows * (title_px + panel_h + labels_px) + 16
        fig, sizes = slide_figure(WIDTH_PX, max(height, HEIGHT_PX if rows == 1 else 0), layout=None)
        H = fig.get_figheight() * fig.dpi
        fig.subplots_adjust(left=left / WIDTH_PX, right=1 - right / WIDTH_PX,
                            top=1 - title_px / H, bottom=labels_px / H,
                            wspace=gap * cols / ((cols - 1 + bar) * need_w),
                            hspace=(title_px + labels_px) / panel_h)  # fmt: skip
        ratios = [1.0] * (cols - 1) + [bar]  # the last column carries the colorbar
        axes = fig.subplots(rows, cols, squeeze=False, width_ratios=ratios).ravel()
        for ax in axes[k:]:
            ax.set_axis_off()
        return fig, sizes, axes[:k], cols

    def _titles(self, decodings: dict) -> list[str]:
        """Each panel's title: its score's formula, its name and its recorded exact match."""
        titles = []
        for name in decodings:
            match = recorded_exact_match(self.models[name])
            score = f"{100 * match:.1f}% exact" if match is not None else "no card"
            titles.append(f"{FORMULAS.get(name, '')}\n{literal(said(name))}: {score}")
        return titles

    def _picture(self, decodings: dict) -> tuple[bytes, dict]:
        """The PNG of one date, and what it drew: ``fig`` and ``panels`` (name -> Heatmap)."""
        fig, sizes, axes, cols = self._figure(decodings)
        panels = {}
        titles = self._titles(decodings)
        for k, (ax, (name, d)) in enumerate(zip(axes, decodings.items(), strict=True)):
            heat = Heatmap(ax, colorbar=k % cols == cols - 1, xlabel="source", sizes=sizes,
                           ylabel="output" if k % cols == 0 else "")  # fmt: skip
            heat.image.set_animated(False)  # a still picture per date
            heat.set_labels(d.source_tokens, d.output_tokens)
            heat.set_data(d.alpha[0].mean(axis=0))  # (T, n): RNN models have L = h = 1
            panels[name] = heat
            ax.set_title(titles[k], fontsize=sizes.label)
        return png_bytes(fig, draw=True, palette=True), {"fig": fig, "panels": panels}

    def _png(self, decodings: dict, titles: list[str]) -> bytes:
        """The picture of one date: read from the shipped frames when they hold it
        (:mod:`attnlab.pictures.frame_cache`: keyed by what it draws), else drawn."""
        drawn = [(name, d.source_tokens, d.output_tokens, d.alpha[0].mean(axis=0))
                 for name, d in decodings.items()]  # fmt: skip
        return rendered("ScoreLab", [drawn, titles], lambda: self._picture(decodings)[0],
                        code=[__name__])  # fmt: skip

    def _decode_all(self, text: str) -> dict:
        with torch_threads(1):  # batch 1: a second thread brings nothing (attnlab.models.threads)
            return {name: decode(model, text) for name, model in self.models.items()}

    def _add(self, text: str) -> None:
        """Decode ``text`` with every model and add its picture as a frame (InvalidInput)."""
        decodings = self._decode_all(text)
        titles = self._titles(decodings)
        picture = self._png(decodings, titles)
        n = len(self.date.options)
        self.grid.resize(n + 1)
        self.grid.set((n,), picture, text=text, decodings=decodings, titles=titles)
        with self.hold_trait_notifications():
            self.date.options = [*self.date.options, text]

    def _typed(self) -> None:
        text = " ".join(str(self.text.value).split())
        if not text:
            raise ValueError("The box is empty: type a date, then Enter.")
        if text not in self.date.options:
            self._add(text)  # bad text: InvalidInput, nothing added
        self.date.value = text
        self.grid.select()  # the new frame (the link follows on)

    def _show(self) -> None:
        if not self.date.options:
            raise ValueError("None of the dates could be decoded.")

    @property
    def frame(self):
        """The Frame of the date the dropdown selects."""
        return self.grid.frame()

    def _drawn(self) -> dict:
        """The figure of the date shown, drawn when first asked for (the frame's PNG may
        have been read from the shipped frames: no figure is kept for it)."""
        data = self.frame.data
        if "fig" not in data:
            data.update(self._picture(data["decodings"])[1])
        return data

    @property
    def fig(self):
        """The figure of the date shown (its text sizes: ``typography.text_sizes``)."""
        return self._drawn()["fig"]

    @property
    def panels(self) -> dict:
        """name -> the Heatmap of that model in the picture shown."""
        return dict(self._drawn()["panels"])

    @property
    def decodings(self) -> dict:
        return dict(self.frame.data["decodings"])

    @property
    def alphas(self) -> dict[str, np.ndarray]:
        return {name: d.alpha[0, 0] for name, d in self.decodings.items()}

    @property
    def translations(self) -> dict[str, str]:
        return {name: d.text for name, d in self.decodings.items()}

    @property
    def image(self) -> widgets.Image:
        return self.grid.image()

    def text_form(self) -> str:
        names = ", ".join(said(name) for name in self.models)
        return f"ScoreLab: {names} on {short(str(self.date.value), 40)!r}"

    def png(self) -> bytes:
        return bytes(self.image.value)
