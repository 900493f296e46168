r"""Plots for the lecture: attention heatmaps updated in place, context bars, experiment curves.

Three things live here:

* :func:`length_curves` draws the length experiment (accuracy against input length, one line
  per model), the shape of Bahdanau et al. (2014), Fig. 2.
* :class:`Heatmap` is a *persistent* heatmap of attention weights alpha_{t,i} (source tokens
  on x, output tokens on y, a colorbar, the current row highlighted).  It is drawn once; an
  update only swaps the image data and the row highlight (blitting) and returns PNG bytes
  ready for an ``ipywidgets.Image``.  Redrawing the tick labels is what makes a naive redraw
  slow, and alpha lives in [0, 1], so the colour range is fixed and the labels are cached.
* :class:`ContextBars` is the same idea for a bar chart of a context vector c_t.

Everything renders with matplotlib's Agg canvas directly (no pyplot state, no GUI), so it
works the same in a kernel, in a test and in ``nbconvert``.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from PIL import Image

__all__ = [
    "length_curves",
    "new_figure",
    "png_bytes",
    "Heatmap",
    "ContextBars",
    "cache_background",
    "restore_background",
]


# --------------------------------------------------------------------------- experiment curves
def length_curves(results: dict, metric: str = "exact_match", ax=None):
    """Accuracy against input-length bin, one line per model (Bahdanau et al. 2014, Fig. 2).

    ``results`` is the dict of :func:`attnlab.experiments.length.load_results`: ``bins`` (a
    list of ``[lo, hi]``), ``models`` (name -> {"exact_match": [...], "token_accuracy":
    [...]}, one value per bin) and ``config``.  If the config names the lengths a model was
    trained on (``config["models"][name]["train_lengths"]`` or ``config["train_lengths"]``,
    each [lo, hi]) and that range is narrower than the tested bins, it is shaded.
    Returns the matplotlib Axes (draw into your own with ``ax=``; without it, a new figure on
    an Agg canvas: show ``ax.figure`` in a notebook).
    """
    if metric not in ("exact_match", "token_accuracy"):
        raise ValueError(f"metric must be 'exact_match' or 'token_accuracy'; got {metric!r}")
    bins = [tuple(b) for b in results["bins"]]
    models = results["models"]
    if ax is None:
        fig = new_figure(6.0, 3.6, layout="constrained")
        ax = fig.add_subplot()
    centres = [(lo + hi) / 2 for lo, hi in bins]  # x position of each bin
    for name, scores in models.items():
        y = scores[metric]
        if len(y) != len(bins):
            raise ValueError(f"model {name!r} has {len(y)} values of {metric} for {len(bins)} bins")
        ax.plot(centres, y, marker="o", label=name)
    tested = (min(lo for lo, _ in bins), max(hi for _, hi in bins))
    for lo, hi, label in _train_ranges(results.get("config", {}), models):
        if lo > tested[0] or hi < tested[1]:  # a range covering every bin says nothing
            ax.axvspan(lo, hi, color="0.85", alpha=0.5, zorder=0, label=label)
    ax.set_xticks(centres, [f"{lo}-{hi}" for lo, hi in bins], rotation=45 if len(bins) > 8 else 0)
    ax.set_xlabel("input length (symbols)")
    ax.set_ylabel(metric.replace("_", " "))
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="best")
    return ax


def _train_ranges(config: dict, models: dict) -> list[tuple[float, float, str]]:
    """The training-length ranges named in an experiment config, as (lo, hi, label).

    Read from ``config["models"][name]["train_lengths"]`` (what the length experiment
    writes) or from ``config["train_lengths"]`` = [lo, hi] for all models; each distinct
    range once.
    """

    def as_range(value) -> tuple[float, float] | None:
        ok = isinstance(value, (list, tuple)) and len(value) == 2
        if ok and all(isinstance(v, (int, float)) for v in value):
            return float(value[0]), float(value[1])
        return None

    found: dict[tuple[float, float], str] = {}
    for name, info in (config.get("models") or {}).items():
        r = as_range(info.get("train_lengths")) if isinstance(info, dict) else None
        if r and name in models:
            found.setdefault(r, f"trained lengths ({name})")
    r = as_range(config.get("train_lengths"))
    if r:
        found.setdefault(r, "trained lengths")
    return [(lo, hi, label) for (lo, hi), label in found.items()]


# --------------------------------------------------------------------------- figures and PNGs
def new_figure(width: float, height: float, dpi: int = 100, layout: str | None = None) -> Figure:
    """A figure on its own Agg canvas: no pyplot, no global state, nothing shown by accident."""
    fig = Figure(figsize=(width, height), dpi=dpi, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def png_bytes(fig: Figure, draw: bool = False) -> bytes:
    """The figure's current Agg buffer as PNG bytes (``draw=True`` redraws everything first).

    Fast PNG settings: the buffer is already rendered, PIL only compresses it lightly
    (zlib level 1 with run-length encoding, which suits flat-coloured plots).
    """
    canvas = fig.canvas
    if draw:
        canvas.draw()
    rgba = np.asarray(canvas.buffer_rgba())  # (H, W, 4) uint8, no copy
    image = Image.frombuffer("RGBA", (rgba.shape[1], rgba.shape[0]), rgba, "raw", "RGBA", 0, 1)
    out = io.BytesIO()
    image.convert("RGB").save(out, format="png", compress_level=1, compress_type=3)  # 3: Z_RLE
    return out.getvalue()


# --------------------------------------------------------------------------- heatmaps
class Heatmap:
    """One persistent attention heatmap, updated in place by blitting.

    ``Heatmap(ax, title=..., cmap="viridis", vmin=0, vmax=1)`` draws into an Axes of a figure
    made by :func:`new_figure`.  Then:

    * ``set_labels(x_labels, y_labels)`` fixes the grid (x: source tokens, y: output tokens);
      call :func:`cache_background` on the figure afterwards: it draws the static parts
      (ticks, labels, colorbar) once and keeps them;
    * ``set_data(values, row=None)`` puts new values (shape (len(y_labels), len(x_labels)), NaN
      = blank cell) and highlights row ``row`` (None: no highlight);
    * ``blit()`` draws only the image and the highlight onto the restored background.

    The colour range is fixed (alpha lives in [0, 1]), so the colorbar never changes; values
    are turned into colours here with numpy (cmap(norm(values))), which is faster than letting
    matplotlib handle NaN through masked arrays.  ``data`` is the array currently shown.
    """

    def __init__(
        self,
        ax,
        title: str = "",
        cmap: str = "viridis",
        vmin: float = 0.0,
        vmax: float = 1.0,
        colorbar: bool = True,
        xlabel: str = "source tokens",
        ylabel: str = "output tokens",
        extend: str = "neither",
        bad: str = "white",
    ):
        self.ax, self.fig = ax, ax.get_figure(root=True)
        self.vmin, self.vmax = vmin, vmax
        self.cmap = matplotlib.colormaps[cmap].with_extremes(bad=bad)
        self.data = np.full((1, 1), np.nan)  # what is shown, shape (n_rows, n_cols)
        self.row: int | None = None
        self.image = ax.imshow(
            self._rgba(self.data),
            aspect="auto",
            interpolation="nearest",
            animated=True,  # left out of full redraws; drawn by blit()
        )
        self.highlight = Rectangle(
            (-0.5, -0.5), 1, 1, fill=False, edgecolor="red", linewidth=2, animated=True
        )
        self.highlight.set_visible(False)
        ax.add_patch(self.highlight)
        if colorbar:
            scale = ScalarMappable(Normalize(vmin, vmax), self.cmap)
            self.fig.colorbar(scale, ax=ax, fraction=0.046, pad=0.03, extend=extend)
        ax.set_title(title, fontsize="medium")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        self.x_labels: list[str] = []
        self.y_labels: list[str] = []
        self.reveal_rows = False
        self._row_texts: list = []  # animated y labels when rows are revealed one by one

    def _rgba(self, values: np.ndarray) -> np.ndarray:
        """Colours of ``values`` (n_rows, n_cols) -> (n_rows, n_cols, 4) uint8; NaN -> bad."""
        x = (values - self.vmin) / (self.vmax - self.vmin)  # the fixed range -> [0, 1]
        return self.cmap(x, bytes=True)

    def set_labels(
        self,
        x_labels: Sequence[str],
        y_labels: Sequence[str],
        reveal_rows: bool = False,
        mathtext: bool = False,
    ) -> None:
        """Fix the grid to len(y_labels) rows and len(x_labels) columns, with tick labels.

        With ``reveal_rows`` a row's y label appears only once the row holds data (decoding:
        the output token is not known before its step).  Labels are shown literally ('$'
        escaped) unless ``mathtext`` is True.
        """
        self.x_labels, self.y_labels = [str(s) for s in x_labels], [str(s) for s in y_labels]
        self.reveal_rows = reveal_rows
        n_rows, n_cols = max(len(self.y_labels), 1), max(len(self.x_labels), 1)
        self.data = np.full((n_rows, n_cols), np.nan)
        self.image.set_data(self._rgba(self.data))
        self.image.set_extent((-0.5, n_cols - 0.5, n_rows - 0.5, -0.5))
        self.ax.set_xlim(-0.5, n_cols - 0.5)
        self.ax.set_ylim(n_rows - 0.5, -0.5)  # row 0 on top
        small = "x-small" if max(n_rows, n_cols) > 20 else "small"
        self.ax.set_xticks(
            range(len(self.x_labels)),
            [_show(s) for s in self.x_labels],
            rotation=90 if sum(len(s) + 1 for s in self.x_labels) > 40 else 0,  # long: turn
        )
        y_shown = self.y_labels if mathtext else [_show(s) for s in self.y_labels]
        self.ax.set_yticks(range(len(self.y_labels)), y_shown)
        self.ax.tick_params(labelsize=small)
        self.highlight.set_width(n_cols)
        for text in self._row_texts:
            text.remove()
        self._row_texts = []
        if reveal_rows:  # the static labels keep their room but are invisible
            for tick_label in self.ax.get_yticklabels():
                tick_label.set_alpha(0.0)
            self._row_texts = [
                self.ax.annotate(
                    s,
                    xy=(0, r),
                    xycoords=("axes fraction", "data"),
                    xytext=(-7, 0),  # points left of the axes, where the tick labels sit
                    textcoords="offset points",
                    ha="right",
                    va="center",
                    fontsize=small,
                    animated=True,
                )
                for r, s in enumerate(y_shown)
            ]

    def set_data(self, values: np.ndarray, row: int | None = None) -> None:
        """Show ``values`` (n_rows, n_cols); NaN cells stay blank; box row ``row`` in red."""
        values = np.asarray(values, dtype=float)
        if values.shape != self.data.shape:
            raise ValueError(
                f"heatmap expects values of shape {self.data.shape} "
                f"(len(y_labels), len(x_labels)); got {values.shape}"
            )
        self.data = values.copy()
        self.image.set_data(self._rgba(self.data))
        self.row = row
        if row is None:
            self.highlight.set_visible(False)
        else:
            self.highlight.set_xy((-0.5, row - 0.5))
            self.highlight.set_visible(True)

    def blit(self, labels: bool = True) -> None:
        """Draw only the image, the highlight and (``labels``) the revealed row labels."""
        self.ax.draw_artist(self.image)
        self.ax.draw_artist(self.highlight)
        if labels:
            self.draw_row_labels(
                r for r in range(len(self._row_texts)) if np.isfinite(self.data[r]).any()
            )

    def draw_row_labels(self, rows) -> None:
        """Draw the revealed y labels of ``rows`` (with ``reveal_rows``)."""
        for r in rows:
            if 0 <= r < len(self._row_texts):
                self.ax.draw_artist(self._row_texts[r])


def _show(token: str) -> str:
    """A token as a tick label: spaces made visible, mathtext '$' escaped."""
    if token == " ":
        return "␣"
    return token.replace("$", r"\$")


class ContextBars:
    """A persistent bar chart of a context vector c_t (one bar per dimension), blitted.

    ``set_values(c)`` sets the bar heights; the y range is fixed to [-lim, lim] (c_t is a
    weighted mean of encoder states h_i, and GRU states lie in [-1, 1], so lim=1 by default).
    The bars are one artist (a filled step patch), so an update draws one path.
    """

    def __init__(self, ax, size: int, lim: float = 1.0, title: str = "context vector $c_t$"):
        self.ax = ax
        self.size = size
        self.values = np.zeros(size)
        edges = np.arange(size + 1) - 0.5  # bar i spans [i - 0.5, i + 0.5]
        self.bars = ax.stairs(self.values, edges, fill=True, baseline=0.0, animated=True)
        ax.set_xlim(-0.5, size - 0.5)
        ax.set_ylim(-lim, lim)
        ax.axhline(0, color="0.5", linewidth=0.5)
        ax.set_title(title, fontsize="medium")
        ax.set_xlabel("dimension of $c_t$")

    def set_values(self, c: np.ndarray) -> None:
        c = np.asarray(c, dtype=float).reshape(-1)
        if c.shape != (self.size,):
            raise ValueError(f"context bars expect a vector of shape ({self.size},); got {c.shape}")
        self.values = c.copy()
        self.bars.set_data(values=self.values)

    def blit(self) -> None:
        self.ax.draw_artist(self.bars)


def cache_background(fig: Figure):
    """Draw the static parts of ``fig`` (every non-animated artist) and keep a copy of them."""
    fig.canvas.draw()
    return fig.canvas.copy_from_bbox(fig.bbox)


def restore_background(fig: Figure, background) -> None:
    """Put the cached static picture back before blitting the animated artists."""
    fig.canvas.restore_region(background)
