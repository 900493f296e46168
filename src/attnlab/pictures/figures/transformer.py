"""The Transformer (Vaswani et al., 2017): the encoder-decoder overview (pre-LN, as our model)
and its attention, scaled dot-product beside multi-head."""

from __future__ import annotations

import math
from collections.abc import Sequence

from matplotlib import patches
from matplotlib.figure import Figure

from attnlab.pictures.diagrams import OKABE_ITO as C
from attnlab.pictures.diagrams import Box, arrow, box, diagram_figure, node, path_arrow, text, tint

__all__ = ["transformer_overview", "transformer_attention"]

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
    fig, ax = diagram_figure((-0.5, 26.9), (-0.3, 10.7), inches_per_unit=0.6)
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
        "Cross-attention: Q from the decoder,\nK and V from the encoder",
        fontsize=17.5,
        ha="left",
        va="bottom",
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
    fig, ax = diagram_figure((-0.3, 20.3), (-1.9, 9.6), inches_per_unit=0.62)
    # ---- scaled dot-product attention: Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V
    xc, w, h = 4.5, 3.0, 0.78
    steps = [
        ("MatMul", _ATTN, r"$QK^T$", "-"),
        ("Scale", _NORM, r"$\div\sqrt{d_k}$", "-"),
        ("Mask (opt.)", C["purple"], "forbidden", "--"),
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
