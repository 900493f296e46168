r"""Every picture of the lecture, drawn one way: type sizes, heatmaps, curves, the head grid.

* **Type sizes.** :data:`TYPE` holds the lecture's type sizes in CSS pixels *at the size a
  picture is shown on the 1280x720 slide* (at least :data:`MIN_TEXT_PX` = 14 px: it reads
  from the back of the room).  A figure ``w`` inches wide shown ``W`` px wide draws a font of
  ``p`` points ``p * W / (72 * w)`` px tall, whatever its dpi: :func:`shown_px` and its
  inverse :func:`points`; ``TYPE.at(w, W)`` gives every size in points for that figure, and
  :func:`text_sizes` measures every text a figure draws (the tests use it).
* :class:`Heatmap` is a *persistent* heatmap of attention weights alpha_{t,i} (source tokens
  on x, output tokens on y, a colorbar, the current row boxed), drawn once; an update swaps
  the image data only (blitting) and returns PNG bytes for an ``ipywidgets.Image``.  Too many
  tokens for 14 px labels: every k-th is labelled (fewer ticks, never smaller ones).
* Pictures for the deck: :func:`length_figure` (the length experiment, four curves),
  :func:`timings` (GRU against self-attention), :func:`head_grid` (cross-attention of every
  layer and head), :func:`mask_and_weights` (the causal mask), :class:`TrainingPlot` /
  :class:`LivePlot` (loss and accuracy while training).

Everything renders with matplotlib's Agg canvas directly (no pyplot state, no GUI), so it
works the same in a kernel, in a test and in ``nbconvert``.  Text that comes from outside
(model names, tokens, dates) goes through :func:`literal`, so ``$`` and ``\`` show as typed.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.text import Text
from PIL import Image

__all__ = [
    "SLIDE_WIDTH_PX",
    "SLIDE_HEIGHT_PX",
    "MIN_TEXT_PX",
    "TypeSizes",
    "TYPE",
    "points",
    "shown_px",
    "literal",
    "text_sizes",
    "smallest_text",
    "new_figure",
    "slide_figure",
    "png_bytes",
    "cache_background",
    "restore_background",
    "Heatmap",
    "still_heatmap",
    "length_curves",
    "length_figure",
    "timings",
    "head_grid",
    "mask_and_weights",
    "TrainingPlot",
    "LivePlot",
]

# --------------------------------------------------------------------------- type sizes
SLIDE_WIDTH_PX, SLIDE_HEIGHT_PX = 1280, 720  # the deck's RISE size
MIN_TEXT_PX = 14.0  # the smallest type that reads from the back of the room


@dataclass(frozen=True)
class TypeSizes:
    """Font sizes by role.  :data:`TYPE` holds them in px at the shown size; ``.at`` in points."""

    tick: float = 15.0  # tick labels (heatmap tokens included)
    label: float = 16.0  # axis labels, legends
    title: float = 18.0  # titles
    caption: float = 16.0  # captions and readouts drawn into a picture
    table: float = 16.0  # table text

    def at(self, fig_width_in: float, shown_width_px: float) -> TypeSizes:
        """The same sizes in points, for a figure ``fig_width_in`` wide shown ``shown_width_px``."""
        return TypeSizes(
            **{
                f.name: points(getattr(self, f.name), fig_width_in, shown_width_px)
                for f in fields(self)
            }
        )

    def smallest(self) -> float:
        return min(getattr(self, f.name) for f in fields(self))


#: The lecture's type sizes in px at the shown size: the one place that sets them.
TYPE = TypeSizes()


def points(px: float, fig_width_in: float, shown_width_px: float) -> float:
    """Font size in points that is ``px`` tall on the slide.

    A point is dpi/72 rendered pixels, and the picture is scaled by shown / (width * dpi), so
    the dpi cancels: px = pt * shown_width_px / (72 * fig_width_in).
    """
    return px * 72.0 * fig_width_in / shown_width_px


def shown_px(pt: float, fig_width_in: float, shown_width_px: float) -> float:
    """How many px tall a font of ``pt`` points is when the figure is shown that wide."""
    return pt * shown_width_px / (72.0 * fig_width_in)


def literal(text: object) -> str:
    r"""``text`` as matplotlib shows it literally: every ``$`` escaped, so no mathtext runs.

    Without an unescaped ``$`` matplotlib draws the string as it is (``\`` included) and turns
    each ``\$`` back into ``$``.  A single space becomes a visible ``␣`` (a token).
    """
    s = str(text)
    return "␣" if s == " " else s.replace("$", r"\$")


def _shown_tick_labels(fig: Figure) -> tuple[set[int], set[int]]:
    """ids of every tick label, and of those drawn (ticks in view, labels switched on)."""
    every, shown = set(), set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for tick in [*axis.majorTicks, *axis.minorTicks]:
                every.update((id(tick.label1), id(tick.label2)))
            if not (ax.axison and axis.get_visible()):  # set_axis_off(): no tick is drawn
                continue
            lo, hi = sorted(axis.get_view_interval())
            for locs, ticks in (
                (axis.get_majorticklocs(), axis.majorTicks),
                (axis.get_minorticklocs(), axis.minorTicks),
            ):
                for tick, loc in zip(ticks, locs, strict=False):
                    if lo - 1e-9 <= loc <= hi + 1e-9:
                        shown.update(id(t) for t in (tick.label1, tick.label2) if t.get_visible())
    return every, shown


def text_sizes(fig: Figure, shown_width_px: float) -> list[tuple[float, str]]:
    """(px tall on the slide, text) of every text ``fig`` draws, shown ``shown_width_px`` wide.

    Draws the figure first (ticks are made at draw time).  Counts titles, axis and tick
    labels (only the ticks in view), legends, colorbars, annotations and the texts drawn by
    blitting (animated); leaves out empty and fully transparent texts.
    """
    fig.canvas.draw()
    every, shown = _shown_tick_labels(fig)
    width = fig.get_figwidth()
    out = []
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip() or t.get_alpha() == 0:
            continue
        if id(t) in every and id(t) not in shown:
            continue
        out.append((shown_px(t.get_fontsize(), width, shown_width_px), t.get_text()))
    return out


def smallest_text(fig: Figure, shown_width_px: float) -> tuple[float, str]:
    """The smallest text of ``fig`` on the slide: (px, text)."""
    return min(text_sizes(fig, shown_width_px))


# --------------------------------------------------------------------------- figures and PNGs
def new_figure(width: float, height: float, dpi: int = 100, layout: str | None = None) -> Figure:
    """A figure on its own Agg canvas: no pyplot, no global state, nothing shown by accident."""
    fig = Figure(figsize=(width, height), dpi=dpi, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def slide_figure(
    width_px: float, height_px: float, dpi: int = 100, layout: str | None = "constrained"
) -> tuple[Figure, TypeSizes]:
    """A figure rendered at exactly the px it is shown at, and the lecture's sizes for it (pt).

    For widget pictures: the ``widgets.Image`` is ``width_px`` wide, so one rendered pixel is
    one pixel on the slide.
    """
    fig = new_figure(width_px / dpi, height_px / dpi, dpi=dpi, layout=layout)
    return fig, TYPE.at(width_px / dpi, width_px)


def png_bytes(fig: Figure, draw: bool = False, palette: bool = False) -> bytes:
    """The figure's current Agg buffer as PNG bytes (``draw=True`` redraws everything first).

    Fast PNG settings: the buffer is already rendered, PIL only compresses it lightly
    (zlib level 1 with run-length encoding, which suits flat-coloured plots).  ``palette``:
    256 colours and zlib level 6, about 4x smaller (for frames an exported page embeds).
    """
    canvas = fig.canvas
    if draw:
        canvas.draw()
    rgba = np.asarray(canvas.buffer_rgba())  # (H, W, 4) uint8, no copy
    image = Image.frombuffer("RGBA", (rgba.shape[1], rgba.shape[0]), rgba, "raw", "RGBA", 0, 1)
    out = io.BytesIO()
    if palette:
        rgb = image.convert("RGB").quantize(256, method=Image.Quantize.FASTOCTREE)
        rgb.save(out, format="png", compress_level=6)
    else:
        image.convert("RGB").save(out, format="png", compress_level=1, compress_type=3)  # Z_RLE
    return out.getvalue()


def cache_background(fig: Figure):
    """Draw the static parts of ``fig`` (every non-animated artist) and keep a copy of them."""
    fig.canvas.draw()
    return fig.canvas.copy_from_bbox(fig.bbox)


def restore_background(fig: Figure, background) -> None:
    """Put the cached static picture back before blitting the animated artists."""
    fig.canvas.restore_region(background)


# --------------------------------------------------------------------------- heatmaps
def label_step(n: int, pitch_pt: float, need_pt: float) -> int:
    """Label every k-th of ``n`` cells ``pitch_pt`` apart so labels ``need_pt`` wide never touch."""
    if n <= 1 or pitch_pt >= need_pt:
        return 1
    return max(1, math.ceil(need_pt / max(pitch_pt, 1e-9)))


def _labelled(n: int, step: int) -> list[int]:
    """Cells 0, k, 2k, ... and the last one (<eos>), never two closer than k."""
    kept = list(range(0, n, step))
    if kept and kept[-1] != n - 1:
        if n - 1 - kept[-1] < step and len(kept) > 1:
            kept.pop()
        kept.append(n - 1)
    return kept


class Heatmap:
    """One persistent attention heatmap, updated in place by blitting.

    ``Heatmap(ax, title=..., sizes=TYPE.at(...), cmap="viridis", vmin=0, vmax=1)`` draws into
    an Axes of a figure made by :func:`new_figure` / :func:`slide_figure`.  Then:

    * ``set_labels(x_labels, y_labels)`` fixes the grid (x: source tokens, y: output tokens);
      call :func:`cache_background` on the figure afterwards: it draws the static parts
      (ticks, labels, colorbar) once and keeps them;
    * ``set_data(values, row=None)`` puts new values (shape (len(y_labels), len(x_labels)), NaN
      = blank cell) and boxes row ``row`` (None: no box);
    * ``blit()`` draws only the image and the box onto the restored background.

    The colour range is fixed (alpha lives in [0, 1]), so the colorbar never changes; values
    are turned into colours with numpy (cmap(norm(values))).  ``data`` is the array shown.
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
        sizes: TypeSizes | None = None,
    ):
        self.ax, self.fig = ax, ax.get_figure(root=True)
        self.sizes = sizes or TYPE.at(self.fig.get_figwidth(), self.fig.get_figwidth() * 72)
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
        self.colorbar = None
        if colorbar:
            scale = ScalarMappable(Normalize(vmin, vmax), self.cmap)
            self.colorbar = self.fig.colorbar(scale, ax=ax, fraction=0.046, pad=0.03, extend=extend)
            self.colorbar.ax.tick_params(labelsize=self.sizes.tick)
        ax.set_title(title, fontsize=self.sizes.title)
        ax.set_xlabel(xlabel, fontsize=self.sizes.label)
        ax.set_ylabel(ylabel, fontsize=self.sizes.label)
        ax.tick_params(labelsize=self.sizes.tick)
        self.x_labels: list[str] = []
        self.y_labels: list[str] = []
        self.reveal_rows = False
        self._row_texts: dict[int, Text] = {}  # row -> its label, drawn once the row has data

    def _rgba(self, values: np.ndarray) -> np.ndarray:
        """Colours of ``values`` (n_rows, n_cols) -> (n_rows, n_cols, 4) uint8; NaN -> bad."""
        x = (values - self.vmin) / (self.vmax - self.vmin)  # the fixed range -> [0, 1]
        return self.cmap(x, bytes=True)

    def _axes_points(self) -> tuple[float, float]:
        """Width and height of the axes in points (after the figure's layout, if it has one)."""
        engine = self.fig.get_layout_engine()
        if engine is not None:
            engine.execute(self.fig)
        box = self.ax.get_position()
        w, h = self.fig.get_size_inches()
        return box.width * w * 72, box.height * h * 72

    def set_labels(
        self,
        x_labels: Sequence[str],
        y_labels: Sequence[str],
        reveal_rows: bool = False,
        mathtext: bool = False,
        turn: bool | None = None,
    ) -> None:
        """Fix the grid to len(y_labels) rows and len(x_labels) columns, with tick labels.

        Labels are at ``sizes.tick``; where the cells are too narrow for that, every k-th cell
        is labelled (and the last).  With ``reveal_rows`` a row's y label appears only once
        the row holds data (decoding: the output token is not known before its step).  Labels
        are shown literally (:func:`literal`) unless ``mathtext`` is True.  ``turn``: x labels
        upright (True) or level (False); by default words are turned where they would touch.
        """
        self.x_labels, self.y_labels = [str(s) for s in x_labels], [str(s) for s in y_labels]
        self.reveal_rows = reveal_rows
        n_rows, n_cols = max(len(self.y_labels), 1), max(len(self.x_labels), 1)
        self.data = np.full((n_rows, n_cols), np.nan)
        self.image.set_data(self._rgba(self.data))
        self.image.set_extent((-0.5, n_cols - 0.5, n_rows - 0.5, -0.5))
        self.ax.set_xlim(-0.5, n_cols - 0.5)
        self.ax.set_ylim(n_rows - 0.5, -0.5)  # row 0 on top
        self.highlight.set_width(n_cols)
        x_shown = [literal(s) for s in self.x_labels]
        y_shown = self.y_labels if mathtext else [literal(s) for s in self.y_labels]
        width_pt, height_pt = self._axes_points()
        tick = self.sizes.tick
        wide = [(0.62 * len(s) + 0.3) * tick for s in x_shown]  # about a label's width (pt)
        pitch = width_pt / n_cols
        pairs = [(a + b) / 2 for a, b in zip(wide, wide[1:], strict=False)] or [tick]
        # words whose neighbours would touch: turn the labels; characters (and one <eos>)
        # stay level, every k-th cell labelled where they do not fit
        if turn is None:
            words = float(np.median([len(s) for s in x_shown])) > 2 if x_shown else False
            turn = words and float(np.median(pairs)) > 0.95 * pitch
        need_x = 1.05 * tick if turn else max(pairs)
        x_kept = _labelled(len(x_shown), label_step(n_cols, pitch, need_x))
        y_kept = _labelled(len(y_shown), label_step(n_rows, height_pt / n_rows, 1.05 * tick))
        self.ax.set_xticks(x_kept, [x_shown[i] for i in x_kept], rotation=90 if turn else 0)
        self.ax.set_yticks(y_kept, [y_shown[i] for i in y_kept])
        self.ax.tick_params(labelsize=tick)
        for text in self._row_texts.values():
            text.remove()
        self._row_texts = {}
        if reveal_rows:  # the static labels keep their room but are invisible
            for tick_label in self.ax.get_yticklabels():
                tick_label.set_alpha(0.0)
            self._row_texts = {r: self._row_label(r, y_shown[r]) for r in y_kept}

    def _row_label(self, row: int, label: str) -> Text:
        return self.ax.annotate(
            label,
            xy=(0, row),
            xycoords=("axes fraction", "data"),
            xytext=(-0.5 * self.sizes.tick, 0),  # points left of the axes, where ticks sit
            textcoords="offset points",
            ha="right",
            va="center",
            fontsize=self.sizes.tick,
            animated=True,
        )

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
        """Draw only the image, the box and (``labels``) the revealed row labels."""
        self.ax.draw_artist(self.image)
        self.ax.draw_artist(self.highlight)
        if labels:
            self.draw_row_labels(r for r in self._row_texts if np.isfinite(self.data[r]).any())

    def draw_row_labels(self, rows: Iterable[int]) -> None:
        """Draw the revealed y labels of ``rows`` (with ``reveal_rows``; unlabelled rows skip)."""
        for r in rows:
            if r in self._row_texts:
                self.ax.draw_artist(self._row_texts[r])


