r"""ScoreLab: the four score functions on the same s_{t-1} and h_1..h_n, side by side.

alpha_{t,i} = softmax_i score(s_{t-1}, h_i) for

* dot:         score = s^T h_i
* scaled dot:  score = s^T h_i / sqrt(d)
* general:     score = s^T W_a h_i          (Luong)
* additive:    score = v^T tanh(W s + U h_i)  (Bahdanau)

The encoder states h_i are seeded random vectors, one per word; the decoder state s_{t-1} is
built to resemble one of them, h_j: s = scale * (mix * h_j + (1 - mix) * noise).  Sliders move
j, mix and scale.  The parameter-free scores (dot, scaled dot) find h_j by similarity as soon
as mix is large; the general and additive scores have random, untrained weights here (from
:mod:`attnlab.attention`, seeded), so what they prefer is arbitrary until training shapes
W_a, W, U and v: that is the point of learning the score.
"""

from __future__ import annotations

import html
import math

import ipywidgets as widgets
import numpy as np
import torch

from attnlab.attention import AdditiveScore, GeneralScore
from attnlab.plots import Heatmap, cache_background, new_figure, png_bytes, restore_background

from ._base import BaseWidget
from .scaled_dot import row_entropy, softmax_rows

__all__ = ["ScoreLab", "SCORE_LABELS", "BAHDANAU_SENTENCE"]

BAHDANAU_SENTENCE = "the agreement on the european economic area was signed in august 1992"
#: Row labels of the heatmap: the four scores with their formulas.
SCORE_LABELS = {
    "dot": r"dot $s^\top h_i$",
    "scaled_dot": r"scaled $s^\top h_i/\sqrt{d}$",
    "general": r"general $s^\top W_a h_i$",
    "additive": r"additive $v^\top\tanh(Ws+Uh_i)$",
}


