r"""ScaledDotExplorer: why the Transformer divides QK^T by sqrt(d_k).

With q and k of d_k independent unit-variance entries, q.k has variance d_k: as d_k grows the
scores spread out, the softmax saturates (one weight near 1, the rest near 0) and its
gradients vanish.  Dividing by sqrt(d_k) brings the variance back to 1.  Three panels: QK^T,
QK^T/sqrt(d_k) and the softmax of whichever is used, with a d_k slider (1 to 512), the
scaling and the causal mask as toggles, and the numbers (spread of the scores, largest weight
per row, saturated rows) written into the picture.  It opens on the slide's point: d_k = 512
without scaling, where the rows saturate; one click on "divide by √d_k" brings them back.

Random mode draws n query and key vectors q_1..q_n, k_1..k_n with N(0, 1) entries: they are
labelled by their position only (no words: nothing to read into noise).  The trained mode takes
the real Q and K of a head of the trained Transformer's encoder for a typed date, labelled by
its tokens; an encoder head is never masked, so there the mask toggle changes only the note,
which says so.

The scores and weights are :func:`attnlab.attention.dot_score`, ``scaled_dot_score`` and
``masked_softmax`` (torch).  Every combination of mode, toggles and slider is rendered when
the widget is built into one :class:`attnlab.widgets._frames.FrameGrid` (linked in the
browser), so the controls work in an exported page without a kernel; every readout (scores,
weights, the line of numbers) is the data of the frame the controls select.
"""

from __future__ import annotations

import math

import ipywidgets as widgets
import numpy as np
import torch

from attnlab.attention import causal_mask, dot_score, masked_softmax, scaled_dot_score
from attnlab.models.threads import torch_threads
from attnlab.pictures.canvas import cache_background, png_bytes, restore_background, slide_figure
from attnlab.pictures.frame_cache import rendered
from attnlab.pictures.heatmaps import Heatmap
from attnlab.pictures.typography import TYPE, literal
from attnlab.training.checkpoints import load

from ._base import TEXT_PX, BaseWidget
from ._frames import FrameGrid

__all__ = [
    "ScaledDotExplorer",
    "D_K_CHOICES",
    "DEFAULT_D_K",
    "row_entropy",
    "random_labels",
    "trained_note",
    "ENCODER_UNMASKED",
]

RANDOM, TRAINED = "random Q, K", "trained Transformer"
SCALED, UNSCALED = "divide by √d_k", "no scaling"
NO_MASK, CAUSAL = "every position", "causal mask"
#: The d_k the slider offers (each rendered once, for the exported page).
D_K_CHOICES = (1, 4, 16, 64, 256, 512)
#: The d_k it opens at: large, where the unscaled softmax saturates (the slide's point).
DEFAULT_D_K = 512
N_RANDOM = 8  # random queries and keys
#: Scores are drawn on a fixed colour range [-SCORE_RANGE, SCORE_RANGE]: large unscaled
#: scores saturate the colours just as they saturate the softmax.
SCORE_RANGE = 6.0
WIDTH_PX, HEIGHT_PX = 1150, 490  # its right edge left of the slideshow's arrows
RANDOM_NOTE = "random q_t, k_i: N(0, 1) entries; t, i: positions"


def trained_note(d_k: int) -> str:
    """The note under a trained head's picture: its own d_k, and that an encoder is unmasked."""
    return f"trained head: its own d_k = {d_k}; encoders are unmasked"


#: The note of a trained head's picture with the toggle on "causal mask": not applied.
ENCODER_UNMASKED = "no causal mask: an encoder head sees every position"


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
    return (  # two lines: at the readout size one would not fit the picture
        f"d_k = {d_k}:  std(QKᵀ) {std:.1f},  std(QKᵀ/√d_k) {std / math.sqrt(d_k):.1f}\n"
        f"mean largest α {top.mean():.2f};  α > 0.99 in {int((top > 0.99).sum())} of {len(w)} rows"
    )


def random_labels(n: int) -> tuple[list[str], list[str]]:
    """Keys k1..kn and queries q1..qn: random vectors are named by their position only."""
    return [f"k{i + 1}" for i in range(n)], [f"q{t + 1}" for t in range(n)]


def _readout(name: str) -> property:
    """A read-only attribute: ``name`` in the data of the frame the controls select."""
    return property(lambda self: self.grid.frame().data[name], doc=f"{name} of the frame shown")