def still_heatmap(ax, values, x_labels, y_labels, turn: bool | None = None, **kwargs) -> Heatmap:
    """A :class:`Heatmap` drawn with the rest of its figure (not blitted): a still picture.

    ``kwargs`` go to :class:`Heatmap` (title, sizes, cmap, ...), ``turn`` to ``set_labels``.
    """
    heat = Heatmap(ax, **kwargs)
    heat.set_labels(x_labels, y_labels, turn=turn)
    heat.image.set_animated(False)  # a still picture: drawn with the rest
    heat.set_data(values)
    return heat


# --------------------------------------------------------------------------- experiment curves
def length_curves(results: dict, metric: str = "exact_match", ax=None, sizes=None):
    """Accuracy against input-length bin, one line per model (Bahdanau et al. 2014, Fig. 2).

    ``results`` is the dict of :func:`attnlab.experiments.length.load_results`: ``bins`` (a
    list of ``[lo, hi]``), ``models`` (name -> {"exact_match": [...], "token_accuracy":
    [...]}, one value per bin) and ``config``.  If the config names the lengths a model was
    trained on (``config["models"][name]["train_lengths"]`` or ``config["train_lengths"]``,
    each [lo, hi]) and that range is narrower than the tested bins, the lengths beyond it are
    shaded.  Returns the matplotlib Axes (draw into your own with ``ax=``; without it, a new
    figure on an Agg canvas: show ``ax.figure``).
    """
    if metric not in ("exact_match", "token_accuracy"):
        raise ValueError(f"metric must be 'exact_match' or 'token_accuracy'; got {metric!r}")
    bins = [tuple(b) for b in results["bins"]]
    models = results["models"]
    if ax is None:
        fig = new_figure(6.0, 3.6, layout="constrained")
        ax = fig.add_subplot()
    sizes = sizes or TYPE.at(ax.get_figure(root=True).get_figwidth(), 72 * 6.0)
    centres = [(lo + hi) / 2 for lo, hi in bins]  # x position of each bin
    for name, scores in models.items():
        y = scores[metric]
        if len(y) != len(bins):
            raise ValueError(f"model {name!r} has {len(y)} values of {metric} for {len(bins)} bins")
        ax.plot(centres, y, marker="o", label=literal(name))
    tested = (min(lo for lo, _ in bins), max(hi for _, hi in bins))
    for lo, hi, label in _train_ranges(results.get("config", {}), models):
        if lo > tested[0] or hi < tested[1]:  # a range covering every bin says nothing
            ax.axvspan(hi, tested[1], color="0.85", alpha=0.5, zorder=0, label=label)
    ax.set_xticks(centres, [f"{lo}-{hi}" for lo, hi in bins], rotation=45 if len(bins) > 8 else 0)
    ax.tick_params(labelsize=sizes.tick)
    ax.set_xlabel("input length (symbols)", fontsize=sizes.label)
    ax.set_ylabel(metric.replace("_", " "), fontsize=sizes.label)
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=sizes.label, loc="best")
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
            found.setdefault(r, f"longer than trained on (≤ {r[1]:g})")
    r = as_range(config.get("train_lengths"))
    if r:
        found.setdefault(r, f"longer than trained on (≤ {r[1]:g})")
    return [(lo, hi, label) for (lo, hi), label in found.items()]


