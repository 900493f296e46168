"""Table 2 of Vaswani et al. (2017) as a picture, the Transformer rows highlighted."""

from __future__ import annotations

import math

from matplotlib import patches
from matplotlib.figure import Figure

from attnlab.experiments.vaswani import TABLE2
from attnlab.pictures.diagrams import OKABE_ITO as C
from attnlab.pictures.diagrams import diagram_figure, text, tint

__all__ = ["transformer_results"]


def _flops(x: float | None) -> str:
    r"""2.3e19 -> $2.3\cdot10^{19}$ (mathtext)."""
    if x is None:
        return ""
    exp = math.floor(math.log10(x))
    return rf"${x / 10**exp:.1f}\cdot10^{{{exp}}}$"


def transformer_results() -> Figure:
    """Vaswani et al. (2017), Table 2, as a table with the Transformer rows highlighted."""
    n = len(TABLE2)
    row_h = 0.66
    fig, ax = diagram_figure((0.0, 20.0), (-1.45, row_h * (n + 2) + 0.45), inches_per_unit=0.62)
    cols = [7.7, 10.4, 13.0, 15.8, 18.6]  # centres of the four number columns (x of model: 0.4)
    top = row_h * (n + 2) + 0.1
    hi = tint(C["orange"], 0.7)

    def rule(y: float, lw: float = 1.2) -> None:
        ax.plot([0.3, 19.7], [y, y], color="black", lw=lw, zorder=3)

    # two header rows: the groups, then the language pairs
    y1, y2 = top - row_h / 2, top - 1.5 * row_h
    text(ax, (0.45, (y1 + y2) / 2), "Model", fontsize=17, bold=True, ha="left")
    text(ax, ((cols[1] + cols[2]) / 2, y1), "BLEU", fontsize=17, bold=True)
    text(ax, ((cols[3] + cols[4]) / 2, y1), "Training cost (FLOPs)", fontsize=17, bold=True)
    for lo, hi_x in ((cols[1], cols[2]), (cols[3], cols[4])):
        ax.plot([lo - 1.1, hi_x + 1.1], [y1 - 0.32, y1 - 0.32], color="black", lw=0.8)
    for x, pair in zip(cols[1:], ["EN-DE", "EN-FR", "EN-DE", "EN-FR"], strict=True):
        text(ax, (x, y2), pair, fontsize=16, bold=True)
    rule(top, 2.0)
    rule(top - 2 * row_h)

    best_de = max((r[1] for r in TABLE2 if r[1] is not None), key=float)
    best_fr = max((r[2] for r in TABLE2 if r[2] is not None), key=float)
    for k, (name, de, fr, cost_de, cost_fr) in enumerate(TABLE2):
        y = top - row_h * (k + 2.5)
        base = {"va": "baseline", "fontsize": 16}  # one baseline: 10^x must not lift a cell
        yb = y - 0.17
        ours = name.startswith("Transformer")
        if ours:
            ax.add_patch(
                patches.Rectangle(
                    (0.3, y - row_h / 2), 19.4, row_h, facecolor=hi, edgecolor="none", zorder=0
                )
            )
        text(ax, (0.45, yb), name, ha="left", bold=ours, **base)
        for x, value, best in ((cols[1], de, best_de), (cols[2], fr, best_fr)):
            text(ax, (x, yb), value or "", bold=value == best, **base)
        if ours:  # one cost for both language pairs
            text(ax, ((cols[3] + cols[4]) / 2, yb), _flops(cost_de), **base)
        else:
            text(ax, (cols[3], yb), _flops(cost_de), **base)
            text(ax, (cols[4], yb), _flops(cost_fr), **base)
        if name in ("MoE", "ConvS2S Ensemble"):  # single models | ensembles | Transformer
            rule(y - row_h / 2, 0.8)
    rule(top - row_h * (n + 2), 2.0)
    text(
        ax,
        (0.35, -0.35),
        "Table 2 of Vaswani et al., arXiv:1706.03762 (NIPS 2017: 41.0 for the big model on "
        "EN-FR).\nBLEU on newstest2014, English-German and English-French; training cost in "
        "FLOPs; best BLEU in bold.",
        fontsize=17,
        ha="left",
        va="top",
        color="#444444",
    )
    return fig
