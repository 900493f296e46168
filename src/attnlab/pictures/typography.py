r"""Typography of the lecture: the type sizes, and how tall a picture's text is on the slide.

:data:`TYPE` holds the lecture's type sizes in CSS pixels *at the size a picture is shown on
the 1280x720 slide* (at least :data:`MIN_TEXT_PX`: it reads from the back of the room).  A
figure ``w`` inches wide shown ``W`` px wide draws a font of ``p`` points ``p * W / (72 * w)``
px tall, whatever its dpi: :func:`shown_px` and its inverse :func:`points`; ``TYPE.at(w, W)``
gives every size in points for that figure, and :func:`text_sizes` measures every text a
figure draws (the tests use it).  Text that comes from outside (model names, tokens, dates)
goes through :func:`literal`, so ``$`` and ``\`` show as typed.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

import matplotlib
from matplotlib import font_manager
from matplotlib.figure import Figure
from matplotlib.text import Text

__all__ = [
    "use_matplotlib_fonts",
    "SLIDE_WIDTH_PX",
    "SLIDE_HEIGHT_PX",
    "MIN_TEXT_PX",
    "MIN_LABEL_PX",
    "TypeSizes",
    "TYPE",
    "label_sizes",
    "points",
    "shown_px",
    "CHAR_WIDTH",
    "literal",
    "text_sizes",
    "smallest_text",
    "RECORD_KEY",
    "picture_record",
]


def use_matplotlib_fonts() -> None:
    """Draw with the fonts matplotlib ships (DejaVu), never a system copy of the same name.

    A machine with Debian's fonts-dejavu has a second "DejaVu Sans", of another version: which
    one matplotlib picks depends on the order of its font cache, and the pictures' bytes (the
    stored frames are compared with the ones drawn now) and their math italics with it.  The
    shipped files go first in the font manager's list, so every machine draws the same."""
    shipped = Path(matplotlib.get_data_path(), "fonts", "ttf")
    manager = font_manager.fontManager
    known = {Path(f.fname) for f in manager.ttflist}
    for path in sorted(shipped.glob("*.ttf")):
        if path not in known:
            manager.addfont(str(path))
    ours = [f for f in manager.ttflist if Path(f.fname).parent == shipped]
    manager.ttflist = ours + [f for f in manager.ttflist if Path(f.fname).parent != shipped]
    manager._findfont_cached.cache_clear()  # answers given before the reorder


use_matplotlib_fonts()

SLIDE_WIDTH_PX, SLIDE_HEIGHT_PX = 1280, 720  # the deck's RISE size
MIN_TEXT_PX = 18.0  # the smallest type that reads from the back of the room
MIN_LABEL_PX = 22.0  # tick and axis labels: the keys and queries a heatmap is read by


@dataclass(frozen=True)
class TypeSizes:
    """Font sizes by role.  :data:`TYPE` holds them in px at the shown size; ``.at`` in points."""

    tick: float = 22.0  # tick labels (heatmap tokens included)
    label: float = 22.0  # axis labels, legends
    title: float = 21.0  # titles
    caption: float = 19.0  # captions and readouts drawn into a picture
    table: float = 20.0  # table text (HTML in widgets)

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


#: About the width of one character of DejaVu Sans, in font sizes: a label of k characters at
#: size s is about ``CHAR_WIDTH * k * s`` wide (the room a picture leaves for its labels).
CHAR_WIDTH = 0.62


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


def text_sizes(fig: Figure, shown_width_px: float, draw: bool = True) -> list[tuple[float, str]]:
    """(px tall on the slide, text) of every text ``fig`` draws, shown ``shown_width_px`` wide.

    Draws the figure first (ticks are made at draw time; ``draw=False`` for a figure drawn
    already, whose buffer must stay as it is).  Counts titles, axis and tick labels (only the
    ticks in view), legends, colorbars, annotations and the texts drawn by blitting
    (animated); leaves out empty and fully transparent texts.
    """
    if draw:
        fig.canvas.draw()
    every, shown = _shown_tick_labels(fig)
    width = fig.get_figwidth()
    out = []
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip() or t.get_alpha() == 0:
            continue
        if id(t) in every and id(t) not in shown:
            continue
        px = round(shown_px(t.get_fontsize(), width, shown_width_px), 6)  # no 17.999999
        out.append((px, t.get_text()))
    return out


def label_sizes(fig: Figure, shown_width_px: float) -> list[tuple[float, str]]:
    """(px tall on the slide, text) of the tick labels in view and the axis labels of ``fig``
    (drawn already): the labels a heatmap's reader reads its keys and queries by."""
    _, shown = _shown_tick_labels(fig)
    axis_labels = {id(a.xaxis.label) for a in fig.axes} | {id(a.yaxis.label) for a in fig.axes}
    width = fig.get_figwidth()
    return [
        (round(shown_px(t.get_fontsize(), width, shown_width_px), 6), t.get_text())
        for t in fig.findobj(Text)
        if (id(t) in shown or id(t) in axis_labels)
        and t.get_visible()
        and t.get_text().strip()
        and t.get_alpha() != 0
    ]


def smallest_text(fig: Figure, shown_width_px: float) -> tuple[float, str]:
    """The smallest text of ``fig`` on the slide: (px, text)."""
    return min(text_sizes(fig, shown_width_px))


#: The PNG text chunk in which ``canvas.png_bytes`` records what the picture draws: the
#: browser tests read it from every picture on every slide (with the width it is shown at).
RECORD_KEY = "attnlab"


def picture_record(fig: Figure) -> dict:
    """What a PNG of ``fig`` (drawn already) shows, in the PNG's own pixels.

    ``min_text_px`` and ``min_text``: the smallest text, as tall as it is in the PNG (on the
    slide: times shown width / PNG width); ``min_label_px`` and ``min_label``: the same of its
    tick and axis labels; ``heatmaps``: each heatmap's keys and queries and
    those labelled (``Heatmap.record``).
    """
    sizes = text_sizes(fig, fig.get_figwidth() * fig.dpi, draw=False)
    px, text = min(sizes) if sizes else (0.0, "")
    labels = label_sizes(fig, fig.get_figwidth() * fig.dpi)
    label_px, label = min(labels) if labels else (0.0, "")
    return {
        "min_text_px": round(px, 2),
        "min_text": text[:40],
        "min_label_px": round(label_px, 2),  # tick and axis labels
        "min_label": label[:40],
        "heatmaps": [h.record() for h in getattr(fig, "_attnlab_heatmaps", [])],
    }
