"""Heatmaps of attention weights: one persistent :class:`Heatmap`, updated by blitting.

:class:`Heatmap` draws alpha_{t,i} (source tokens on x, output tokens on y, a colorbar, the
current row boxed) once; an update swaps the image data only and the caller blits it.  Up to
:data:`MAX_LABELLED` (40) tokens every key and query gets its label, at the lecture's tick
size: a picture too small for them is made larger (:func:`heatmap_room` gives the room the
labels need) or split, never thinned; in a larger heatmap an axis without the
room labels every k-th token rather than overprint.  :func:`still_heatmap` is the same picture drawn with the rest of its figure.

Subword pieces (:mod:`attnlab.text.subwords`) are labelled as people read them
(:func:`tick_labels`: a word start plain, a continuation ``##piece``, bytes as their
character), never as SentencePiece's ``▁Close`` or ``<0xC3>``: ``set_labels`` and
:func:`heatmap_room` read a list that holds such a piece as pieces unless told otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import matplotlib
import numpy as np
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.patches import Rectangle
from matplotlib.text import Text

from attnlab.pictures.typography import CHAR_WIDTH, TYPE, TypeSizes, literal
from attnlab.text.subwords import BYTE_PIECE, WORD_START, readable

__all__ = [
    "Heatmap",
    "still_heatmap",
    "heatmap_room",
    "heatmaps_of",
    "tick_labels",
    "LABEL_PITCH",
    "MAX_LABELLED",
    "TURNS",
]

#: Cell pitch, in tick sizes, at which neighbouring labels (one line each) never touch.
LABEL_PITCH = 1.1
#: Up to this many keys or queries every one is labelled, whatever the room; a
#: picture too small for them is made larger or split, never thinned.
MAX_LABELLED = 40


def tick_labels(tokens: Sequence[str], pieces: bool | None = None) -> list[str]:
    """The labels of ``tokens`` on a picture: subword pieces made readable
    (:func:`attnlab.text.subwords.readable`), any other token as it is.  ``pieces``: True for
    pieces, False for other tokens, None (default) pieces when one of them is a piece that
    starts a word (``▁``) or a byte piece (``<0xC3>``).

    >>> tick_labels(["▁Daten", "träger", "<eos>"])
    ['Daten', '##träger', '<eos>']
    >>> tick_labels(["3", " ", "M", "a", "y"])
    ['3', ' ', 'M', 'a', 'y']
    """
    tokens = [str(s) for s in tokens]
    if pieces is None:
        pieces = any(s.startswith(WORD_START) or BYTE_PIECE.fullmatch(s) for s in tokens)
    return readable(tokens) if pieces else tokens


def _label_width(label: str, tick: float) -> float:
    """About the width of a one-line label at font size ``tick`` (same unit)."""
    return (CHAR_WIDTH * len(label) + 0.3) * tick


#: How x labels may stand: all level, the longer ones (more than a character) upright, or all
#: upright; ``turn=None`` takes the first of them that fits.
TURNS = (False, "long", True)


def _column_pitch(x_shown: Sequence[str], tick: float, turn) -> float:
    """The smallest distance between columns at which no two neighbouring labels touch."""
    upright = LABEL_PITCH * tick  # a turned label is one line tall across the column

    def width(label: str) -> float:
        if turn is True or (turn == "long" and len(label) > 1):
            return upright
        return _label_width(label, tick)

    widths = [width(s) for s in x_shown] or [tick]
    pairs = [(a + b) / 2 for a, b in zip(widths, widths[1:], strict=False)] or widths
    return max(pairs)


def heatmap_room(
    x_labels: Sequence[str],
    y_labels: Sequence[str],
    tick: float = TYPE.tick,
    turn: bool | str | None = None,
    pieces: bool | None = None,
) -> tuple[float, float]:
    """(width, height) of the axes, in the unit of ``tick``, at which every label fits.

    Rows are ``LABEL_PITCH * tick`` apart at least; columns as far apart as their labels need
    standing as ``turn`` says (:data:`TURNS`; ``None``: the way that needs the least room).
    Size a picture so that its heatmap gets at least this much room (or split it): the labels
    are never thinned.  The labels are measured as shown (:func:`tick_labels` with ``pieces``).
    """
    x_shown = [literal(s) for s in tick_labels(x_labels, pieces)]
    turns = TURNS if turn is None else (turn,)
    col = min(_column_pitch(x_shown, tick, t) for t in turns)
    return len(x_shown) * col, len(y_labels) * LABEL_PITCH * tick


def _kept(n: int, need: float, room: float, large: bool) -> list[int]:
    """The tokens labelled on an axis of ``n``: all of them, unless the heatmap is ``large``
    (more than :data:`MAX_LABELLED` tokens on an axis) and they need more room than there is:
    then every k-th and the last."""
    if not large or need <= room * 1.001:
        return list(range(n))
    step = math.ceil(need / max(room, 1e-9))
    kept = list(range(0, n, step))
    if kept[-1] != n - 1:
        if n - 1 - kept[-1] < step and len(kept) > 1:
            kept.pop()
        kept.append(n - 1)
    return kept


def _drawn_labels(ax, which: str) -> list[str]:
    """Texts of the tick labels drawn on ``which`` axis of ``ax`` (ticks in view, labels on)."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    if not (ax.axison and axis.get_visible()):
        return []
    lo, hi = sorted(axis.get_view_interval())
    labels = []
    for tick, loc in zip(axis.majorTicks, axis.get_majorticklocs(), strict=False):
        if lo - 1e-9 <= loc <= hi + 1e-9:
            labels += [t.get_text() for t in (tick.label1, tick.label2) if t.get_visible()]
    return labels


