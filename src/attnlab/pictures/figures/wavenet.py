"""WaveNet's dilated causal convolutions beside ordinary ones, and the paths from the last output
(van den Oord et al., 2016): the path-length argument of Vaswani et al.'s Table 1."""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from attnlab.experiments import path_lengths
from attnlab.pictures.diagrams import OKABE_ITO as C
from attnlab.pictures.diagrams import diagram_figure, node, text

__all__ = ["causal_conv_reach", "wavenet"]


def causal_conv_reach(dilations: Sequence[int], n: int) -> set[tuple[int, int]]:
    """The nodes (layer, position) the last output of a causal conv stack depends on.

    Kernel 2, dilation ``d_l`` at layer ``l``: node (l, t) reads (l - 1, t) and
    (l - 1, t - d_l), never the future.  Layer 0 holds the ``n`` inputs, layer
    ``len(dilations)`` the outputs.  The inputs reached are the last ``1 + sum(d_l)``
    (at most ``n``): the receptive field.  Counted on :mod:`attnlab.experiments.path_lengths`' graph.
    """
    return path_lengths.reach(path_lengths.causal_conv_graph(n, 2, dilations))


def _causal_conv_panel(ax, x0: float, dilations: Sequence[int], n: int, color: str) -> int:
    """One stack of causal convolutions, kernel 2; returns how many inputs the last output sees.

    Lines in ``color`` are the paths from the last output down to the inputs it depends
    on (:func:`causal_conv_reach`); the other connections stay grey.
    """
    dx, dy, r = 0.62, 1.25, 0.16
    pos = {
        (layer, t): (x0 + t * dx, layer * dy)
        for layer in range(len(dilations) + 1)
        for t in range(n)
    }
    reached = causal_conv_reach(dilations, n)
    edges = {True: [], False: []}  # on a path from the last output or not
    for layer, d in enumerate(dilations, start=1):
        for t in range(n):
            for s in (t, t - d):
                if s >= 0:  # every input of a reached node is on a path
                    edges[(layer, t) in reached].append([pos[(layer - 1, s)], pos[(layer, t)]])
    ax.add_collection(LineCollection(edges[False], colors="#C8C8C8", linewidths=1.0, zorder=1))
    ax.add_collection(LineCollection(edges[True], colors=color, linewidths=3.0, zorder=2))
    for (layer, t), xy in pos.items():
        hit = (layer, t) in reached
        node(
            ax,
            xy,
            r,
            color=color if hit else C["grey"],
            fill=0.0 if hit else 0.8,
            lw=1.2,
            edgecolor="#333333" if hit else "#A0A0A0",
        )
    return sum(1 for (layer, _) in reached if layer == 0)


def wavenet() -> Figure:
    """Dilated causal convolutions (dilation 1, 2, 4, 8, kernel 2) beside contiguous ones."""
    n = 16
    dilated, contiguous = (1, 2, 4, 8), (1, 1, 1, 1)
    fig, ax = diagram_figure((-4.2, 22.0), (-1.6, 6.6), inches_per_unit=0.6)
    x_right = 11.6
    seen_dil = _causal_conv_panel(ax, 0.0, dilated, n, C["blue"])
    seen_con = _causal_conv_panel(ax, x_right, contiguous, n, C["vermillion"])
    names = ["Input", "Hidden", "Hidden", "Hidden", "Output"]
    for layer, name in enumerate(names):
        y = layer * 1.25
        text(ax, (-0.45, y), name, fontsize=18, ha="right")
        if layer:
            text(
                ax,
                (-0.45, y - 0.42),
                f"dilation {dilated[layer - 1]}",
                fontsize=18,
                ha="right",
                color="#555555",
            )
    width = (n - 1) * 0.62
    text(
        ax,
        (width / 2, 6.05),
        "Dilated causal convolutions (WaveNet)",
        fontsize=18,
        bold=True,
        color=C["blue"],
    )
    text(
        ax,
        (x_right + width / 2, 6.05),
        "Ordinary causal convolutions (dilation 1)",
        fontsize=18,
        bold=True,
        color=C["vermillion"],
    )
    text(
        ax,
        (width / 2, -0.85),
        f"4 layers, kernel 2: the output sees all {seen_dil} inputs\n"
        r"path length $O(\log_k n)$",
        fontsize=18,
    )
    text(
        ax,
        (x_right + width / 2, -0.85),
        f"4 layers, kernel 2: the output sees only {seen_con} inputs\n"
        r"path length $O(n/k)$",
        fontsize=18,
    )
    return fig
