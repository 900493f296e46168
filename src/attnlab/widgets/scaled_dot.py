r"""ScaledDotExplorer: why the Transformer divides QK^T by sqrt(d_k).

With q and k of d_k independent unit-variance entries, q.k has variance d_k: as d_k grows the
scores spread out, the softmax saturates (one weight near 1, the rest near 0) and its
gradients vanish.  Dividing by sqrt(d_k) brings the variance back to 1.  Three panels: QK^T,
QK^T/sqrt(d_k) and the softmax of whichever is used, with a d_k slider (1 to 512), the
scaling and the causal mask as toggles, and the numbers (spread of the scores, largest weight
per row, saturated rows) written into the picture, so they always match it.  "The slide's
point" sets d_k = 512 without scaling: rows saturate.  A second mode takes the real Q and K of
a head of the trained Transformer's encoder for a typed date.

The scores and weights are :func:`attnlab.attention.dot_score`, ``scaled_dot_score`` and
``masked_softmax`` (torch).  Every combination of slider and toggles is rendered when the
widget is built (a Stack of images, linked in the browser), so the controls work in an
exported page without a kernel; in a kernel an update only recomputes the numbers.
"""

from __future__ import annotations

import math

import ipywidgets as widgets
import numpy as np
import torch

from attnlab.attention import causal_mask, dot_score, masked_softmax, scaled_dot_score
from attnlab.plots import (
    Heatmap,
    cache_background,
    literal,
    png_bytes,
    restore_background,
    slide_figure,
)

from ._base import BaseWidget, load_model, one_thread
from ._frames import FrameGrid

__all__ = ["ScaledDotExplorer", "DEFAULT_SENTENCE", "D_K", "row_entropy"]

DEFAULT_SENTENCE = "the animal did not cross the street because it was too tired"
RANDOM, TRAINED = "random Q, K", "trained Transformer"
SCALED, UNSCALED = "divide by √d_k", "no scaling"
NO_MASK, CAUSAL = "every position", "causal mask"
#: The d_k the slider offers (each rendered once, for the exported page).
D_K = (1, 4, 16, 64, 256, 512)
#: Scores are drawn on a fixed colour range [-SCORE_RANGE, SCORE_RANGE]: large unscaled
#: scores saturate the colours just as they saturate the softmax.
SCORE_RANGE = 6.0
WIDTH_PX, HEIGHT_PX = 1000, 420
RANDOM_NOTE = "random mode: q_t and k_i are random N(0, 1) vectors; the words only label them"


def row_entropy(weights: np.ndarray) -> np.ndarray:
    """H_t = -sum_i alpha_{t,i} log alpha_{t,i} (nats; 0 log 0 = 0): (m, n) -> (m,)."""
    w = np.asarray(weights, dtype=float)
    logs = np.log(np.where(w > 0, w, 1.0))  # log 1 = 0 where alpha = 0
    return -(w * logs).sum(axis=-1)


def panels(Q: np.ndarray, K: np.ndarray, scaled: bool, causal: bool) -> dict[str, np.ndarray]:
    """QK^T, QK^T/sqrt(d_k) (masked cells NaN) and softmax of the one used, through torch."""
    q, k = torch.as_tensor(Q, dtype=torch.float64), torch.as_tensor(K, dtype=torch.float64)
    n = q.shape[0]
    mask = causal_mask(n) if causal else None  # (n, n), True = may attend
    raw = dot_score(q, k)  # QK^T: (n, n)
    scaled_scores = scaled_dot_score(q, k)  # QK^T / sqrt(d_k): (n, n)
    weights = masked_softmax(scaled_scores if scaled else raw, mask)  # rows sum to 1
    hide = np.zeros((n, n), bool) if mask is None else ~mask.numpy()
    return {
        "scores": np.where(hide, np.nan, raw.numpy()),
        "scaled_scores": np.where(hide, np.nan, scaled_scores.numpy()),
        "weights": weights.numpy(),
    }