class ScaledDotExplorer(BaseWidget):
    r"""softmax(QK^T / sqrt(d_k)) live, for seeded random Q and K or a trained head.

    ``ScaledDotExplorer(n=8, seed=0, model="transformer-dates")``.  Random mode: n queries and
    n keys, entries drawn N(0, 1) from ``seed`` (the first d_k of 512 columns, so moving the
    slider keeps the vectors), labelled q1..qn and k1..kn.

    Attributes for code and tests:

    * ``d_k_slider`` (SelectionSlider over :data:`D_K_CHOICES`, at :data:`DEFAULT_D_K`),
      ``scale_toggle`` and ``mask_toggle`` (ToggleButtons), ``preset`` (Button: d_k = 512, no
      scaling), ``mode`` (ToggleButtons RANDOM / TRAINED), ``text`` (the date of the trained
      mode, on Enter), ``head`` (Dropdown of (layer, head) for the trained mode);
    * ``grid`` (the FrameGrid: mode > scaling > mask > d_k; the trained frames share one
      picture over d_k), ``frames`` (its root Stack), ``links``;
    * read from the frame the controls select (``grid.frame().data``): ``tokens`` (keys),
      ``queries``, ``Q``, ``K`` (n, d_k), ``scores`` = QK^T, ``scaled_scores`` =
      QK^T/sqrt(d_k) (masked cells NaN), ``weights`` = the softmax shown (``heatmap_data``),
      ``row_max`` and ``row_entropy`` (m,), ``readout`` (the line of numbers in the picture);
    * ``scaled``, ``causal`` (bool), ``image`` (the Image now shown), ``message``.
    """

    def __init__(
        self,
        n: int = N_RANDOM,
        seed: int = 0,
        model: str | object = "transformer-dates",
        max_d_k: int = 512,
    ):
        super().__init__()
        if not (isinstance(n, int) and 1 <= n <= 16):
            raise ValueError(f"n must be an int in 1..16 (random vectors); got {n!r}")
        self._model_ref, self._model = model, None
        gen = np.random.default_rng(seed)
        self._Q_all = gen.standard_normal((n, max_d_k))  # q_t, entries ~ N(0, 1): (n, 512)
        self._K_all = gen.standard_normal((n, max_d_k))  # k_i: (n, 512)
        self._trained_key: tuple | None = None  # (date, head) the trained frames show
        self.mode = widgets.ToggleButtons(  # wide enough for the slide's type (22 px)
            options=[RANDOM, TRAINED], value=RANDOM, style={"button_width": "240px"}
        )
        d_ks = [d for d in D_K_CHOICES if d <= max_d_k]
        start = DEFAULT_D_K if DEFAULT_D_K in d_ks else d_ks[-1]
        self.d_k_slider = widgets.SelectionSlider(
            options=d_ks, value=start, description="d_k", layout={"width": "300px"},
            style={"description_width": "50px"},
        )  # fmt: skip
        self.scale_toggle = widgets.ToggleButtons(
            options=[SCALED, UNSCALED], value=UNSCALED, style={"button_width": "185px"}
        )
        self.mask_toggle = widgets.ToggleButtons(
            options=[NO_MASK, CAUSAL], value=NO_MASK, style={"button_width": "185px"}
        )
        self.preset = widgets.Button(description="preset: d_k = 512, unscaled",
                                     layout={"width": "400px"})  # fmt: skip
        self.text = widgets.Text(
            value="3 May 1979", description="date", continuous_update=False,
            layout={"width": "300px"}, style={"description_width": "60px"},
        )  # fmt: skip
        self.head = widgets.Dropdown(
            options=[("layer 1, head 1", (0, 0))], description="head", layout={"width": "300px"},
            style={"description_width": "60px"},
        )  # fmt: skip
        self.trained_box = widgets.HBox([self.text, self.head], layout={"display": "none"})
        self.fig = None  # built on the first frame that is not in the shipped frames
        self.grid = FrameGrid(
            [(self.mode, "index"), (self.scale_toggle, "index"), (self.mask_toggle, "index"),
             (self.d_k_slider, "index")],
            (2, 2, 2, len(d_ks)), WIDTH_PX,
            share=lambda i: i if i[0] == 0 else (*i[:3], 0),  # a trained head has its own d_k
        )  # fmt: skip
        self.frames, self.links = self.grid.root, self.grid.links
        self.children = [
            widgets.HBox([self.mode, self.preset]),
            widgets.HBox([self.d_k_slider, self.scale_toggle, self.mask_toggle]),
            self.trained_box,
            self.message_box,
            self.frames,  # its numbers are drawn into the picture: no lagging readout
        ]
        self.text.observe(self._on_trained_input, names="value")
        self.head.observe(self._on_trained_input, names="value")
        self.mode.observe(self._on_mode, names="value")
        self.preset.on_click(lambda _: self.show_point())
        self.guard(self._load_trained)  # its frames too, for the exported page
        self.show_message("")  # a model that cannot load is said when the mode is chosen
        self._render_random()
        self.grid.select()

    # ------------------------------------------------------------------ figure and frames
    def _build_figure(self) -> None:
        self.fig, sizes = slide_figure(WIDTH_PX, HEIGHT_PX, layout=None)
        W, H = WIDTH_PX, HEIGHT_PX
        # room on the left and below for a trained head's labels ("<eos>", upright) and, under
        # them, the two-line readout with the note beside its second line
        self.fig.subplots_adjust(left=120 / W, right=1 - 48 / W, top=1 - 34 / H, bottom=180 / H,
                                 wspace=0.22)  # fmt: skip
        axes = self.fig.subplots(1, 3)
        labels = {"xlabel": "keys k_i", "sizes": sizes}
        # both score panels: one diverging map centred on 0, masked scores grey, its bar
        # beside the second and titled for both (a bar for each leaves too little room for
        # a trained head's labels); the first panel's colours clip as its softmax saturates
        scores = {"cmap": "RdBu_r", "vmin": -SCORE_RANGE, "vmax": SCORE_RANGE, "extend": "both"}
        self.panels = [
            Heatmap(axes[0], "QKᵀ", bad="0.85", colorbar=False, ylabel="queries q_t",
                    **scores, **labels),
            Heatmap(axes[1], "QKᵀ/√d_k", bad="0.85", ylabel="", **scores, **labels),
            Heatmap(axes[2], "", ylabel="", **labels),
        ]  # fmt: skip
        for ax in axes[1:]:
            ax.sharey(axes[0])  # the rows are the same queries in every panel: labelled once
            ax.tick_params(labelleft=False)
        bar = self.panels[1].colorbar  # the scores' bar: whole numbers clear of the next panel
        bar.set_ticks([-5, 0, 5])
        bar.ax.set_title("scores", fontsize=sizes.caption)
        self.softmax_title = axes[2].text(
            0.5, 1.0, "", transform=axes[2].transAxes, ha="center", va="bottom",
            fontsize=sizes.title, animated=True,
        )  # fmt: skip
        # the readout is what the room reads off this slide: at the widgets' readout size
        readout_pt = sizes.caption * TEXT_PX / TYPE.caption
        self.caption = self.fig.text(8 / W, 12 / H, "", fontsize=readout_pt, animated=True,
                                     linespacing=1.25)  # fmt: skip
        # the note: right of the readout's second line, at the picture's caption size
        self.note_text = self.fig.text(1 - 8 / W, 12 / H, "", ha="right", fontsize=sizes.caption,
                                       color="0.3")  # fmt: skip
        self._layout: tuple = ()

    def _set_layout(self, keys: list[str], queries: list[str], note: str) -> None:
        """Redraw the static parts (tick labels, note) only when they change, and cache them."""
        if (tuple(keys), tuple(queries), note) == self._layout:
            return
        for panel in self.panels:
            panel.set_labels(keys, queries)
        self.note_text.set_text(literal(note))
        self._background = cache_background(self.fig)
        self._layout = (tuple(keys), tuple(queries), note)

    def _frame(self, index, Q, K, keys, queries, scaled: bool, causal: bool, trained: bool,
               note: str | None = None):  # fmt: skip
        """Store one frame with the numbers it shows; its picture is read from the shipped
        frames when they hold it (:mod:`attnlab.pictures.frame_cache`), else drawn.  ``note``
        replaces the usual note under the picture."""
        values = panels(Q, K, scaled, causal)
        used = "QKᵀ/√d_k" if scaled else "QKᵀ"
        title = f"softmax({used})" + (", causal" if causal else "")
        line = summary(values, Q.shape[1])
        note = note or (trained_note(Q.shape[1]) if trained else RANDOM_NOTE)
        drawn = [values["scores"], values["scaled_scores"], values["weights"], list(keys),
                 list(queries), note, title, line]  # fmt: skip
        picture = rendered(
            "ScaledDotExplorer", drawn,
            lambda: self._draw(values, keys, queries, note, title, line), code=[__name__],
        )  # fmt: skip
        weights = values["weights"]
        self.grid.set(
            index, picture, **values, readout=line, Q=Q, K=K,
            tokens=list(keys), queries=list(queries), row_max=weights.max(axis=1),
            row_entropy=row_entropy(weights), scaled=scaled, causal=causal, trained=trained,
        )  # fmt: skip

    def _draw(self, values: dict, keys, queries, note: str, title: str, line: str) -> bytes:
        """The picture of one frame: the static parts cached, the panels blitted over them."""
        if self.fig is None:
            self._build_figure()
        self._set_layout(keys, queries, note)
        restore_background(self.fig, self._background)
        for panel, key in zip(self.panels, ("scores", "scaled_scores", "weights"), strict=True):
            panel.set_data(values[key])
            panel.blit()
        self.softmax_title.set_text(title)
        self.caption.set_text(literal(line))
        for text in (self.softmax_title, self.caption):
            self.fig.draw_artist(text)
        return png_bytes(self.fig, palette=True)

    def _render_random(self) -> None:
        keys, queries = random_labels(self._Q_all.shape[0])
        for index in self.grid.indices():
            mode, i, j, k = index
            if mode == 0:
                d_k = self.d_k_slider.options[k]
                Q, K = self._Q_all[:, :d_k], self._K_all[:, :d_k]
                self._frame(index, Q, K, keys, queries, i == 0, j == 1, False)

    def _render_trained(self, Q, K, tokens) -> None:
        for index in self.grid.indices():
            if index[0] == 1:
                # an encoder head is never masked: with the toggle on "causal mask" it shows
                # the same weights, and its note says why
                note = ENCODER_UNMASKED if index[2] == 1 else None
                self._frame(index, Q, K, tokens, tokens, index[1] == 0, False, True, note)

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
            model = load(ref) if isinstance(ref, str) else ref  # FileNotFoundError, CheckpointError
            L, H = model.config.num_layers, model.config.num_heads
            self._model = model
            self.head.options = [
                (f"layer {i + 1}, head {j + 1}", (i, j)) for i in range(L) for j in range(H)
            ]
        return self._model

    def _load_trained(self) -> None:
        """Q, K of the chosen encoder head on the typed date; its frames (once each)."""
        model = self.model
        key = (self.text.value, self.head.value)
        if key == self._trained_key:  # drawn already (at start-up, for the exported page)
            return
        tokens = model.source_tokens(self.text.value)  # raises InvalidInput on bad text
        layer, head = self.head.value
        with torch_threads(1):  # batch 1: a second thread brings nothing (attnlab.models.threads)
            Q, K = model.encoder_qk(self.text.value, layer, head)
        self._render_trained(Q, K, tokens)
        self._trained_key = key

    @property
    def frame(self):
        """The Frame the controls select: its picture and the numbers drawn into it."""
        return self.grid.frame()

    # the readouts: the selected frame's data, never a copy kept beside it
    tokens = _readout("tokens")
    queries = _readout("queries")
    Q = _readout("Q")
    K = _readout("K")
    scores = _readout("scores")
    scaled_scores = _readout("scaled_scores")
    weights = _readout("weights")
    row_max = _readout("row_max")
    row_entropy = _readout("row_entropy")
    readout = _readout("readout")

    @property
    def heatmap_data(self) -> np.ndarray:
        """The softmax weights now shown (the third panel)."""
        return self.frame.data["weights"]

    @property
    def image(self) -> widgets.Image:
        """The Image the browser shows for the current controls."""
        return self.grid.image()

    def show_point(self) -> None:
        """The slide's point: random Q, K at d_k = 512, unscaled: the rows saturate."""
        self.mode.value = RANDOM
        self.d_k_slider.value = self.d_k_slider.options[-1]
        self.scale_toggle.value = UNSCALED

    # ------------------------------------------------------------------ events
    def _on_trained_input(self, change=None) -> None:
        if self.mode.value == TRAINED:
            self.guard(self._load_trained)

    def _on_mode(self, change=None) -> None:
        trained = self.mode.value == TRAINED
        self.trained_box.layout.display = None if trained else "none"
        self.d_k_slider.disabled = trained  # a trained head has its own d_k (its note says it)
        if trained and not self.guard(self._load_trained):
            message = self.message  # e.g. the model could not be loaded
            self.mode.value = RANDOM  # keep showing something meaningful
            self.show_message(message)

    def text_form(self) -> str:
        if self.mode.value == TRAINED:
            return f"ScaledDotExplorer: trained Transformer on {self.text.value!r}"
        return (
            f"ScaledDotExplorer: d_k={self.d_k_slider.value}, "
            f"scaled={self.scaled}, causal={self.causal}"
        )

    def png(self) -> bytes:
        return bytes(self.image.value)