class ScoreLab(BaseWidget):
    r"""The same s_{t-1} and h_1..h_n through the four scores; their alpha side by side.

    ``ScoreLab(sentence=BAHDANAU_SENTENCE, d=16, seed=0)``; every h_i has length sqrt(d).

    Attributes for code and tests:

    * ``target`` (IntSlider, 0..n-1): the j whose h_j the query s_{t-1} resembles;
      ``mix`` (FloatSlider 0..1): how much s looks like h_j; ``scale`` (FloatSlider): |s|;
    * ``tokens``; ``h`` (n, d) encoder states; ``s`` (d,) the decoder state s_{t-1};
    * ``scores``: name -> (n,) raw scores; ``alphas``: name -> (n,) weights;
      ``heatmap_data``: (4, n), one row per score in the order of ``SCORE_LABELS``;
    * ``modules``: name -> the attnlab.attention module for "general" and "additive"
      (their weights are what the numpy formulas here use);
    * ``readout`` (HTML), ``image`` (Image), ``message`` ('' when all is well).
    """

    def __init__(self, sentence: str = BAHDANAU_SENTENCE, d: int = 16, seed: int = 0):
        super().__init__()
        self.tokens = sentence.split() or ["(empty)"]
        n = len(self.tokens)
        gen = np.random.default_rng(seed)
        h = gen.standard_normal((n, d))
        self.h = h / np.linalg.norm(h, axis=1, keepdims=True) * math.sqrt(d)  # |h_i| = sqrt(d)
        noise = gen.standard_normal(d)  # the part of s_{t-1} unlike any h_i: (d,)
        self._noise = noise / np.linalg.norm(noise) * math.sqrt(d)
        torch.manual_seed(seed)
        self.modules = {"general": GeneralScore(d, d), "additive": AdditiveScore(d, d, d)}
        self.target = widgets.IntSlider(
            value=min(4, n - 1), min=0, max=n - 1, description="s like h_j, j"
        )
        self.mix = widgets.FloatSlider(value=0.7, min=0.0, max=1.0, step=0.05, description="mix")
        self.scale = widgets.FloatSlider(
            value=1.0, min=0.25, max=4.0, step=0.25, description="|s| scale"
        )
        self.readout = widgets.HTML()
        self.image = widgets.Image(format="png", layout=widgets.Layout(width="800px"))
        self.children = [
            widgets.HBox([self.target, self.mix, self.scale]),
            self.message_box,
            self.image,
            self.readout,
        ]
        self._build_figure()
        for control in (self.target, self.mix, self.scale):
            control.observe(self._on_change, names="value")
        self.update()

    def _build_figure(self) -> None:
        self.fig = new_figure(10.0, 3.2, dpi=80, layout="constrained")
        ax = self.fig.add_subplot()
        self.heatmap = Heatmap(
            ax,
            r"$\alpha_{t,i}$ = softmax$_i$ score($s_{t-1}$, $h_i$)",
            xlabel="source words (encoder states h_i)",
            ylabel="",
        )
        self.heatmap.set_labels(self.tokens, list(SCORE_LABELS.values()), mathtext=True)
        self._background = cache_background(self.fig)

    def _all_scores(self, s: np.ndarray) -> dict[str, np.ndarray]:
        """score(s, h_i) for the four scores, in numpy: (d,) -> name -> (n,)."""
        h, d = self.h, self.h.shape[1]
        general, additive = self.modules["general"], self.modules["additive"]
        W_a = general.W_a.detach().numpy().astype(float)  # (d, d)
        W = additive.W.weight.detach().numpy().astype(float)  # (d_attn, d)
        U = additive.U.weight.detach().numpy().astype(float)  # (d_attn, d)
        b = additive.U.bias.detach().numpy().astype(float)  # (d_attn,)
        v = additive.v.weight.detach().numpy().astype(float)[0]  # (d_attn,)
        return {
            "dot": h @ s,  # s^T h_i
            "scaled_dot": h @ s / math.sqrt(d),  # s^T h_i / sqrt(d)
            "general": h @ (W_a.T @ s),  # s^T W_a h_i
            "additive": np.tanh(W @ s + h @ U.T + b) @ v,  # v^T tanh(W s + U h_i)
        }

    def update(self) -> None:
        """Rebuild s_{t-1} from the sliders, score it against every h_i, redraw."""
        j = int(self.target.value)
        mix, scale = float(self.mix.value), float(self.scale.value)
        self.s = scale * (mix * self.h[j] + (1 - mix) * self._noise)  # s_{t-1}: (d,)
        self.scores = self._all_scores(self.s)
        self.alphas = {name: softmax_rows(e) for name, e in self.scores.items()}
        restore_background(self.fig, self._background)
        self.heatmap.set_data(self.heatmap_data, row=None)
        self.heatmap.blit()
        self.image.value = png_bytes(self.fig)
        self.readout.value = self._readout_html(j)

    @property
    def heatmap_data(self) -> np.ndarray:
        """(4, n): alpha of each score, rows in the order of SCORE_LABELS."""
        return np.stack([self.alphas[name] for name in SCORE_LABELS])

    def _readout_html(self, j: int) -> str:
        rows = []
        for name, alpha in self.alphas.items():
            best = int(alpha.argmax())
            mark = " ✓" if best == j else ""
            rows.append(
                f"<tr><td>{name}</td><td>{html.escape(self.tokens[best])}{mark}</td>"
                f"<td>{alpha.max():.2f}</td><td>{float(row_entropy(alpha)):.2f}</td></tr>"
            )
        return (
            f"<p>s<sub>t-1</sub> resembles h<sub>{j}</sub> "
            f"(&lsquo;{html.escape(self.tokens[j])}&rsquo;)</p><table><tr><th>score</th>"
            "<th>attends most to</th><th>largest α</th><th>entropy</th></tr>"
            f"{''.join(rows)}</table>"
            "<p><small>general and additive use random, untrained weights W_a, W, U, v: "
            "what they prefer means nothing until training shapes them.</small></p>"
        )

    def _on_change(self, change=None) -> None:
        self.guard(self.update)

    def describe(self) -> str:
        return (
            f"ScoreLab: s like h_{self.target.value} ({self.tokens[self.target.value]!r}), "
            f"mix={self.mix.value:.2f}, scale={self.scale.value:.2f}"
        )

    def png(self) -> bytes:
        return bytes(self.image.value)
