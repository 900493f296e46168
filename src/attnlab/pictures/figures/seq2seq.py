r"""The two RNN seq2seq diagrams: the fixed-length bottleneck and Bahdanau attention.

* :func:`seq2seq_lite`: an encoder RNN reads the source into ONE fixed-length vector, a
  decoder RNN writes the target from it (Sutskever et al., 2014);
* :func:`seq2seq_attention`: Bahdanau attention, :math:`h_i = [\overrightarrow{h}_i;
  \overleftarrow{h}_i]`, weights :math:`\alpha_{t,i}` into :math:`c_t`, and
  :math:`s_t = f(s_{t-1}, y_{t-1}, c_t)` (Bahdanau et al., 2014).
"""

from __future__ import annotations

from matplotlib import patches
from matplotlib.figure import Figure

from attnlab.pictures.diagrams import OKABE_ITO as C
from attnlab.pictures.diagrams import Box, arrow, box, diagram_figure, node, text, tint

__all__ = ["seq2seq_lite", "seq2seq_attention"]


def seq2seq_lite() -> Figure:
    """Encoder RNN -> one fixed-length vector (the bottleneck) -> decoder RNN."""
    source = ["how", "are", "you", "?"]
    target = ["wie", "geht", "es", "dir", "?", "<eos>"]
    dec_in = ["<s>", *target[:-1]]  # each output is fed back as the next input
    fig, ax = diagram_figure((-0.6, 20.0), (-0.9, 5.9), inches_per_unit=0.72)
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
    fig, ax = diagram_figure((-0.9, 20.9), (-0.2, 10.1), inches_per_unit=0.62)
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
            fontsize=18,
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
    # c_t reaches the output too: p(y_t | y_<t, x) = g(y_{t-1}, s_t, c_t)
    arrow(ax, ct.right, (s_t.x + 0.3, 9.35), rad=0.5, lw=2.0, color=C["orange"])
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
        fontsize=18,
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
    # (formula, what it is, its height, the note's offset to the right: None = below it)
    lines = [
        (
            r"$h_i = [\overrightarrow{h}_i\,;\,\overleftarrow{h}_i]$",
            "bidirectional encoder",
            8.3,
            2.9,
        ),
        (
            # a softmax over i, written without a fraction: a fraction's type is 0.7 as tall
            r"$\alpha_{t,i} = \mathrm{softmax}_i\,\mathrm{score}(s_{t-1}, h_i)$",
            "weights: positive, sum to 1 over i",
            6.75,
            None,
        ),
        (r"$c_t = \sum_{i=1}^{n} \alpha_{t,i}\, h_i$", "context vector", 4.5, 3.1),
        (r"$s_t = f(s_{t-1}, y_{t-1}, c_t)$", "decoder state", 2.95, 4.5),
        (r"$p(y_t \mid y_{<t}, x) = g(y_{t-1}, s_t, c_t)$", "output", 1.45, 6.5),
    ]
    for formula, note, y, dx in lines:
        text(ax, (x0, y), formula, fontsize=20, ha="left")
        where = (x0 + 0.1, y - 0.95) if dx is None else (x0 + dx, y)
        text(ax, where, note, fontsize=18, ha="left", color="#555555")
    return fig
