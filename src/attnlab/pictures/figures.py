r"""Every picture in ``pics/``, drawn by code: ``python -m attnlab.pictures.figures --out DIR``.

One function per picture, each returning a :class:`matplotlib.figure.Figure` (no pyplot,
so nothing is left open):

* :func:`seq2seq_lite`: an encoder RNN reads the source into ONE fixed-length vector, a
  decoder RNN writes the target from it (Sutskever et al., 2014);
* :func:`seq2seq_attention`: Bahdanau attention, :math:`h_i = [\overrightarrow{h}_i;
  \overleftarrow{h}_i]`, weights :math:`\alpha_{t,i}` into :math:`c_t`, and
  :math:`s_t = f(s_{t-1}, y_{t-1}, c_t)` (Bahdanau et al., 2014);
* :func:`seq2seq_attention_length`: our length experiment (needs its stored results);
* :func:`wavenet`: dilated causal convolutions and the paths from the last output;
* :func:`transformer_overview`: the Transformer's encoder and decoder;
* :func:`transformer_attention`: scaled dot-product and multi-head attention;
* :func:`transformer_results`: Table 2 of Vaswani et al. (2017).

Output is deterministic: fixed size and dpi, matplotlib's default style, and no
timestamp or software version in the PNG, so regenerating ``pics/`` changes no byte.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import matplotlib as mpl
from matplotlib import patches
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from attnlab.experiments import length, path_lengths
from attnlab.pictures import plots as deck_pictures
from attnlab.pictures.diagrams import OKABE_ITO as C
from attnlab.pictures.diagrams import Box, arrow, box, canvas, node, path_arrow, text, tint

__all__ = [
    "FIGURES",
    "DPI",
    "SHOWN_WIDTH",
    "shown_px",
    "TABLE2",
    "FigureUnavailable",
    "seq2seq_lite",
    "seq2seq_attention",
    "seq2seq_attention_length",
    "wavenet",
    "causal_conv_reach",
    "transformer_overview",
    "transformer_attention",
    "transformer_results",
    "save",
    "write_all",
    "main",
]

DPI = 150  # pixels per inch of every PNG

#: How wide the deck shows each picture, in % of the 1280 px slide (``<img width="..%">`` in
#: notebooks/07_attention.ipynb; tests/test_figures.py checks the deck agrees).  At that width
#: every text of the picture is at least ``typography.MIN_TEXT_PX`` (18 px) tall.
SHOWN_WIDTH: dict[str, int] = {
    "seq2seq_lite": 90,
    "seq2seq_attention": 90,
    "seq2seq_attention_length": 65,
    "wavenet": 95,
    "transformer_overview": 100,
    "transformer_attention": 80,
    "transformer_results": 85,
}


#: The width of the slide's content area, which ``width="..%"`` refers to: 1237 of the 1280 px
#: (measured in the RISE slideshow by tests/e2e: a 90% picture is shown 1113 px wide).
CONTENT_WIDTH_PX = 1237


def shown_px(name: str) -> float:
    """Width in px at which the deck shows picture ``name`` on the 1280 px slide."""
    return CONTENT_WIDTH_PX * SHOWN_WIDTH[name] / 100


class FigureUnavailable(RuntimeError):
    """A picture that cannot be drawn here (its data or the module drawing it is missing)."""


@contextmanager
def _style() -> Iterator[None]:
    """Matplotlib's defaults (not the user's matplotlibrc) plus our fonts, while drawing."""
    with mpl.rc_context():
        mpl.rcdefaults()
        mpl.rcParams.update(
            {
                "font.family": "DejaVu Sans",
                "mathtext.fontset": "dejavusans",
                "svg.hashsalt": "attnlab",
                "path.simplify": False,
            }
        )
        yield


# ------------------------------------------------------------------------------ seq2seq
def seq2seq_lite() -> Figure:
    """Encoder RNN -> one fixed-length vector (the bottleneck) -> decoder RNN."""
    source = ["how", "are", "you", "?"]
    target = ["wie", "geht", "es", "dir", "?", "<eos>"]
    dec_in = ["<s>", *target[:-1]]  # each output is fed back as the next input
    fig, ax = canvas((-0.6, 20.0), (-0.9, 5.9), inches_per_unit=0.72)
    y_cell, w, h, step = 2.5, 1.15, 0.95, 1.65

    # encoder: h_i = RNN(h_{i-1}, x_i)
    enc = []
    for i, tok in enumerate(source):
        x = 0.8 + step * i
        cell = box(ax, (x, y_cell), w, h, f"$h_{i + 1}$", color=C["sky"], fontsize=20)
        text(ax, (x, 0.45), tok, fontsize=20, va="baseline")
        arrow(ax, (x, 1.0), cell.bottom)
        if enc:
            arrow(ax, enc[-1].right, cell.left)
        enc.append(cell)

    # the bottleneck: a single vector of fixed size, whatever the length of the sentence
    vx, n_slots, slot = 8.6, 6, 0.42
    v_top = y_cell + n_slots * slot / 2
    for k in range(n_slots):
        box(
            ax,
            (vx, v_top - slot * (k + 0.5)),
            0.62,
            slot,
            color=C["orange"],
            fill=0.35,
            rounded=False,
            lw=1.2,
        )
    vec = Box(vx, y_cell, 0.62, n_slots * slot)
    ax.add_patch(
        patches.FancyBboxPatch(
            (vx - 0.31 - 0.12, y_cell - n_slots * slot / 2 - 0.12),
            0.62 + 0.24,
            n_slots * slot + 0.24,
            boxstyle="round,pad=0,rounding_size=0.1",
            facecolor="none",
            edgecolor=C["vermillion"],
            linewidth=3.5,
            zorder=3,
        )
    )
    text(
        ax,
        (vx, v_top + 0.65),
        "fixed-length\nvector",
        fontsize=18,
        bold=True,
        color=C["vermillion"],
        va="bottom",
    )
    text(
        ax,
        (vx, y_cell - n_slots * slot / 2 - 0.35),
        "the whole\nsentence\nmust fit here",
        fontsize=18,
        color=C["vermillion"],
        va="top",
    )
    arrow(ax, enc[-1].right, (vec.left[0] - 0.12, y_cell))

    # decoder: s_t = RNN(s_{t-1}, y_{t-1}), y_t = softmax(W s_t)
    dec = []
    for t, (tok_in, tok_out) in enumerate(zip(dec_in, target, strict=True)):
        x = 10.55 + step * t
        cell = box(ax, (x, y_cell), w, h, f"$s_{t + 1}$", color=C["green"], fontsize=20)
        text(ax, (x, 0.45), tok_in, fontsize=20, color="#555555", va="baseline")
        arrow(ax, (x, 1.0), cell.bottom)
        text(ax, (x, 4.2), tok_out, fontsize=20, bold=True, va="baseline")
        arrow(ax, cell.top, (x, 4.0))
        arrow(ax, dec[-1].right if dec else (vec.right[0] + 0.12, y_cell), cell.left)
        dec.append(cell)

    # group labels
    text(
        ax,
        ((enc[0].x + enc[-1].x) / 2, 5.35),
        "Encoder RNN: reads S",
        fontsize=21,
        bold=True,
        color=C["blue"],
    )
    text(ax, ((enc[0].x + enc[-1].x) / 2, -0.45), "source S", fontsize=18, color="#555555")
    text(
        ax,
        ((dec[0].x + dec[-1].x) / 2, 5.35),
        "Decoder RNN: writes T",
        fontsize=21,
        bold=True,
        color=C["green"],
    )
    text(
        ax,
        ((dec[0].x + dec[-1].x) / 2, -0.45),
        "previous output fed back as the next input",
        fontsize=18,
        color="#555555",
    )
    return fig


def seq2seq_attention() -> Figure:
    r"""Bahdanau attention: bidirectional h_i, weights alpha_{t,i} into c_t, and s_t."""
    alpha = [0.05, 0.10, 0.17, 0.58, 0.10]  # alpha_{t,i}: one softmax over i, sums to 1
    n = len(alpha)
    fig, ax = canvas((-0.9, 20.9), (-0.2, 10.1), inches_per_unit=0.62)
    w, half, step, y_h = 1.35, 0.72, 2.2, 2.8  # y_h: centre of the stacked h_i

    # encoder: h_i = [forward h_i ; backward h_i], one stacked vector per source position
    hs = []
    for i in range(n):
        x = 1.0 + step * i
        fwd = box(
            ax,
            (x, y_h + half / 2),
            w,
            half,
            rf"$\overrightarrow{{h}}_{i + 1}$",
            color=C["sky"],
            fontsize=18,
            rounded=False,
        )
        bwd = box(
            ax,
            (x, y_h - half / 2),
            w,
            half,
            rf"$\overleftarrow{{h}}_{i + 1}$",
            color=C["blue"],
            fill=0.45,
            fontsize=18,
            rounded=False,
        )
        text(ax, (x, 0.45), f"$x_{i + 1}$", fontsize=20)
        arrow(ax, (x, 0.85), bwd.bottom)
        if hs:
            arrow(ax, hs[-1][0].right, fwd.left)  # forward RNN reads left to right
            arrow(ax, bwd.left, hs[-1][1].right)  # backward RNN reads right to left
        hs.append((fwd, bwd))
    text(ax, (hs[0][0].left[0] - 0.3, y_h), "$h_i$", fontsize=20, ha="right")

    # context vector c_t = sum_i alpha_{t,i} h_i, arrows as thick as the weights
    ct = node(ax, (hs[3][0].x, 6.05), 0.55, "$c_t$", color=C["orange"], fill=0.45, fontsize=20)
    for i, ((fwd, _), a) in enumerate(zip(hs, alpha, strict=True)):
        start = fwd.top
        dx, dy = ct.x - start[0], ct.y - start[1]
        dist = (dx**2 + dy**2) ** 0.5
        end = (ct.x - dx / dist * 0.55, ct.y - dy / dist * 0.55)  # on the circle
        arrow(ax, start, end, color=C["vermillion"], lw=1.2 + 14 * a, head=16 + 8 * a)
        label = rf"$\alpha_{{t,{i + 1}}}$" + f"\n{a:.2f}"
        text(
            ax,
            (start[0] + 0.3 * dx, start[1] + 0.3 * dy),
            label,
            fontsize=16,
            color=C["vermillion"],
            bbox={"boxstyle": "round,pad=0.12", "fc": "white", "ec": "none", "alpha": 0.92},
        )

    # decoder: s_t = f(s_{t-1}, y_{t-1}, c_t)
    y_s = 8.1
    s_prev = box(ax, (ct.x - 4.4, y_s), 1.6, 1.0, "$s_{t-1}$", color=C["green"], fontsize=19)
    s_t = box(ax, (ct.x, y_s), 1.6, 1.0, "$s_t$", color=C["green"], fontsize=19)
    arrow(ax, s_prev.right, s_t.left)
    arrow(ax, (s_prev.left[0] - 1.0, y_s), s_prev.left)
    arrow(ax, s_t.right, (s_t.right[0] + 1.0, y_s))
    arrow(ax, ct.top, s_t.bottom, lw=2.5)
    for cell, name in ((s_prev, "$y_{t-1}$"), (s_t, "$y_t$")):
        text(ax, (cell.x, 9.65), name, fontsize=19)
        arrow(ax, cell.top, (cell.x, 9.3))
    arrow(ax, (s_prev.x + 0.55, 9.6), s_t.side("top", 0.2))  # y_{t-1} is fed to s_t
    # the weights depend on the previous decoder state: score(s_{t-1}, h_i)
    arrow(ax, s_prev.bottom, (s_prev.x, 4.85), linestyle="--", color=C["grey"], lw=1.8)
    text(
        ax,
        (s_prev.x - 0.25, 6.05),
        "weights from\n" r"score$(s_{t-1}, h_i)$",
        fontsize=16,
        ha="right",
        color="#555555",
    )

    # the equations, beside the picture
    x0 = 12.7
    ax.add_patch(
        patches.FancyBboxPatch(
            (x0 - 0.3, 0.55),
            8.3,
            8.4,
            boxstyle="round,pad=0,rounding_size=0.3",
            facecolor=tint(C["grey"], 0.88),
            edgecolor="none",
            zorder=0,
        )
    )
    lines = [
        (r"$h_i = [\overrightarrow{h}_i\,;\,\overleftarrow{h}_i]$", "bidirectional encoder"),
        (
            r"$\alpha_{t,i} = \frac{\exp(\mathrm{score}(s_{t-1}, h_i))}"
            r"{\sum_{i'=1}^{n}\exp(\mathrm{score}(s_{t-1}, h_{i'}))}$",
            "weights, sum to 1 over i",
        ),
        (r"$c_t = \sum_{i=1}^{n} \alpha_{t,i}\, h_i$", "context vector"),
        (r"$s_t = f(s_{t-1}, y_{t-1}, c_t)$", "decoder state"),
    ]
    for k, (formula, note) in enumerate(lines):
        y = 8.05 - 1.95 * k
        text(ax, (x0, y), formula, fontsize=20, ha="left")
        text(ax, (x0 + 0.1, y - 0.8), note, fontsize=16, ha="left", color="#555555")
    return fig


# ------------------------------------------------------------------------------ wavenet
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
    fig, ax = canvas((-4.2, 22.0), (-1.6, 6.6), inches_per_unit=0.6)
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


# ------------------------------------------------------------------------- transformer
_ATTN, _NORM, _FF = C["orange"], C["yellow"], C["sky"]
_EMB, _OUT = C["purple"], C["green"]


def _sublayers(
    ax,
    x: float,
    y: float,
    parts: Sequence[tuple[str, str, float]],
    h: float,
    lane_in: tuple[float, float],
) -> tuple[list[Box], float]:
    """A row of pre-LN sublayers: Norm, the sublayer, then + with the residual path.

    ``parts`` holds (label, colour, width); x is where the row starts, ``lane_in`` the point
    the row's input comes from.  Returns the sublayer boxes and the x where the row ends.
    Residual, as in our model (pre-LN): out = x + Sublayer(LayerNorm(x)).
    """
    gap, bar_w, r = 0.38, 0.72, 0.3
    boxes, prev = [], lane_in
    for label, color, w in parts:
        fork = (x - gap * 0.5, y)  # where the residual leaves: before the Norm
        bar = box(
            ax,
            (x + bar_w / 2, y),
            bar_w,
            h,
            "Norm",
            color=_NORM,
            fill=0.5,
            fontsize=17.5,
            rotation=90,
        )
        arrow(ax, prev, bar.left)
        sub = box(ax, (bar.right[0] + gap + w / 2, y), w, h, label, color=color, fontsize=17.5)
        arrow(ax, bar.right, sub.left)
        plus = node(ax, (sub.right[0] + gap + r, y), r, "+", fontsize=18, fill=1.0)
        arrow(ax, sub.right, plus.left)
        top = y + h / 2 + 0.42
        path_arrow(ax, [fork, (fork[0], top), (plus.x, top), plus.top], lw=1.6, color="#555555")
        boxes.append(sub)
        prev = plus.right
        x = plus.right[0] + gap
    return boxes, prev[0]


def transformer_overview() -> Figure:
    """The Transformer (Vaswani et al., 2017) as two lanes: encoder below, decoder above."""
    fig, ax = canvas((-0.5, 26.9), (-0.3, 10.7), inches_per_unit=0.6)
    h = 1.7
    lanes = {"enc": 2.4, "dec": 7.5}
    frames = {}
    for lane, y in lanes.items():
        is_dec = lane == "dec"
        text(ax, (0.95, y), "Outputs\n(shifted right)" if is_dec else "Inputs", fontsize=17.5)
        emb = box(
            ax,
            (3.75, y),
            2.3,
            h,
            "Output\nEmbedding" if is_dec else "Input\nEmbedding",
            color=_EMB,
            fill=0.6,
            fontsize=17.5,
        )
        arrow(ax, (2.25 if is_dec else 1.65, y), emb.left)
        plus = node(ax, (5.6, y), 0.32, "+", fontsize=20, fill=1.0)
        arrow(ax, emb.right, plus.left)
        # positional encoding: a small sine wave in a circle, added to the embedding
        py = y + (1.75 if is_dec else -1.75)
        pe = node(ax, (plus.x, py), 0.42, fill=1.0)
        ax.plot(
            [plus.x - 0.3 + 0.6 * k / 40 for k in range(41)],
            [py + 0.18 * math.sin(2 * math.pi * k / 40) for k in range(41)],
            color="#333333",
            lw=1.6,
            zorder=4,
        )
        arrow(ax, pe.bottom if is_dec else pe.top, plus.top if is_dec else plus.bottom)
        text(ax, (plus.x - 0.6, py), "Positional\nencoding", fontsize=17.5, ha="right")
        if is_dec:
            parts = [
                ("Masked\nself-\nattention", _ATTN, 2.0),
                ("Cross-\nattention", _ATTN, 2.0),
                ("Feed-\nforward", _FF, 1.8),
            ]
        else:
            parts = [("Self-\nattention", _ATTN, 2.0), ("Feed-\nforward", _FF, 1.8)]
        x_block = 6.95
        boxes, x_stack = _sublayers(ax, x_block, y, parts, h, plus.right)
        # the final LayerNorm after the stack (pre-LN models need one)
        final = box(
            ax,
            (x_stack + 0.75, y),
            0.72,
            h,
            "Norm",
            color=_NORM,
            fill=0.5,
            fontsize=17.5,
            rotation=90,
        )
        arrow(ax, (x_stack, y), final.left)
        x_end = final.right[0]
        frames[lane] = (boxes, x_end)
        # the N x frame around the layer stack
        fy0, fy1 = y - h / 2 - 0.35, y + h / 2 + 0.75
        ax.add_patch(
            patches.FancyBboxPatch(
                (x_block - 0.55, fy0),
                x_stack - x_block + 0.55,
                fy1 - fy0,
                boxstyle="round,pad=0,rounding_size=0.25",
                facecolor=tint(C["grey"], 0.9),
                edgecolor="#777777",
                lw=1.5,
                zorder=0.5,
            )
        )
        label_y = fy1 + 0.15 if is_dec else fy0 - 0.15
        text(
            ax,
            (x_stack, label_y),
            ("Decoder" if is_dec else "Encoder") + r"  $\times N$ layers",
            fontsize=17.5,
            bold=True,
            ha="right",
            va="bottom" if is_dec else "top",
        )
    # decoder head: Linear -> Softmax -> probabilities
    y = lanes["dec"]
    _, x_end = frames["dec"]
    lin = box(
        ax, (x_end + 0.95, y), 0.85, h, "Linear", color=_OUT, fill=0.55, fontsize=17.5, rotation=90
    )
    arrow(ax, (x_end, y), lin.left)
    soft = box(
        ax,
        (lin.right[0] + 1.0, y),
        0.85,
        h,
        "Softmax",
        color=_OUT,
        fill=0.55,
        fontsize=17.5,
        rotation=90,
    )
    arrow(ax, lin.right, soft.left)
    arrow(ax, soft.right, (soft.right[0] + 0.55, y))
    text(ax, (soft.right[0] + 0.65, y), "Output\nprobabilities", fontsize=17.5, ha="left")
    # encoder output -> keys and values of the decoder's cross-attention
    enc_boxes, enc_end = frames["enc"]
    cross = frames["dec"][0][1]
    y_mid = (lanes["enc"] + lanes["dec"]) / 2 + 0.1
    path_arrow(
        ax,
        [
            (enc_end, lanes["enc"]),
            (enc_end + 0.6, lanes["enc"]),
            (enc_end + 0.6, y_mid),
            (cross.x, y_mid),
            cross.bottom,
        ],
        lw=2.6,
        color=C["blue"],
    )
    text(
        ax,
        (cross.x + 0.2, y_mid + 0.15),
        "K, V from the encoder\n(cross-attention)",
        fontsize=17.5,
        ha="left",
        va="bottom",
        bold=True,
        color=C["blue"],
    )
    text(
        ax,
        (cross.left[0] - 0.25, y - 0.2),
        "Q",
        fontsize=17.5,
        va="top",
        bold=True,
        color=C["blue"],
    )
    # three reminders in the free corner
    notes = [
        ("Pre-LN (our model):", r"$x + \mathrm{Sublayer}(\mathrm{LayerNorm}(x))$"),
        ("The paper (post-LN):", r"$\mathrm{LayerNorm}(x + \mathrm{Sublayer}(x))$"),
        ("Masked:", r"query $t$ attends only to keys $\leq t$"),
    ]
    for k, (head, body) in enumerate(notes):
        yk = 3.3 - 1.05 * k
        text(ax, (17.2, yk), head, fontsize=17.5, bold=True, ha="left")
        text(ax, (17.2, yk - 0.45), body, fontsize=17.5, ha="left", color="#444444")
    return fig


def _stacked_box(ax, center, w, h, label, color, copies: int = 2, fontsize: float = 15) -> Box:
    """A box with ``copies`` shadows behind it, up and to the right: h parallel heads."""
    off = 0.16
    for k in range(copies, 0, -1):
        box(
            ax,
            (center[0] + k * off, center[1] + k * off),
            w,
            h,
            color=color,
            fill=0.55 + 0.12 * k,
            zorder=1.8 - 0.1 * k,
        )
    return box(ax, center, w, h, label, color=color, fontsize=fontsize)


def transformer_attention() -> Figure:
    r"""Left: softmax(QK^T / sqrt(d_k)) V as a flow of operations; right: multi-head attention."""
    fig, ax = canvas((-0.3, 20.3), (-1.9, 9.6), inches_per_unit=0.62)
    # ---- scaled dot-product attention: Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V
    xc, w, h = 4.5, 3.0, 0.78
    steps = [
        ("MatMul", _ATTN, r"$QK^T$", "-"),
        ("Scale", _NORM, r"$\div\sqrt{d_k}$", "-"),
        ("Mask (opt.)", C["purple"], "future: $-\\infty$", "--"),
        ("SoftMax", _OUT, "rows sum to 1", "-"),
    ]
    ops = []
    for k, (name, color, note, ls) in enumerate(steps):
        y = 1.75 + 1.3 * k
        op = box(ax, (xc, y), w, h, name, color=color, fill=0.55, fontsize=17, linestyle=ls)
        text(ax, (xc - w / 2 - 0.2, y), note, fontsize=17, ha="right", color="#444444")
        if ops:
            arrow(ax, ops[-1].top, op.bottom)
        ops.append(op)
    final = box(
        ax, (xc + 0.6, 1.75 + 1.3 * 4), w + 1.2, h, "MatMul", color=_ATTN, fill=0.55, fontsize=17
    )
    arrow(ax, ops[-1].top, (xc, final.bottom[1]))
    arrow(ax, final.top, (final.x, final.top[1] + 0.75))
    for name, x in (("Q", xc - 0.8), ("K", xc + 0.8), ("V", xc + 2.6)):
        text(ax, (x, 0.1), name, fontsize=20, bold=True)
    arrow(ax, (xc - 0.8, 0.45), ops[0].side("bottom", 0.5 - 0.8 / w))
    arrow(ax, (xc + 0.8, 0.45), ops[0].side("bottom", 0.5 + 0.8 / w))
    arrow(ax, (xc + 2.6, 0.45), (xc + 2.6, final.bottom[1]))
    text(ax, (xc + 0.6, 9.05), "Scaled dot-product attention", fontsize=19, bold=True)
    text(
        ax,
        (xc + 0.6, -1.15),
        r"$\mathrm{Attention}(Q,K,V) = \mathrm{softmax}\left(\frac{QK^T}{\sqrt{d_k}}\right)V$",
        fontsize=19,
    )

    # ---- multi-head attention: Concat(head_1, ..., head_h) W^O
    xm = 14.5
    lin_y, sdpa_y, cat_y, out_y = 2.0, 4.15, 6.0, 7.35
    sdpa = _stacked_box(
        ax, (xm, sdpa_y), 6.0, 1.05, "Scaled Dot-Product\nAttention", _ATTN, fontsize=17
    )
    for name, dx in (("V", -2.1), ("K", 0.0), ("Q", 2.1)):
        lin = _stacked_box(ax, (xm + dx, lin_y), 1.55, 0.78, "Linear", C["sky"], fontsize=17)
        text(ax, (xm + dx, 0.1), name, fontsize=20, bold=True)
        text(ax, (xm + dx + 0.15, 1.05), f"$W_i^{name}$", fontsize=17, ha="left", color="#444444")
        arrow(ax, (xm + dx, 0.45), lin.bottom)
        arrow(ax, lin.top, (xm + dx, sdpa.bottom[1]))
    cat = box(ax, (xm, cat_y), 2.4, 0.78, "Concat", color=_NORM, fill=0.5, fontsize=17)
    arrow(ax, sdpa.top, cat.bottom)
    out = box(ax, (xm, out_y), 2.4, 0.78, "Linear", color=C["sky"], fontsize=17)
    arrow(ax, cat.top, out.bottom)
    arrow(ax, out.top, (xm, out_y + 1.1))
    text(
        ax,
        (xm + 3.55, sdpa_y + 0.55),
        "$h$ heads",
        fontsize=17,
        ha="left",
        color=C["vermillion"],
        bold=True,
    )
    text(ax, (xm + 1.4, out_y), r"$W^O$", fontsize=17, ha="left", color="#444444")
    text(ax, (xm, 9.05), "Multi-head attention", fontsize=19, bold=True)
    text(
        ax,
        (xm, -0.95),
        r"$\mathrm{head}_i = \mathrm{Attention}(QW_i^Q, KW_i^K, VW_i^V)$"
        "\n"
        r"$\mathrm{MultiHead}(Q,K,V) = \mathrm{Concat}(\mathrm{head}_1, \ldots, "
        r"\mathrm{head}_h)\,W^O$",
        fontsize=17,
    )
    ax.plot([9.6, 9.6], [-1.7, 9.4], color="#BBBBBB", lw=1.5)
    return fig


# ------------------------------------------------------------------------------ results
# Vaswani et al. (2017), Table 2: BLEU on newstest2014 and training cost in FLOPs.
# (model, BLEU EN-DE, BLEU EN-FR, cost EN-DE, cost EN-FR); None = not reported.  BLEU is
# kept as printed ("26.30", not 26.3).  For the Transformer the paper gives one cost for
# both language pairs (cost EN-FR is None).
TABLE2: tuple[tuple[str, str | None, str | None, float | None, float | None], ...] = (
    ("ByteNet", "23.75", None, None, None),
    ("Deep-Att + PosUnk", None, "39.2", None, 1.0e20),
    ("GNMT + RL", "24.6", "39.92", 2.3e19, 1.4e20),
    ("ConvS2S", "25.16", "40.46", 9.6e18, 1.5e20),
    ("MoE", "26.03", "40.56", 2.0e19, 1.2e20),
    ("Deep-Att + PosUnk Ensemble", None, "40.4", None, 8.0e20),
    ("GNMT + RL Ensemble", "26.30", "41.16", 1.8e20, 1.1e21),
    ("ConvS2S Ensemble", "26.36", "41.29", 7.7e19, 1.2e21),
    ("Transformer (base model)", "27.3", "38.1", 3.3e18, None),
    ("Transformer (big)", "28.4", "41.8", 2.3e19, None),
)


def _flops(x: float | None) -> str:
    r"""2.3e19 -> $2.3\cdot10^{19}$ (mathtext)."""
    if x is None:
        return ""
    exp = math.floor(math.log10(x))
    return rf"${x / 10**exp:.1f}\cdot10^{{{exp}}}$"


def transformer_results() -> Figure:
    """Vaswani et al. (2017), Table 2, as a table with the Transformer rows highlighted."""
    n = len(TABLE2)
    row_h = 0.72
    fig, ax = canvas((0.0, 20.0), (-2.05, row_h * (n + 2) + 0.45), inches_per_unit=0.62)
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
        "Table 2 of Vaswani et al., \u201cAttention Is All You Need\u201d, arXiv:1706.03762 "
        "(the NeurIPS 2017 version gives 41.0\nfor the big model on EN-FR). BLEU on "
        "newstest2014 English-German (EN-DE) and English-French (EN-FR);\n"
        "training cost in FLOPs. Best BLEU in bold.",
        fontsize=15.5,
        ha="left",
        va="top",
        color="#444444",
    )
    return fig


# ---------------------------------------------------------------------- length experiment
def seq2seq_attention_length(results: dict | None = None) -> Figure:
    """Our length experiment: exact match against input length, the four models of the seed.

    With and without attention, trained on lengths up to 60 and up to 30, drawn by
    :func:`attnlab.pictures.plots.length_figure`.  ``results`` defaults to
    :func:`attnlab.experiments.length.load_results` (the stored results in
    ``src/attnlab/results/``); raises :class:`FigureUnavailable` when they are missing or
    damaged.
    """
    if results is None:
        try:
            results = length.load_results()
        except (FileNotFoundError, ValueError) as err:
            raise FigureUnavailable(f"no stored length-experiment results ({err})") from err
    return deck_pictures.length_figure(results, shown_px("seq2seq_attention_length"))


# ------------------------------------------------------------------------------------ CLI
FIGURES: dict[str, Callable[[], Figure]] = {
    "seq2seq_lite": seq2seq_lite,
    "seq2seq_attention": seq2seq_attention,
    "seq2seq_attention_length": seq2seq_attention_length,
    "wavenet": wavenet,
    "transformer_overview": transformer_overview,
    "transformer_attention": transformer_attention,
    "transformer_results": transformer_results,
}
"""Every picture of ``pics/``: file name (without ``.png``) -> the function drawing it."""


def save(fig: Figure, path: str | Path) -> Path:
    """Write ``fig`` as a PNG at :data:`DPI` with no timestamp or version: same input, same bytes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, facecolor="white", metadata={"Software": None})
    return path


