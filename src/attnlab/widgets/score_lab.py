r"""ScoreLab: four RNNSearch models, trained alike but for their score, read the same date.

alpha_{t,i} = softmax_i score(s_{t-1}, h_i) for

* dot:         score = s^T h_i
* scaled dot:  score = s^T h_i / sqrt(d)
* general:     score = s^T W_a h_i          (Luong)
* additive:    score = v^T tanh(W s + U h_i)  (Bahdanau)

Each panel is one trained model's alpha (output characters down, source characters across)
on the same date, titled with its held-out exact match (from its checkpoint card).  Choose
an example date (each is rendered when the widget is built, so the choice works in an
exported page without a kernel) or type your own (decoded by the kernel).
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from attnlab.decode import decode
from attnlab.plots import Heatmap, literal, png_bytes, slide_figure

from ._base import BaseWidget, load_model, one_thread, short

__all__ = ["ScoreLab", "SCORE_MODELS", "FORMULAS", "EXAMPLE_DATES"]

#: The four score models, by the lecture's name of their score.
SCORE_MODELS = {
    "dot": "rnnsearch-dates-dot",
    "scaled dot": "rnnsearch-dates-scaled",
    "general": "rnnsearch-dates-general",
    "additive": "rnnsearch-dates-additive",
}
FORMULAS = {
    "dot": "sᵀh_i",
    "scaled dot": "sᵀh_i / √d",
    "general": "sᵀW_a h_i",
    "additive": "vᵀtanh(Ws + Uh_i)",
}
EXAMPLE_DATES = ("3 May 1979", "14 July 1989", "1 January 2000", "12/05/2001", "21.08.1999")
WIDTH_PX, HEIGHT_PX = 1200, 350


def exact_match(model) -> float | None:
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
    * ``models`` (name -> model), ``decodings``: name -> the Decoding of the date shown;
      ``alphas``: name -> (T, n), ``translations``: name -> the output;
    * ``frames`` (Stack, one
      Image per date, linked to ``date`` in the browser), ``image``, ``message``.
    """

    def __init__(self, models: dict | None = None, dates=EXAMPLE_DATES):
        super().__init__()
        refs = dict(SCORE_MODELS if models is None else models)
        self.models = {name: load_model(m) if isinstance(m, str) else m for name, m in refs.items()}
        self.fig, self.sizes = slide_figure(WIDTH_PX, HEIGHT_PX, layout=None)
        self._draw_axes()
        self._decoded: dict[str, dict] = {}
        self.date = widgets.Dropdown(options=list(dates), description="date")
        self.text = widgets.Text(description="your date", continuous_update=False,
                                 placeholder="e.g. 24 Dec 1999, then Enter")  # fmt: skip
        self.frames = widgets.Stack([], selected_index=None)
        self._frame_layout = widgets.Layout(width=f"{WIDTH_PX}px")  # one for every frame
        self.links = [widgets.jslink((self.date, "index"), (self.frames, "selected_index"))]
        for text in dates:
            self.guard(lambda text=text: self._add(text))
        self.frames.selected_index = 0 if self.frames.children else None
        self.children = [
            widgets.HBox([self.date, self.text]),
            self.message_box,
            self.frames,  # the panel titles carry each score's formula and exact match
        ]
        self.date.observe(lambda _: self.guard(self._show), names="value")
        self.text.observe(lambda _: self.guard(self._typed), names="value")
        self._show()

    def _draw_axes(self) -> None:
        W, H = WIDTH_PX, HEIGHT_PX
        self.fig.subplots_adjust(left=50 / W, right=1 - 70 / W, top=1 - 58 / H, bottom=92 / H,
                                 wspace=0.12)  # fmt: skip
        axes = self.fig.subplots(1, len(self.models), squeeze=False)[0]
        self.panels = {}
        for k, (ax, name) in enumerate(zip(axes, self.models, strict=True)):
            heat = Heatmap(ax, colorbar=k == len(axes) - 1, xlabel="source", sizes=self.sizes,
                           ylabel="output" if k == 0 else "")  # fmt: skip
            heat.image.set_animated(False)  # a still picture per date
            self.panels[name] = heat
            match = exact_match(self.models[name])
            score = f"held-out exact match {100 * match:.1f}%" if match is not None else "no card"
            ax.set_title(f"{literal(name)}: {FORMULAS.get(name, '')}\n{score}",
                         fontsize=self.sizes.label)  # fmt: skip

    def _decode_all(self, text: str) -> dict:
        with one_thread():
            return {name: decode(model, text) for name, model in self.models.items()}

    def _render(self, decodings: dict) -> bytes:
        for name, d in decodings.items():  # each model writes its own output down its left side
            heat = self.panels[name]
            heat.set_labels(d.source_tokens, d.output_tokens, turn=True)  # narrow panels
            heat.set_data(d.alpha[0].mean(axis=0))  # (T, n): RNN models have L = h = 1
        return png_bytes(self.fig, draw=True, palette=True)

    def _add(self, text: str) -> None:
        """Decode ``text`` with every model and add its picture as a frame (InvalidInput)."""
        decodings = self._decode_all(text)
        self._decoded[text] = decodings
        picture = self._render(decodings)
        image = widgets.Image(value=picture, format="png", layout=self._frame_layout)
        self.frames.children = (*self.frames.children, image)

    def _typed(self) -> None:
        text = " ".join(str(self.text.value).split())
        if not text:
            return
        if text not in self._decoded:
            self._add(text)  # bad text: InvalidInput, nothing added
            self.date.options = [*self.date.options, text]
        self.date.value = text
        self.frames.selected_index = self.date.index  # the new frame (the link follows on)

    def _show(self) -> None:
        if not self._decoded:
            raise ValueError("None of the dates could be decoded.")
        self.decodings = self._decoded.get(self.date.value) or next(iter(self._decoded.values()))

    @property
    def alphas(self) -> dict[str, np.ndarray]:
        return {name: d.alpha[0, 0] for name, d in self.decodings.items()}

    @property
    def translations(self) -> dict[str, str]:
        return {name: d.text for name, d in self.decodings.items()}

    @property
    def image(self) -> widgets.Image:
        return self.frames.children[self.date.index]

    def describe(self) -> str:
        return f"ScoreLab: {', '.join(self.models)} on {short(str(self.date.value), 40)!r}"

    def png(self) -> bytes:
        return bytes(self.image.value)