def summary(values: dict[str, np.ndarray], d_k: int) -> str:
    """The numbers of a picture in one line (drawn into it, so they never lag behind)."""
    w = values["weights"]
    top = w.max(axis=1)
    std = float(np.nanstd(values["scores"]))
    return (
        f"d_k = {d_k}:  std of QKᵀ {std:.1f}, of QKᵀ/√d_k {std / math.sqrt(d_k):.1f};  "
        f"largest α per row: mean {top.mean():.2f};  rows with α > 0.99: "
        f"{int((top > 0.99).sum())} of {len(w)}"
    )


class ScaledDotExplorer(BaseWidget):
    r"""softmax(QK^T / sqrt(d_k)) live, for seeded random Q and K or a trained head.

    ``ScaledDotExplorer(sentence=DEFAULT_SENTENCE, seed=0, model="transformer-dates")``.
    Random mode: one query and one key per word, entries drawn N(0, 1) from ``seed`` (the
    first d_k of 512 columns, so moving the slider keeps the vectors); the words only label
    the rows and columns.

    Attributes for code and tests:

    * ``d_k_slider`` (SelectionSlider over :data:`D_K`), ``scale_toggle`` and
      ``mask_toggle`` (ToggleButtons), ``preset`` (Button: d_k = 512, no scaling), ``mode``
      (ToggleButtons RANDOM / TRAINED), ``text`` (the date of the trained mode, on Enter),
      ``head`` (Dropdown of (layer, head) for the trained mode);
    * ``scaled``, ``causal`` (bool), ``tokens``; ``Q``, ``K``: the (n, d_k) arrays in use;
    * ``scores`` = QK^T, ``scaled_scores`` = QK^T/sqrt(d_k) (masked cells NaN), ``weights``
      = the softmax shown (also ``heatmap_data``), ``row_max`` and ``row_entropy`` (m,);
    * ``readout`` (str: the line of numbers drawn into the picture for the current
      controls), ``frames`` (the FrameGrid),
      ``image`` (the Image now shown), ``message`` ('' when all is well).
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
        self._trained: tuple | None = None  # (Q, K, tokens) of the trained head in use
        self._trained_key: tuple | None = None  # (date, head) they were computed for
        self.mode = widgets.ToggleButtons(  # wide enough for the export's larger type
            options=[RANDOM, TRAINED], value=RANDOM, style={"button_width": "200px"}
        )
        d_ks = [d for d in D_K if d <= max_d_k]
        self.d_k_slider = widgets.SelectionSlider(options=d_ks, value=4, description="d_k")
        self.scale_toggle = widgets.ToggleButtons(options=[SCALED, UNSCALED], value=SCALED)
        self.mask_toggle = widgets.ToggleButtons(options=[NO_MASK, CAUSAL], value=NO_MASK)
        self.preset = widgets.Button(description="the slide's point: d_k = 512, unscaled",
                                     layout={"width": "390px"})  # fmt: skip
        self.text = widgets.Text(value="3 May 1979", description="date", continuous_update=False)
        self.head = widgets.Dropdown(options=[("layer 1, head 1", (0, 0))], description="head")
        self.trained_box = widgets.HBox([self.text, self.head], layout={"display": "none"})
        self.readout = ""
        self._build_figure()
        self._build_frames(len(d_ks))
        self.children = [
            widgets.HBox([self.mode, self.preset]),
            widgets.HBox([self.d_k_slider, self.scale_toggle, self.mask_toggle]),
            self.trained_box,
            self.message_box,
            self.frames,  # its numbers are drawn into the picture: no lagging readout
        ]
        for control in (self.d_k_slider, self.scale_toggle, self.mask_toggle):
            control.observe(self._on_change, names="value")
        self.text.observe(self._on_trained_input, names="value")
        self.head.observe(self._on_trained_input, names="value")
        self.mode.observe(self._on_mode, names="value")
        self.preset.on_click(lambda _: self.show_point())
        self.guard(self._load_trained)  # its frames too, for the exported page
        self.show_message("")  # a model that cannot load is said when the mode is chosen
        self._render_random()
        self.update()

    # ------------------------------------------------------------------ figure and frames
    def _build_figure(self) -> None:
        self.fig, sizes = slide_figure(WIDTH_PX, HEIGHT_PX, layout=None)
        W, H = WIDTH_PX, HEIGHT_PX
        self.fig.subplots_adjust(left=104 / W, right=1 - 40 / W, top=1 - 34 / H, bottom=152 / H,
                                 wspace=0.25)  # fmt: skip
        axes = self.fig.subplots(1, 3)
        labels = {"xlabel": "keys k_i", "sizes": sizes}
        # both score panels: a diverging map centred on 0 (one colorbar), masked scores grey
        scores = {"cmap": "RdBu_r", "vmin": -SCORE_RANGE, "vmax": SCORE_RANGE, "extend": "both"}
        self.panels = [
            Heatmap(axes[0], "QKᵀ", bad="0.85", colorbar=False, ylabel="queries q_t",
                    **scores, **labels),
            Heatmap(axes[1], "QKᵀ/√d_k", bad="0.85", ylabel="", **scores, **labels),
            Heatmap(axes[2], "", ylabel="", **labels),
        ]  # fmt: skip
        for ax in axes[1:]:
            ax.tick_params(labelleft=False)  # the rows are the same queries in every panel
        self.softmax_title = axes[2].text(
            0.5, 1.0, "", transform=axes[2].transAxes, ha="center", va="bottom",
            fontsize=sizes.title, animated=True,
        )  # fmt: skip
        self.caption = self.fig.text(8 / W, 30 / H, "", fontsize=sizes.caption, animated=True)
        self.note = self.fig.text(8 / W, 8 / H, "", fontsize=sizes.caption, color="0.3")
        self._layout: tuple = ()

    def _build_frames(self, n_d_k: int) -> None:
        """Frames: mode > scaling > mask > d_k (random); trained mode: scaling > mask."""
        self._random = FrameGrid(
            [(self.scale_toggle, "index"), (self.mask_toggle, "index"), (self.d_k_slider, "index")],
            (2, 2, n_d_k), WIDTH_PX,
        )  # fmt: skip
        self._trained_frames = FrameGrid(
            [(self.scale_toggle, "index"), (self.mask_toggle, "index")], (2, 2), WIDTH_PX
        )
        self.frames = widgets.Stack(
            [self._random.root, self._trained_frames.root], selected_index=0
        )
        self.links = [
            widgets.jslink((self.mode, "index"), (self.frames, "selected_index")),
            *self._random.links,
            *self._trained_frames.links,
        ]

    def _set_layout(self, tokens: list[str], trained: bool) -> None:
        """Redraw the static parts (tick labels, note) only when they change, and cache them."""
        if (tuple(tokens), trained) == self._layout:
            return
        for panel in self.panels:
            panel.set_labels(tokens, tokens)
        self.note.set_text("trained encoder head" if trained else RANDOM_NOTE)
        self._background = cache_background(self.fig)
        self._layout = (tuple(tokens), trained)

    def _picture(self, Q, K, tokens, scaled: bool, causal: bool, trained: bool) -> bytes:
        values = panels(Q, K, scaled, causal)
        self._set_layout(tokens, trained)
        restore_background(self.fig, self._background)
        for panel, key in zip(self.panels, ("scores", "scaled_scores", "weights"), strict=True):
            panel.set_data(values[key])
            panel.blit()
        used = "QKᵀ/√d_k" if scaled else "QKᵀ"
        self.softmax_title.set_text(f"softmax({used})" + (", causal" if causal else ""))
        self.caption.set_text(literal(summary(values, Q.shape[1])))
        for text in (self.softmax_title, self.caption):
            self.fig.draw_artist(text)
        return png_bytes(self.fig, palette=True)

    def _render_random(self) -> None:
        tokens = self._random_tokens
        for i, j, k in self._random.indices():
            d_k = self.d_k_slider.options[k]
            Q, K = self._Q_all[:, :d_k], self._K_all[:, :d_k]
            self._random.set((i, j, k), self._picture(Q, K, tokens, i == 0, j == 1, False))

    def _render_trained(self) -> None:
        Q, K, tokens = self._trained
        for i, j in self._trained_frames.indices():
            self._trained_frames.set((i, j), self._picture(Q, K, tokens, i == 0, j == 1, True))

    # ------------------------------------------------------------------ state
    @property
    def scaled(self) -> bool:
        return self.scale_toggle.value == SCALED

    @property
    def causal(self) -> bool:
        return self.mask_toggle.value == CAUSAL

    @property
    def model(self):
        """The trained Transformer (loaded on first use of the trained mode)."""
        if self._model is None:
            ref = self._model_ref
            model = load_model(ref) if isinstance(ref, str) else ref
            L, H = model.config.num_layers, model.config.num_heads
            self._model = model
            self.head.options = [
                (f"layer {i + 1}, head {j + 1}", (i, j)) for i in range(L) for j in range(H)
            ]
        return self._model

    def _load_trained(self) -> None:
        """Q, K of the chosen encoder head on the typed date; its four frames (once each)."""
        model = self.model
        key = (self.text.value, self.head.value)
        if key == self._trained_key:  # drawn already (at start-up, for the exported page)
            return
        tokens = model.source_tokens(self.text.value)  # raises InvalidInput on bad text
        layer, head = self.head.value
        with one_thread():
            Q, K = model.encoder_qk(self.text.value, layer, head)
        self._trained, self._trained_key = (Q, K, tokens), key
        self._render_trained()

    def update(self) -> None:
        """Recompute the numbers for the current controls (the frames are rendered already)."""
        if self.mode.value == TRAINED:
            Q, K, tokens = self._trained
        else:
            d_k = int(self.d_k_slider.value)
            Q, K, tokens = self._Q_all[:, :d_k], self._K_all[:, :d_k], self._random_tokens
        self.tokens, self.Q, self.K = list(tokens), Q, K  # (n, d_k) each
        values = panels(Q, K, self.scaled, self.causal)
        self.scores, self.scaled_scores = values["scores"], values["scaled_scores"]
        self.weights = values["weights"]
        self.row_max = self.weights.max(axis=1)
        self.row_entropy = row_entropy(self.weights)
        self.readout = summary(values, Q.shape[1])

    @property
    def heatmap_data(self) -> np.ndarray:
        """The softmax weights now shown (the third panel)."""
        return self.weights

    @property
    def image(self) -> widgets.Image:
        """The Image the browser shows for the current controls."""
        i, j = self.scale_toggle.index, self.mask_toggle.index
        if self.mode.value == TRAINED:
            return self._trained_frames.image((i, j))
        return self._random.image((i, j, self.d_k_slider.index))

    def show_point(self) -> None:
        """The slide's point: random Q, K at d_k = 512, unscaled: the rows saturate."""
        self.mode.value = RANDOM
        self.d_k_slider.value = self.d_k_slider.options[-1]
        self.scale_toggle.value = UNSCALED

    # ------------------------------------------------------------------ events
    def _on_change(self, change=None) -> None:
        self.guard(self.update)

    def _on_trained_input(self, change=None) -> None:
        if self.mode.value == TRAINED:
            self.guard(lambda: (self._load_trained(), self.update()))

    def _on_mode(self, change=None) -> None:
        trained = self.mode.value == TRAINED
        self.trained_box.layout.display = None if trained else "none"
        self.d_k_slider.disabled = trained  # a trained head has its own d_k
        if not trained:
            self.guard(self.update)
        elif not self.guard(lambda: (self._load_trained(), self.update())):
            message = self.message  # e.g. the model could not be loaded
            self.mode.value = RANDOM  # keep showing something meaningful
            self.show_message(message)

    def describe(self) -> str:
        if self.mode.value == TRAINED:
            return f"ScaledDotExplorer: trained Transformer on {self.text.value!r}"
        return (
            f"ScaledDotExplorer: d_k={self.d_k_slider.value}, "
            f"scaled={self.scaled}, causal={self.causal}"
        )

    def png(self) -> bytes:
        return bytes(self.image.value)