#: The lecture's names of the model kinds in the length experiment.
KIND_NAMES = {"rnnencdec": "RNNEncDec", "rnnsearch": "RNNSearch"}
#: Colour by attention, line style by training lengths (the seed's figure: Bahdanau Fig. 2).
KIND_COLOURS = {"rnnencdec": "#D55E00", "rnnsearch": "#0072B2"}


def _length_label(name: str, info: dict) -> str:
    kind = info.get("kind")
    lengths = info.get("train_lengths")
    if kind not in KIND_NAMES:
        return literal(name)
    attention = "attention" if kind == "rnnsearch" else "no attention"
    trained = f", trained ≤ {lengths[1]}" if isinstance(lengths, list) and len(lengths) == 2 else ""
    return f"{KIND_NAMES[kind]} ({attention}{trained})"


def length_figure(
    results: dict, shown_width_px: float = 845, metric: str = "exact_match"
) -> Figure:
    """The length experiment as the seed's figure: every model's curve, named for the lecture.

    Attention in blue, none in vermillion; trained on the longest lengths solid, on shorter
    ones dashed; the lengths beyond the shorter training range shaded.  Sized so that its
    text is :data:`TYPE` on the slide when shown ``shown_width_px`` wide.
    """
    width = 12.0
    sizes = TYPE.at(width, shown_width_px)
    fig = new_figure(width, 6.0, layout="constrained")
    fig.patch.set_facecolor("white")
    ax = fig.add_subplot()
    length_curves(results, metric=metric, ax=ax, sizes=sizes)
    infos = (results.get("config") or {}).get("models") or {}
    longest = max(
        (
            i["train_lengths"][1]
            for i in infos.values()
            if isinstance(i, dict) and i.get("train_lengths")
        ),
        default=None,
    )
    for line, name in zip(ax.get_lines(), results["models"], strict=True):
        info = infos.get(name) if isinstance(infos.get(name), dict) else {}
        line.set_label(_length_label(name, info))
        line.set_linewidth(3.0)
        line.set_markersize(9)
        if info.get("kind") in KIND_COLOURS:
            line.set_color(KIND_COLOURS[info["kind"]])
        lengths = info.get("train_lengths")
        if lengths and longest is not None and lengths[1] < longest:
            line.set_linestyle("--")
            line.set_marker("s")
    ax.legend(fontsize=sizes.label, loc="center left", framealpha=0.95)
    ax.set_title("Exact match against input length (reverse a digit string)", fontsize=sizes.title)
    return fig