def _labels_shown(ax, which: str, want: Sequence[str] = ()) -> list[str]:
    """The labels that name the ``which`` axis of ``ax`` in the picture: its own, or those of
    an axes that shares the axis with it or lines up with it (a row of panels labels its
    queries on the left, a column its keys at the bottom) and shows exactly ``want``."""
    own = _drawn_labels(ax, which)
    if own == list(want):
        return own
    shared = ax.get_shared_x_axes() if which == "x" else ax.get_shared_y_axes()
    fig = ax.get_figure(root=True)
    box = ax.get_position()
    lined_up = [
        other
        for other in fig.axes
        if other is not ax
        and np.allclose(
            (other.get_position().x0, other.get_position().x1) if which == "x"
            else (other.get_position().y0, other.get_position().y1),
            (box.x0, box.x1) if which == "x" else (box.y0, box.y1),
            atol=0.005,
        )
    ]  # fmt: skip
    for other in [*shared.get_siblings(ax), *lined_up]:
        if _drawn_labels(other, which) == list(want):
            return list(want)
    return own


def heatmaps_of(fig) -> list[Heatmap]:
    """The :class:`Heatmap` s drawn into ``fig`` (for tests and the PNG's label record)."""
    return list(getattr(fig, "_attnlab_heatmaps", []))


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
        self.fig.__dict__.setdefault("_attnlab_heatmaps", []).append(self)
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
        self.crowded = False  # set_labels: too little room for every label at the tick size
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
        pieces: bool | None = None,
    ) -> None:
        """Fix the grid to len(y_labels) rows and len(x_labels) columns, with tick labels.

        Every cell gets its label, at ``sizes.tick``; ``crowded`` says whether the axes are
        too small for them (:func:`heatmap_room`: make the picture larger, or split it).  With
        ``reveal_rows`` a row's y label appears only once the row holds data (decoding: the
        output token is not known before its step).  Labels are shown literally
        (:func:`literal`) unless ``mathtext`` is True.  ``turn``: x labels upright (True),
        level (False) or the longer ones upright ("long"); by default the first of these that
        fits (:data:`TURNS`).  Subword pieces are labelled readably (:func:`tick_labels`;
        ``pieces`` None: detected), and ``x_labels`` / ``y_labels`` keep the labels shown.
        """
        self.x_labels = tick_labels(x_labels, pieces)
        self.y_labels = [str(s) for s in y_labels] if mathtext else tick_labels(y_labels, pieces)
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
        if turn is None:  # level where they fit, else the long ones upright, else all
            fits = [t for t in TURNS if len(x_shown) * _column_pitch(x_shown, tick, t) <= width_pt]
            turn = fits[0] if fits else min(TURNS, key=lambda t: _column_pitch(x_shown, tick, t))
        need_w, need_h = heatmap_room(x_shown, y_shown, tick, turn=turn, pieces=False)
        self.crowded = need_w > width_pt * 1.001 or need_h > height_pt * 1.001
        # up to MAX_LABELLED tokens every one is labelled; in a larger heatmap an axis that
        # lacks the room labels every k-th token (and the last) rather than overprint
        large = max(len(x_shown), len(y_shown)) > MAX_LABELLED
        x_kept = _kept(len(x_shown), need_w, width_pt, large)
        y_kept = _kept(len(y_shown), need_h, height_pt, large)
        self.ax.set_xticks(x_kept, [x_shown[i] for i in x_kept], rotation=0)
        ticks = self.ax.xaxis.get_major_ticks(len(x_kept))  # made now: each keeps its turn
        for tick_, i in zip(ticks, x_kept, strict=True):
            upright = turn is True or (turn == "long" and len(x_shown[i]) > 1)
            tick_.label1.set_rotation(90 if upright else 0)
        self.ax.set_yticks(y_kept, [y_shown[i] for i in y_kept])
        self.ax.tick_params(labelsize=tick)
        for text in self._row_texts.values():
            text.remove()
        self._row_texts = {}
        if reveal_rows:  # the static labels keep their room but are invisible
            for tick_label in self.ax.get_yticklabels():
                tick_label.set_alpha(0.0)
            # and no tick mark: beside a row not yet written it reads as a "-" token
            self.ax.tick_params(axis="y", length=0)
            self._row_texts = {r: self._row_label(r, y_shown[r]) for r in y_kept}

    def record(self) -> dict:
        """Every key and query (as drawn: :func:`literal`) and those labelled in the picture.

        A label counts when its tick is in view with its label switched on, in this axes or
        one sharing the axis or lined up with it and showing the same labels (a grid of panels
        labels its outer edges); with
        ``reveal_rows`` only the rows that hold data are queries yet, labelled by their row
        label.
        """
        rows = range(len(self.y_labels))
        if self.reveal_rows:
            rows = [r for r in rows if np.isfinite(self.data[r]).any()]
            y_shown = [self._row_texts[r].get_text() for r in rows if r in self._row_texts]
        else:
            y_shown = _labels_shown(self.ax, "y", [literal(q) for q in self.y_labels])
        return {
            "keys": [literal(s) for s in self.x_labels],
            "queries": [literal(self.y_labels[r]) for r in rows],
            "keys_labelled": _labels_shown(self.ax, "x", [literal(k) for k in self.x_labels]),
            "queries_labelled": y_shown,
            "crowded": bool(self.crowded),
        }

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


def still_heatmap(
    ax, values, x_labels, y_labels, turn: bool | None = None, pieces: bool | None = None, **kwargs
) -> Heatmap:
    """A :class:`Heatmap` drawn with the rest of its figure (not blitted): a still picture.

    ``kwargs`` go to :class:`Heatmap` (title, sizes, cmap, ...), ``turn`` and ``pieces`` to
    ``set_labels``.
    """
    heat = Heatmap(ax, **kwargs)
    heat.set_labels(x_labels, y_labels, turn=turn, pieces=pieces)
    heat.image.set_animated(False)  # a still picture: drawn with the rest
    heat.set_data(values)
    return heat
