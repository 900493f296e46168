r"""ScaledDotExplorer: why the Transformer divides QK^T by sqrt(d_k).

With q and k of d_k independent unit-variance entries, q.k has variance d_k: as d_k grows the
scores spread out, the softmax saturates (one weight near 1, the rest near 0) and its
gradients vanish.  Dividing by sqrt(d_k) brings the variance back to 1.  The widget shows
three panels, QK^T, QK^T/sqrt(d_k) and the softmax of whichever is used, with a d_k slider
(1 to 512), a toggle for the scaling and one for the causal mask, and a readout of each row's
largest weight and entropy.  A second mode takes the real Q and K of a head of the trained
Transformer's encoder for a typed date.
"""

from __future__ import annotations

import html
import math

import ipywidgets as widgets
import numpy as np

from attnlab.plots import Heatmap, cache_background, new_figure, png_bytes, restore_background

from ._base import BaseWidget, load_model, one_thread

__all__ = ["ScaledDotExplorer", "DEFAULT_SENTENCE", "softmax_rows", "row_entropy"]

DEFAULT_SENTENCE = "the animal did not cross the street because it was too tired"
RANDOM, TRAINED = "random Q, K", "trained Transformer"
#: Scores are drawn on a fixed colour range [-SCORE_RANGE, SCORE_RANGE]: large unscaled
#: scores saturate the colours just as they saturate the softmax.
SCORE_RANGE = 6.0


def softmax_rows(scores: np.ndarray, allowed: np.ndarray | None = None) -> np.ndarray:
    """alpha_{t,i} = exp(e_{t,i}) / sum_{i' allowed} exp(e_{t,i'}); forbidden cells get 0.

    The numpy twin of :func:`attnlab.attention.masked_softmax` (tests check they agree):
    these matrices are tiny, and numpy answers in microseconds where a tiny torch op can wait
    milliseconds for a busy second core.  scores (m, n), allowed bool (m, n) or None.
    """
    e = np.asarray(scores, dtype=float)
    if allowed is not None:
        e = np.where(allowed, e, -np.inf)  # forbidden -> exp(-inf) = 0
    row_max = e.max(axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)  # an all-forbidden row stays 0
    w = np.exp(e - row_max)  # subtract the row maximum: no overflow at d_k = 512
    return w / np.maximum(w.sum(axis=-1, keepdims=True), np.finfo(float).tiny)


def row_entropy(weights: np.ndarray) -> np.ndarray:
    """H_t = -sum_i alpha_{t,i} log alpha_{t,i} (nats; 0 log 0 = 0): (m, n) -> (m,)."""
    w = np.asarray(weights, dtype=float)
    logs = np.log(np.where(w > 0, w, 1.0))  # log 1 = 0 where alpha = 0
    return -(w * logs).sum(axis=-1)