# --------------------------------------------------------------------------- timings
def timings(result: dict, shown_width_px: float = 780) -> Figure:
    """Log-log forward time of a GRU against self-attention (``lecture.time_rnn_vs_attention``).

    ``result`` has ``n``, ``rnn_ms`` and ``attention_ms``.  The x ticks are the measured n
    (plain numbers, no overlapping powers of ten), the y ticks a few round numbers.
    """
    width = 7.8
    sizes = TYPE.at(width, shown_width_px)
    fig = new_figure(width, 3.9, layout="constrained")
    ax = fig.add_subplot()
    n = list(result["n"])
    ax.loglog(n, result["rnn_ms"], "o-", lw=2.5, ms=8, label="GRU: n steps one after another")
    ax.loglog(n, result["attention_ms"], "s-", lw=2.5, ms=8, label="self-attention: all at once")
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xticks(n, [str(v) for v in n])
    values = [v for v in (*result["rnn_ms"], *result["attention_ms"]) if v > 0]
    lo, hi = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))
    ax.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_yticks([10.0**k for k in range(lo, hi + 1)], [f"{10.0**k:g}" for k in range(lo, hi + 1)])
    ax.tick_params(labelsize=sizes.tick)
    ax.set_xlabel("sequence length n", fontsize=sizes.label)
    ax.set_ylabel("forward time (ms)", fontsize=sizes.label)
    ax.legend(frameon=False, fontsize=sizes.label)
    ax.grid(True, alpha=0.3)
    return fig


