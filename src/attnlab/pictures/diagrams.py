"""Small drawing primitives for the lecture's diagrams: boxes, nodes, arrows, a figure.

Every picture in ``pics/`` is drawn from these few pieces by :mod:`attnlab.pictures.figures`.
A diagram lives on one axes in *data units* with an equal aspect ratio, so a box of
width 2 and height 1 really is twice as wide as it is tall, and one unit is the same
length in x and y.  :func:`diagram_figure` sizes the figure from the data limits, so nothing is
stretched and there is no white margin to crop.

Colours are the Okabe-Ito palette, which stays distinguishable with the common kinds of
colour blindness; boxes use light tints of it with a dark edge, so black text on them
reads well on a projector.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from matplotlib import patches
from matplotlib.axes import Axes
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure

from attnlab.pictures.canvas import new_figure

__all__ = [
    "OKABE_ITO",
    "Box",
    "tint",
    "diagram_figure",
    "box",
    "node",
    "arrow",
    "path_arrow",
    "text",
]

Point = tuple[float, float]

# Okabe & Ito (2008), "Color Universal Design": safe for the common colour blindnesses.
OKABE_ITO: dict[str, str] = {
    "orange": "#E69F00",
    "sky": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "black": "#000000",
    "grey": "#8C8C8C",
}

EDGE = "#333333"  # the dark edge every box gets


@dataclass(frozen=True)
class Box:
    """An axis-aligned rectangle by its centre ``(x, y)``, width ``w`` and height ``h``.

    The anchors (``top``, ``bottom``, ``left``, ``right``) are the midpoints of the sides,
    where arrows start and end; :meth:`side` gives any other point on a side.
    """

    x: float
    y: float
    w: float
    h: float

    @property
    def center(self) -> Point:
        return (self.x, self.y)

    @property
    def top(self) -> Point:
        return (self.x, self.y + self.h / 2)

    @property
    def bottom(self) -> Point:
        return (self.x, self.y - self.h / 2)

    @property
    def left(self) -> Point:
        return (self.x - self.w / 2, self.y)

    @property
    def right(self) -> Point:
        return (self.x + self.w / 2, self.y)

    def side(self, name: str, frac: float = 0.5) -> Point:
        """A point on side ``name`` ("top", "bottom", "left", "right").

        ``frac`` runs from 0 to 1 along the side: left to right on top and bottom,
        bottom to top on left and right.
        """
        if not 0.0 <= frac <= 1.0:
            raise ValueError(f"frac must lie in [0, 1], got {frac}")
        x0, y0 = self.x - self.w / 2, self.y - self.h / 2
        if name == "top":
            return (x0 + frac * self.w, y0 + self.h)
        if name == "bottom":
            return (x0 + frac * self.w, y0)
        if name == "left":
            return (x0, y0 + frac * self.h)
        if name == "right":
            return (x0 + self.w, y0 + frac * self.h)
        raise ValueError(f"side must be 'top', 'bottom', 'left' or 'right', got {name!r}")


def tint(color: str, amount: float = 0.65) -> tuple[float, float, float]:
    """``color`` mixed with white: ``amount`` 0 keeps it, 1 gives white."""
    r, g, b = to_rgb(color)
    return (r + (1 - r) * amount, g + (1 - g) * amount, b + (1 - b) * amount)


def diagram_figure(
    xlim: tuple[float, float], ylim: tuple[float, float], inches_per_unit: float = 0.8
) -> tuple[Figure, Axes]:
    """A figure with one frameless axes spanning it, ``inches_per_unit`` inches per data unit.

    The figure size follows from the limits (``width = (x1 - x0) * inches_per_unit``), so
    the aspect is equal without matplotlib adding margins.  The figure is a
    :func:`attnlab.pictures.canvas.new_figure`: no pyplot, freed when it goes out of scope.
    """
    (x0, x1), (y0, y1) = xlim, ylim
    if x1 <= x0 or y1 <= y0:
        raise ValueError(f"empty limits: xlim={xlim}, ylim={ylim}")
    fig = new_figure((x1 - x0) * inches_per_unit, (y1 - y0) * inches_per_unit)
    fig.patch.set_facecolor("white")
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_aspect("equal")
    ax.set_axis_off()
    return fig, ax


def box(
    ax: Axes,
    center: Point,
    w: float,
    h: float,
    label: str = "",
    *,
    color: str = OKABE_ITO["sky"],
    fill: float = 0.65,
    fontsize: float = 15,
    rotation: float = 0,
    bold: bool = False,
    rounded: bool = True,
    lw: float = 1.6,
    edgecolor: str = EDGE,
    linestyle: str = "-",
    zorder: float = 2,
) -> Box:
    """Draw a (rounded) box of a light tint of ``color`` with ``label`` centred in it."""
    x, y = center
    pad = min(w, h) * 0.12 if rounded else 0.0
    style = f"round,pad=0,rounding_size={pad}" if rounded else "square,pad=0"
    ax.add_patch(
        patches.FancyBboxPatch(
            (x - w / 2, y - h / 2),
            w,
            h,
            boxstyle=style,
            facecolor=tint(color, fill) if fill < 1 else "none",
            edgecolor=edgecolor,
            linewidth=lw,
            linestyle=linestyle,
            zorder=zorder,
        )
    )
    if label:
        text(ax, center, label, fontsize=fontsize, rotation=rotation, bold=bold, zorder=zorder)
    return Box(x, y, w, h)


def node(
    ax: Axes,
    center: Point,
    r: float,
    label: str = "",
    *,
    color: str = OKABE_ITO["sky"],
    fill: float = 0.65,
    fontsize: float = 15,
    lw: float = 1.6,
    edgecolor: str = EDGE,
    zorder: float = 3,
) -> Box:
    """Draw a circle of radius ``r``; returns its bounding :class:`Box` for the anchors."""
    ax.add_patch(
        patches.Circle(
            center,
            r,
            facecolor=tint(color, fill) if fill < 1 else "none",
            edgecolor=edgecolor,
            linewidth=lw,
            zorder=zorder,
        )
    )
    if label:
        text(ax, center, label, fontsize=fontsize, zorder=zorder)
    return Box(center[0], center[1], 2 * r, 2 * r)


def arrow(
    ax: Axes,
    start: Point,
    end: Point,
    *,
    color: str = EDGE,
    lw: float = 1.8,
    head: float | None = None,
    style: str = "-|>",
    linestyle: str = "-",
    rad: float = 0.0,
    alpha: float = 1.0,
    zorder: float = 1.5,
) -> patches.FancyArrowPatch:
    """An arrow from ``start`` to ``end`` whose tip touches ``end`` exactly.

    ``head`` is the arrow head size in points (it grows with ``lw`` when not given);
    ``rad`` bends the arrow into an arc (0 = straight); ``style="-"`` draws a plain line.
    """
    if head is None:
        head = 12 + 2.5 * lw
    patch = patches.FancyArrowPatch(
        start,
        end,
        arrowstyle=style,
        mutation_scale=head,
        color=color,
        linewidth=lw,
        linestyle=linestyle,
        connectionstyle=f"arc3,rad={rad}",
        shrinkA=0,
        shrinkB=0,
        alpha=alpha,
        joinstyle="miter",
        capstyle="butt",
        zorder=zorder,
    )
    ax.add_patch(patch)
    return patch


def path_arrow(
    ax: Axes,
    points: Sequence[Point],
    *,
    color: str = EDGE,
    lw: float = 1.8,
    head: float | None = None,
    linestyle: str = "-",
    zorder: float = 1.5,
) -> None:
    """An arrow along a polyline (an elbow connector): lines, then a head on the last leg."""
    if len(points) < 2:
        raise ValueError(f"path_arrow needs at least 2 points, got {len(points)}")
    xs, ys = zip(*points[:-1], strict=True)
    if len(points) > 2:
        ax.plot(
            xs,
            ys,
            color=color,
            lw=lw,
            linestyle=linestyle,
            zorder=zorder,
            solid_capstyle="projecting",
            solid_joinstyle="miter",
        )
    arrow(
        ax,
        points[-2],
        points[-1],
        color=color,
        lw=lw,
        head=head,
        linestyle=linestyle,
        zorder=zorder,
    )


def text(
    ax: Axes,
    xy: Point,
    label: str,
    *,
    fontsize: float = 15,
    color: str = "black",
    bold: bool = False,
    ha: str = "center",
    va: str = "center",
    rotation: float = 0,
    zorder: float = 4,
    **kwargs,
):
    """Text at ``xy`` (centred by default); mathtext (``$...$``) works as everywhere."""
    return ax.text(
        xy[0],
        xy[1],
        label,
        fontsize=fontsize,
        color=color,
        fontweight="bold" if bold else "normal",
        ha=ha,
        va=va,
        rotation=rotation,
        zorder=zorder,
        linespacing=1.15,
        **kwargs,
    )