def write_all(
    out: str | Path, names: Sequence[str] | None = None, *, log=None
) -> tuple[list[Path], dict[str, str]]:
    """Draw the pictures ``names`` (default: all of :data:`FIGURES`) into the folder ``out``.

    Returns ``(written, skipped)``: the paths written, and for each picture that could not
    be drawn here (see :class:`FigureUnavailable`) the reason.  ``log`` (e.g. ``print``)
    gets one line per picture.
    """
    names = list(FIGURES) if names is None else list(names)
    unknown = [n for n in names if n not in FIGURES]
    if unknown:
        raise ValueError(f"unknown figure(s) {unknown}; known: {', '.join(FIGURES)}")
    out = Path(out)
    written: list[Path] = []
    skipped: dict[str, str] = {}
    for name in names:
        start = time.perf_counter()
        with _style():
            try:
                fig = FIGURES[name]()
            except FigureUnavailable as err:
                skipped[name] = str(err)
                if log:
                    log(f"skipped {name}.png: {err}")
                continue
            written.append(save(fig, out / f"{name}.png"))
        if log:
            log(f"wrote {written[-1]} ({time.perf_counter() - start:.2f} s)")
    return written, skipped


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m attnlab.pictures.figures --out DIR [--only NAME ...]``; exit status 1 if any was skipped."""
    parser = argparse.ArgumentParser(
        prog="python -m attnlab.pictures.figures",
        description="Draw the lecture's pictures (pics/*.png) with matplotlib.",
    )
    parser.add_argument("--out", type=Path, default=Path("pics"), help="folder (default: pics)")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=list(FIGURES),
        metavar="NAME",
        help=f"draw only these ({', '.join(FIGURES)})",
    )
    args = parser.parse_args(argv)
    try:
        written, skipped = write_all(args.out, args.only, log=print)
    except OSError as err:
        print(f"error: cannot write to {args.out}: {err}", file=sys.stderr)
        return 1
    if skipped:
        print(f"{len(skipped)} picture(s) not drawn: {', '.join(skipped)}", file=sys.stderr)
        return 1
    print(f"{len(written)} picture(s) in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