# --------------------------------------------------------------------------- head grid
def head_grid(
    decoding, title: str | None = None, shown_width_px: float = 1200, height_px: float = 540
) -> Figure:
    """Cross-attention of every layer and head, one panel each (rows: layers, columns: heads).

    ``decoding`` is an ``attnlab.decode.Decoding`` (``alpha`` (L, h, T, n), ``source_tokens``,
    ``output_tokens``); tick labels only on the outer panels, thinned to stay 14 px or more.
    """
    alpha = np.asarray(decoding.alpha, dtype=float)  # (L, h, T, n)
    L, H = alpha.shape[:2]
    fig, sizes = slide_figure(shown_width_px, height_px)
    axes = fig.subplots(L, H, squeeze=False, sharex=True, sharey=True)
    for i in range(L):
        for j in range(H):
            still_heatmap(
                axes[i, j],
                alpha[i, j],
                decoding.source_tokens,
                decoding.output_tokens,
                turn=True,
                colorbar=False,
                xlabel="",
                ylabel="",
                sizes=sizes,
            )
            axes[i, j].set_title(f"layer {i + 1}, head {j + 1}", fontsize=sizes.label)
            axes[i, j].tick_params(labelbottom=i == L - 1, labelleft=j == 0)
    if title is None:
        title = f"cross-attention: {''.join(decoding.source_tokens[:-1])!r} -> {''.join(decoding.output_tokens)!r}"
    fig.suptitle(literal(title), fontsize=sizes.title)
    return fig