class ScaledDotExplorer(BaseWidget):
    r"""softmax(QK^T / sqrt(d_k)) live, for seeded random Q and K or a trained head.

    ``ScaledDotExplorer(sentence=DEFAULT_SENTENCE, seed=0, model="transformer-dates")``.
    Random mode: one query and one key per word, entries drawn N(0, 1) from ``seed``
    (the first d_k of 512 columns, so moving the slider keeps the vectors).

    Attributes for code and tests:

    * ``d_k_slider`` (IntSlider 1..512), ``scale_toggle`` (Checkbox: divide by sqrt(d_k)),
      ``causal_toggle`` (Checkbox: causal mask), ``mode`` (ToggleButtons: "random Q, K" or
      "trained Transformer"), ``text`` (Text: the date for the trained mode, applied on
      Enter), ``layer`` and ``head`` (Dropdowns for the trained mode);
    * ``tokens``: the row/column labels; ``Q``, ``K``: the (n, d_k) arrays in use;
    * ``scores`` = QK^T, ``scaled_scores`` = QK^T/sqrt(d_k) (masked cells NaN), ``weights``
      = the softmax shown (also ``heatmap_data``), ``row_max`` and ``row_entropy`` (m,);
    * ``readout`` (HTML), ``image`` (Image), ``message`` ('' when all is well).
    """

    def __init__(
        self,
        sentence: str = DEFAULT_SENTENCE,
        seed: int = 0,
        model: str | object = "transformer-dates",
        max_d_k: int = 512,
    ):
        super().__init__()
        self._model_ref, self._model = model, None
        self._random_tokens = sentence.split() or ["(empty)"]
        gen = np.random.default_rng(seed)
        n = len(self._random_tokens)
        self._Q_all = gen.standard_normal((n, max_d_k))  # q_t, entries ~ N(0, 1): (n, 512)
        self._K_all = gen.standard_normal((n, max_d_k))  # k_i: (n, 512)
        self.mode = widgets.ToggleButtons(options=[RANDOM, TRAINED], value=RANDOM)
        self.d_k_slider = widgets.IntSlider(value=4, min=1, max=max_d_k, description="d_k")
        self.scale_toggle = widgets.Checkbox(value=True, description="divide by √d_k")
        self.causal_toggle = widgets.Checkbox(value=False, description="causal mask")
        self.text = widgets.Text(value="3 May 1979", description="date", continuous_update=False)
        self.layer = widgets.Dropdown(options=[0], value=0, description="layer")
        self.head = widgets.Dropdown(options=[0], value=0, description="head")
        self.trained_box = widgets.HBox([self.text, self.layer, self.head])
        self.trained_box.layout.display = "none"
        self.readout = widgets.HTML()
        self.image = widgets.Image(format="png", layout=widgets.Layout(width="900px"))
        self.children = [
            self.mode,
            widgets.HBox([self.d_k_slider, self.scale_toggle, self.causal_toggle]),
            self.trained_box,
            self.message_box,
            self.image,
            self.readout,
        ]
        self._build_figure()
        self.tokens: list[str] = []
        for control in (self.d_k_slider, self.scale_toggle, self.causal_toggle):
            control.observe(self._on_change, names="value")
        for control in (self.text, self.layer, self.head):
            control.observe(self._on_trained_change, names="value")
        self.mode.observe(self._on_mode, names="value")
        self.update()

    # ------------------------------------------------------------------ figure
    def _build_figure(self) -> None:
        self.fig = new_figure(12.0, 4.4, dpi=80, layout="constrained")
        axes = self.fig.subplots(1, 3)
        labels = {"xlabel": "keys k_i", "ylabel": "queries q_t"}
        # both score panels: a diverging map centred on 0, masked scores in grey
        scores = {"cmap": "RdBu_r", "vmin": -SCORE_RANGE, "vmax": SCORE_RANGE, "extend": "both"}
        self.panels = [
            Heatmap(axes[0], r"$QK^\top$", bad="0.85", **scores, **labels),
            Heatmap(axes[1], r"$QK^\top / \sqrt{d_k}$", bad="0.85", **scores, **labels),
            Heatmap(axes[2], "", **labels),
        ]
        self._layout: tuple = ()  # what the cached background shows: tokens and titles

    def _set_layout(self, tokens: list[str]) -> None:
        """Redraw the static parts (labels, titles) only when they change, and cache them."""
        used = r"$QK^\top/\sqrt{d_k}$" if self.scale_toggle.value else r"$QK^\top$"
        causal = ", causal mask" if self.causal_toggle.value else ""
        title = f"softmax({used}){causal}"
        layout = (tuple(tokens), title)
        if layout == self._layout:
            return
        self.tokens = list(tokens)
        for panel in self.panels:
            panel.set_labels(self.tokens, self.tokens)
        self.panels[2].ax.set_title(title, fontsize="medium")
        self._background = cache_background(self.fig)
        self._layout = layout

    # ------------------------------------------------------------------ state
    def _trained_qk(self) -> tuple[np.ndarray, np.ndarray, list[str]]:
        model = self.model
        tokens = model.source_tokens(self.text.value)  # raises InvalidInput on bad text
        with one_thread():
            Q, K = model.encoder_qk(self.text.value, int(self.layer.value), int(self.head.value))
        return Q, K, tokens

    @property
    def model(self):
        """The trained Transformer (loaded on first use of the trained mode)."""
        if self._model is None:
            ref = self._model_ref
            self._model = load_model(ref) if isinstance(ref, str) else ref
            cfg = self._model.config
            self.layer.options = list(range(cfg.num_layers))
            self.head.options = list(range(cfg.num_heads))
        return self._model

    def update(self) -> None:
        """Recompute the three panels for the current controls and redraw the picture."""
        if self.mode.value == TRAINED:
            Q, K, tokens = self._trained_qk()
            d_k = Q.shape[1]
        else:
            d_k = int(self.d_k_slider.value)
            Q, K, tokens = self._Q_all[:, :d_k], self._K_all[:, :d_k], self._random_tokens
        self._set_layout(tokens)
        self.Q, self.K = Q, K  # (n, d_k) each
        n = len(tokens)
        raw = Q @ K.T  # QK^T: (n, n)
        scaled = raw / math.sqrt(d_k)  # QK^T / sqrt(d_k): (n, n)
        used = scaled if self.scale_toggle.value else raw
        allowed = np.tril(np.ones((n, n), bool)) if self.causal_toggle.value else None
        weights = softmax_rows(used, allowed)  # alpha_{t,i}: (n, n), rows sum to 1
        hide = np.zeros((n, n), bool) if allowed is None else ~allowed
        self.scores = np.where(hide, np.nan, raw)
        self.scaled_scores = np.where(hide, np.nan, scaled)
        self.weights = weights
        self.row_max = weights.max(axis=1)
        self.row_entropy = row_entropy(weights)
        self._redraw(d_k)
        self.readout.value = self._readout_html(d_k)

    @property
    def heatmap_data(self) -> np.ndarray:
        """The softmax weights now shown (the third panel)."""
        return self.weights

    def _redraw(self, d_k: int) -> None:
        restore_background(self.fig, self._background)
        for panel, values in zip(
            self.panels, (self.scores, self.scaled_scores, self.weights), strict=True
        ):
            panel.set_data(values)
            panel.blit()
        self.image.value = png_bytes(self.fig)

    def _readout_html(self, d_k: int) -> str:
        n = len(self.tokens)
        rows = "".join(
            f"<tr><td>{html.escape(tok)}</td><td>{m:.3f}</td><td>{h:.2f}</td></tr>"
            for tok, m, h in zip(self.tokens, self.row_max, self.row_entropy, strict=True)
        )
        saturated = int((self.row_max > 0.99).sum())
        source = "a trained encoder head" if self.mode.value == TRAINED else "random, N(0, 1)"
        std = float(np.nanstd(self.scores))
        return (
            f"<p><b>d_k = {d_k}</b> (q and k: {source}); std of the entries of QK^T: "
            f"<b>{std:.1f}</b>, of QK^T/√d_k: <b>{std / math.sqrt(d_k):.1f}</b>.<br>"
            f"Largest weight per row: mean <b>{self.row_max.mean():.3f}</b>; entropy per "
            f"row: mean <b>{self.row_entropy.mean():.2f}</b> nats (uniform over all keys: "
            f"log n = {math.log(n):.2f}); rows with a weight above 0.99: <b>{saturated}</b> "
            f"of {n}.</p>"
            '<div style="max-height:160px;overflow:auto"><table>'
            "<tr><th>query</th><th>largest α</th><th>entropy</th></tr>"
            f"{rows}</table></div>"
        )

    # ------------------------------------------------------------------ events
    def _on_change(self, change=None) -> None:
        self.guard(self.update)

    def _on_trained_change(self, change=None) -> None:
        if self.mode.value == TRAINED:
            self.guard(self.update)

    def _on_mode(self, change=None) -> None:
        trained = self.mode.value == TRAINED
        self.trained_box.layout.display = None if trained else "none"
        self.d_k_slider.disabled = trained  # a trained head has its own d_k
        if not self.guard(self.update) and trained:
            message = self.message  # e.g. the model could not be loaded
            self.mode.value = RANDOM  # keep showing something meaningful
            self.show_message(message)

    def describe(self) -> str:
        if self.mode.value == TRAINED:
            return f"ScaledDotExplorer: trained Transformer on {self.text.value!r}"
        return (
            f"ScaledDotExplorer: d_k={self.d_k_slider.value}, "
            f"scaled={self.scale_toggle.value}, causal={self.causal_toggle.value}"
        )

    def png(self) -> bytes:
        return bytes(self.image.value)