# --------------------------------------------------------------------------- causal mask
def mask_and_weights(mask, weights, shown_width_px: float = 900) -> Figure:
    """The causal mask (True = may attend) beside the masked softmax weights, positions 1..n."""
    mask, weights = np.asarray(mask, dtype=float), np.asarray(weights, dtype=float)
    n = mask.shape[-1]
    width = 9.0
    sizes = TYPE.at(width, shown_width_px)
    fig = new_figure(width, 4.0, layout="constrained")
    axes = fig.subplots(1, 2)
    positions = [str(i + 1) for i in range(n)]
    panels = (
        (mask, "Greys", "causal mask: True = may attend"),
        (weights, "viridis", "softmax(QKᵀ/√d_k), masked"),
    )
    for ax, (values, cmap, name) in zip(axes, panels, strict=True):
        still_heatmap(
            ax,
            values * (0.7 if cmap == "Greys" else 1.0),
            positions,
            positions,
            title=name,
            cmap=cmap,
            colorbar=cmap == "viridis",
            sizes=sizes,
            xlabel="key position",
            ylabel="query position",
        )
    return fig


# --------------------------------------------------------------------------- training plot
class TrainingPlot:
    """Training loss (every step) and held-out exact match (every measurement), one figure.

    ``add_loss(step, loss)``, ``set_history(history, target)``; ``png()`` draws it.
    """

    def __init__(self, title: str, shown_width_px: float = 800):
        width = 8.0
        self.sizes = TYPE.at(width, shown_width_px)
        self.fig = new_figure(width, 3.0, dpi=80, layout="constrained")
        self.ax_loss, self.ax_acc = self.fig.subplots(1, 2)
        (self.loss_line,) = self.ax_loss.plot([], [], color="tab:blue")
        (self.acc_line,) = self.ax_acc.plot([], [], color="tab:green", marker=".")
        self.ax_loss.set_yscale("log")
        self.ax_acc.set_ylim(0, 1.02)
        for ax, label in ((self.ax_loss, "training loss"), (self.ax_acc, "held-out exact match")):
            ax.set_xlabel("step", fontsize=self.sizes.label)
            ax.set_ylabel(label, fontsize=self.sizes.label)
            ax.tick_params(labelsize=self.sizes.tick)
        self.title = literal(title)
        self.target_line = None
        self.loss_steps: list[int] = []
        self.loss_values: list[float] = []
        self.fig.suptitle(self.title, fontsize=self.sizes.title)

    def add_loss(self, step: int, loss: float) -> None:
        self.loss_steps.append(step)
        self.loss_values.append(loss)
        self.loss_line.set_data(self.loss_steps, self.loss_values)
        self.ax_loss.relim()
        self.ax_loss.autoscale_view()

    def set_history(self, history: dict, target: float | None) -> None:
        steps = history["step"]
        self.acc_line.set_data(steps, history["accuracy"])
        self.ax_acc.relim()
        self.ax_acc.autoscale_view(scaley=False)
        if target is not None and self.target_line is None:
            self.target_line = self.ax_acc.axhline(target, color="grey", lw=0.8, ls="--")
        self.fig.suptitle(
            f"{self.title}: step {steps[-1]}, {history['seconds'][-1]:.1f} s, "
            f"exact match {history['accuracy'][-1]:.3f}",
            fontsize=self.sizes.title,
        )

    def png(self) -> bytes:
        return png_bytes(self.fig, draw=True)


class LivePlot:
    """A :class:`TrainingPlot` shown in a notebook and updated in place (``train.fit`` uses it)."""

    def __init__(self, title: str):
        from IPython.display import Image as IPImage
        from IPython.display import display

        self.plot = TrainingPlot(title)
        self._Image = IPImage
        self.handle = display(IPImage(data=self.plot.png()), display_id=True)

    def add_loss(self, step: int, loss: float, redraw_every: int = 10) -> None:
        """Record one step's loss; redraw every few steps (a redraw costs ~50 ms)."""
        self.plot.add_loss(step, loss)
        if step % redraw_every == 0:
            self.handle.update(self._Image(data=self.plot.png()))

    def update(self, history: dict, target: float | None) -> None:
        self.plot.set_history(history, target)
        self.handle.update(self._Image(data=self.plot.png()))
