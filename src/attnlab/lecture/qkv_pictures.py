r"""One row of self-attention worked end to end on real words, from a shipped Transformer.

For one query token of an English string, one encoder layer and one head, in the lecture's
symbols (pre-LN: the layer's self-attention reads ``LN(x)``; this head's columns of every
projection, biases included)::

    Q = LN(x) W^Q,   K = LN(x) W^K,   V = LN(x) W^V
    score_i = q . k_i / sqrt(d_k),   alpha_i = softmax_i(score_i),   out = sum_i alpha_i v_i

:func:`query_row` computes the row from the model's own Q, K and V
(:meth:`~attnlab.models.transformer.Transformer.encoder_qkv`: the layer's input caught while the
model runs, projected by its own W^Q, W^K, W^V), and :func:`query_row_picture` draws them: the scores as numbers, alpha as
bars with their values, and ``out`` as its largest terms.  :func:`instructive_row` is the
rule that picks a row worth a slide from the test split: the one whose weight goes most to
one other word.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.transforms import blended_transform_factory

from attnlab.decode import _evaluating  # eval mode, no gradients, put back afterwards
from attnlab.lecture.display import OUTPUT_AREA_PX, Picture
from attnlab.pictures import canvas, heatmaps
from attnlab.pictures.typography import MIN_LABEL_PX, literal
from attnlab.text.corpus import load_corpus
from attnlab.text.subwords import CONTINUED
from attnlab.text.vocab import EOS

__all__ = [
    "FUNCTION_WORDS",
    "MATH_PX",
    "query_row",
    "query_row_picture",
    "instructive_row",
]

#: Closed-class English words (articles, determiners, pronouns, prepositions, conjunctions,
#: auxiliaries): never the "other word" of :func:`instructive_row` nor its query.
FUNCTION_WORDS = frozenset(
    """a an the this that these those some any all no each every my your his her its our
    their i you he she it we they me him us them of to in on at for by with from as into onto
    about over under up down out off than and or but nor not so if then is are was were be
    been being am do does did has have had will would can could shall should may might must
    """.split()
)

#: Mathtext sets sub- and superscripts at 0.7 of its size (matplotlib's SHRINK_FACTOR).
SCRIPT_SHRINK = 0.7
#: The size of every text with math (px on the slide): its subscripts are then
#: :data:`~attnlab.pictures.typography.MIN_LABEL_PX` (22 px) tall or more.
MATH_PX = math.ceil(MIN_LABEL_PX / SCRIPT_SHRINK)
TEXT_PX = MIN_LABEL_PX  # every other text: numbers, words, the title
HEIGHT_PX = 460  # the picture's height; its width follows the keys (at most OUTPUT_AREA_PX)
MIN_WIDTH_PX = 640
MARGIN = 12  # px left free at the picture's left and right edges
SPACE = 12  # px between the formula of out and what it leaves out
GAP = 16  # px between the widest texts of neighbouring columns
TERMS = 3  # the largest terms of out = sum_i alpha_i v_i written out


# --------------------------------------------------------------------------- the numbers
def _is_word(label: str) -> bool:
    """A content word: letters only, not one of :data:`FUNCTION_WORDS`."""
    return label.isalpha() and label.lower() not in FUNCTION_WORDS


def _others(labels: list[str], query: int) -> np.ndarray:
    """The keys a query may hand its weight to "elsewhere": the content words other than the
    query and <eos>; failing any, every key but the query and <eos>; failing that, all."""
    n = len(labels)
    rest = np.array([j != query and labels[j] != EOS for j in range(n)])
    words = rest & np.array([_is_word(s) for s in labels])
    return words if words.any() else rest if rest.any() else np.ones(n, dtype=bool)


def _checked_index(value, name: str, count: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < count:
        raise ValueError(f"{name} must be an int in 0..{count - 1} ({what}); got {value!r}")
    return value


def _query_index(query, labels: list[str], tokens: list[str], text: str) -> int:
    """The position of ``query``: an int, or a token as labelled or as read (the first if it
    occurs twice); a one-line ValueError naming the tokens otherwise."""
    if isinstance(query, int) and not isinstance(query, bool):
        return _checked_index(query, "query", len(labels), f"the {len(labels)} tokens")
    if isinstance(query, str):
        folded = [s.casefold() for s in labels]
        for seq, wanted in ((labels, query), (tokens, query), (folded, query.casefold())):
            if wanted in seq:
                return seq.index(wanted)
    raise ValueError(
        f"query {query!r} is not a token of {text!r}; its tokens are: {', '.join(labels)}"
    )


def query_row(model, text: str, query, layer: int = 0, head: int | None = None) -> dict:
    r"""One row of encoder self-attention recomputed from ``model``'s parameters.

    ``query``: a token of ``text`` as the pictures label it ("Select", "##träger") or as the
    model reads it ("▁Select"), or its position; ``layer`` and ``head`` 0-based.  ``head=None``
    takes the head whose largest weight for the query on one other word is the largest
    (content words first: :func:`_others`).  Returns the tokens and their ``labels``, the
    positions ``query``, ``layer``, ``head``, ``d_k``, this head's ``Q``, ``K``, ``V``
    (n, d_k), and the row: ``scores`` q . k_i / sqrt(d_k), ``alpha`` and ``output``
    sum_i alpha_i v_i (d_k,).  Bad input: a one-line ValueError.
    """
    if not hasattr(model, "encoder_layers"):
        raise ValueError(f"query_row needs a Transformer; got a {type(model).__name__}")
    if not isinstance(text, str):
        raise ValueError(f"text must be a string; got {type(text).__name__}")
    L, h = model.config.num_layers, model.config.num_heads
    layer = _checked_index(layer, "layer", L, f"{L} encoder layers")
    if head is not None:
        head = _checked_index(head, "head", h, f"{h} heads")
    prepared = model.prepare(text)  # InvalidInput (a ValueError) for what it cannot read
    tokens = [*model.tokens_of(prepared), EOS]
    labels = [str(s) for s in heatmaps.tick_labels(tokens)]
    q = _query_index(query, labels, tokens, text)

    # the model's own z = LN(x) of that layer, projected by its W^Q, W^K, W^V: (h, n, d_k)
    Q, K, V = (a.astype(np.float64) for a in model.encoder_qkv(text, layer))
    d_k = Q.shape[-1]
    scores = np.einsum("hd,hnd->hn", Q[:, q], K) / math.sqrt(d_k)  # (h, n)
    alpha = np.exp(scores - scores.max(-1, keepdims=True))
    alpha /= alpha.sum(-1, keepdims=True)
    if head is None:
        others = _others(labels, q)
        head = int(np.argmax(np.where(others, alpha, -1.0).max(-1)))
    return {
        "tokens": tokens,
        "labels": labels,
        "query": q,
        "layer": layer,
        "head": head,
        "d_k": d_k,
        "Q": Q[head],
        "K": K[head],
        "V": V[head],
        "scores": scores[head],
        "alpha": alpha[head],
        "output": alpha[head] @ V[head],  # out = sum_i alpha_i v_i
        "text": text,
    }


def _terms(alpha: np.ndarray, count: int = TERMS) -> list[int]:
    """The keys of the ``count`` largest weights, largest first (ties: the earlier key)."""
    return [int(j) for j in np.argsort(-alpha, kind="stable")[:count]]


# --------------------------------------------------------------------------- the picture
def _text_math(label: str) -> str:
    r"""A token inside mathtext's ``\text{}``: backslashes, braces and dollars escaped."""
    for raw, escaped in (("\\", "\\\\"), ("{", r"\{"), ("}", r"\}"), ("$", r"\$")):
        label = label.replace(raw, escaped)
    return label


def _number(x: float, digits: int) -> str:
    return f"{x:.{digits}f}".replace("-", "\u2212")  # a real minus sign


def _formula(labels: list[str], alpha: np.ndarray, shown: list[int]) -> tuple[str, str]:
    r"""``out = 0.93 v_type + ...`` (mathtext) for the keys ``shown``, and what is left out."""
    parts = [rf"{alpha[j]:.2f}\,v_{{\text{{{_text_math(labels[j])}}}}}" for j in shown]
    left = len(alpha) - len(shown)
    more = r" + \cdots" if left else ""
    rest = f"({left} more, together {1 - sum(alpha[j] for j in shown):.2f})" if left else ""
    return r"$\mathrm{out} = " + " + ".join(parts) + more + "$", rest


def _pt(px: float) -> float:
    """Points of a font ``px`` tall in a figure rendered at the px it is shown at (100 dpi)."""
    return px * 72.0 / 100.0


class _Ruler:
    """Widths (px) of texts at the lecture's sizes, measured by an Agg renderer."""

    def __init__(self):
        self.figure = Figure(dpi=100)
        self.renderer = FigureCanvasAgg(self.figure).get_renderer()

    def width(self, text: str, px: float, bold: bool = False) -> float:
        weight = "bold" if bold else "normal"
        drawn = self.figure.text(0, 0, text, fontsize=_pt(px), fontweight=weight)  # as drawn
        width = drawn.get_window_extent(self.renderer).width
        drawn.remove()
        return width


def _layout(row: dict, title: str) -> dict:
    """The picture's geometry (px at the shown size): the gutter of row labels, one column per
    key as wide as its word or number needs, the score digits, the width, the terms of ``out``
    written out.  A one-line ValueError when the keys do not fit side by side, level."""
    ruler = _Ruler()
    labels = [literal(s) for s in row["labels"]]
    n = len(labels)
    row_labels = (
        ruler.width(r"$q \cdot k_i / \sqrt{d_k}$", MATH_PX),
        ruler.width(r"$\alpha_i$", MATH_PX),
        ruler.width("softmax", TEXT_PX),
    )
    gutter = MARGIN + max(row_labels) + 16  # the widest row label, and room before the columns
    value = ruler.width("0.00", TEXT_PX)  # the widest weight written over a bar

    def column(j: int, digits: int) -> float:
        """Column j: its key (the query's in bold), its score or its weight, and a gap."""
        key = ruler.width(labels[j], TEXT_PX, bold=j == row["query"])
        return GAP + max(key, ruler.width(_number(row["scores"][j], digits), TEXT_PX), value)

    for digits in (2, 1):
        cols = [column(j, digits) for j in range(n)]
        width = gutter + sum(cols) + MARGIN
        if width <= OUTPUT_AREA_PX:
            break
    else:
        raise ValueError(
            f"{row['text']!r} reads {n} tokens: {width:.0f} px side by side at {TEXT_PX:.0f} "
            f"px, wider than a slide's output area ({OUTPUT_AREA_PX} px); pick a shorter string"
        )
    shown = _terms(row["alpha"], min(TERMS, n))
    while True:  # as many of the largest terms as the width holds
        formula, rest = _formula(row["labels"], row["alpha"], shown)
        used = 2 * MARGIN + ruler.width(formula, MATH_PX) + SPACE + ruler.width(rest, TEXT_PX)
        if used <= OUTPUT_AREA_PX or len(shown) == 1:
            break
        shown = shown[:-1]
    title_w = 2 * MARGIN + 40 + ruler.width(title, TEXT_PX) + ruler.width("$d_k = 000$", MATH_PX)
    target = min(OUTPUT_AREA_PX, max(width, used, title_w, MIN_WIDTH_PX))
    cols = [c + (target - width) / n for c in cols]  # any room left is shared by the columns
    return {"gutter": gutter, "cols": cols, "width": round(target), "digits": digits,
            "shown": shown, "formula": formula, "rest": rest}  # fmt: skip


def _draw(row: dict, model_name: str, geometry: dict):
    """The figure: the title, the scores, the weights as bars over the keys, and out."""
    labels = [literal(s) for s in row["labels"]]
    n, q, alpha = len(labels), row["query"], row["alpha"]
    W, H = geometry["width"], HEIGHT_PX
    gutter, cols = geometry["gutter"], np.asarray(geometry["cols"])
    edges = np.concatenate([[0.0], np.cumsum(cols)])  # column j: edges[j]..edges[j + 1] px
    centers = (edges[:-1] + edges[1:]) / 2
    fig, _ = canvas.slide_figure(W, H, layout=None)
    pt_text, pt_math = _pt(TEXT_PX), _pt(MATH_PX)

    def y(px_from_top: float) -> float:
        return 1 - px_from_top / H

    # the title, and d_k on its right
    fig.text(MARGIN / W, y(34), _title(row, model_name), fontsize=pt_text, va="baseline")
    fig.text(1 - MARGIN / W, y(34), rf"$d_k = {row['d_k']}$", fontsize=pt_math, ha="right",
             va="baseline")  # fmt: skip

    # the bars of alpha_i over the keys (x in px from the first column's left edge): 0..1 on
    # the same scale for every row
    scores_at, bars_top, bars_bottom = 96, 150, 350
    ax = fig.add_axes((gutter / W, y(bars_bottom), edges[-1] / W, (bars_bottom - bars_top) / H))
    top = set(geometry["shown"])
    colors = ["tab:orange" if j in top else "tab:blue" for j in range(n)]
    ax.bar(centers, alpha, width=min(60.0, 0.62 * cols.min()), color=colors, zorder=2)
    ax.set_xlim(0, edges[-1])
    ax.set_ylim(0, 1)
    for j, a in enumerate(alpha):
        ax.annotate(f"{a:.2f}", (centers[j], a), xytext=(0, 4), textcoords="offset points",
                    ha="center", va="bottom", fontsize=pt_text, annotation_clip=False)  # fmt: skip
    ax.set_xticks(centers, labels, fontsize=pt_text)
    ax.tick_params(axis="x", length=0, pad=8)
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.patch.set_visible(False)
    query_label = ax.get_xticklabels()[q]
    query_label.set_fontweight("bold")
    query_label.set_color("tab:red")

    # the query's own column, shaded from its score to its label
    over = blended_transform_factory(ax.transData, fig.transFigure)
    low, high = bars_bottom + 44, scores_at - 32
    ax.add_patch(Rectangle((edges[q], y(low)), cols[q], (low - high) / H, transform=over,
                           color="0.9", zorder=0, clip_on=False))  # fmt: skip

    # the scores q . k_i / sqrt(d_k), one above each column
    for j, s in enumerate(row["scores"]):
        ax.text(centers[j], y(scores_at), _number(s, geometry["digits"]), transform=over,
                ha="center", va="baseline", fontsize=pt_text)  # fmt: skip

    # the row labels in the gutter
    right = (gutter - 16) / W
    fig.text(right, y(scores_at), r"$q \cdot k_i / \sqrt{d_k}$", fontsize=pt_math, ha="right",
             va="baseline")  # fmt: skip
    middle = (bars_top + bars_bottom) / 2
    fig.text(right, y(middle), r"$\alpha_i$", fontsize=pt_math, ha="right", va="baseline")
    fig.text(right, y(middle + 30), "softmax", fontsize=pt_text, ha="right", va="baseline")
    fig.text(right, y(bars_bottom + 32), "key", fontsize=pt_text, ha="right", va="baseline")

    # what is handed over: out = sum_i alpha_i v_i, its largest terms
    formula = fig.text(MARGIN / W, y(H - 24), geometry["formula"], fontsize=pt_math,
                       va="baseline")  # fmt: skip
    if geometry["rest"]:
        fig.canvas.draw()  # the formula's width is known once drawn
        end = (formula.get_window_extent().x1 + SPACE) / W
        fig.text(end, y(H - 24), geometry["rest"], fontsize=pt_text, va="baseline")
    return fig


def _title(row: dict, model_name: str) -> str:
    label = literal(row["labels"][row["query"]])
    return (
        f"{model_name}, encoder layer {row['layer'] + 1}, head {row['head'] + 1}: "
        f"query \u201c{label}\u201d"
    )


def query_row_picture(model, text: str, query, layer: int = 0, head: int | None = None):
    r"""One row of self-attention on real words: what ``query`` scores, weighs and takes.

    For the query token of ``text`` (see :func:`query_row`; ``layer`` and ``head`` 0-based,
    ``head=None`` the head whose weight for it goes most to one other word), on the real
    weights of ``model``'s encoder: above each key its score $q \cdot k_i / \sqrt{d_k}$,
    the weights $\alpha_i$ = softmax of the scores as bars with their values (the query's
    own column shaded, its label red), and what is handed over, $out = \sum_i \alpha_i v_i$,
    written with its largest terms (their bars orange).  All type is 22 px or more on the
    slide, subscripts included; at most 1205 x 460 px.  Bad input: a one-line ValueError.
    """
    row = query_row(model, text, query, layer, head)
    name = (getattr(model, "card", None) or {}).get("name", type(model).__name__)
    geometry = _layout(row, _title(row, name))
    labels, alpha = row["labels"], row["alpha"]
    shown = geometry["shown"]
    terms = " + ".join(f"{alpha[j]:.2f} v_{labels[j]}" for j in shown)
    left = len(alpha) - len(shown)
    rest = f" + ... ({left} more, together {1 - alpha[shown].sum():.2f})" if left else ""
    summary = (
        f"{_title(row, name)} in {text!r}: scores "
        + ", ".join(f"{s} {v:.2f}" for s, v in zip(labels, row["scores"], strict=True))
        + f"; out = {terms}{rest}"
    )
    data = {**row, "shown": shown, "formula": geometry["formula"], "rest": geometry["rest"]}
    drawn = [labels, row["query"], row["scores"], alpha, row["layer"], row["head"],
             row["d_k"], name]  # fmt: skip
    return Picture(lambda: _draw(row, name, geometry), summary, data,
                   name="query_row_picture", inputs=drawn, code=(__name__,))  # fmt: skip


# --------------------------------------------------------------------------- the rule
def instructive_row(model, pairs=None, layer: int = 0, lengths=(4, 8)) -> dict:
    """The row of self-attention worth a slide, by a rule.

    Over the strings of ``pairs`` (default: the model's test split) that the vocabulary reads
    as whole words (no piece inside a word) in ``lengths`` tokens before <eos>, every head of
    encoder ``layer`` and every query that is a content word (letters only, not in
    :data:`FUNCTION_WORDS`): the row whose largest weight falls on another content word, the
    largest such weight (ties: the first string, then head, then query).  Returns ``text``,
    ``query`` (label), ``position``, ``head``, ``key`` (label) and ``weight``.
    """
    if pairs is None:
        pairs = load_corpus(model.card["task"].split("-")[1])["test"]
    best = None
    for en, _ in pairs:
        prepared = model.prepare(en)
        ids = model.source_ids(prepared)
        labels = [str(s) for s in heatmaps.tick_labels([*model.tokens_of(prepared), EOS])]
        n = len(labels)
        whole = not any(s.startswith(CONTINUED) or s in ("␣", "·") for s in labels)
        if not (whole and lengths[0] <= n - 1 <= lengths[1]):
            continue
        with _evaluating(model):
            model.run_encoder(ids, torch.tensor([n]))  # each attention keeps its weights
        w = model.encoder_layers[layer].self_attn.alpha[0].numpy()  # (h, n, n)
        for head in range(w.shape[0]):
            for i in range(n - 1):
                j = int(np.argmax(w[head, i]))
                if not (_is_word(labels[i]) and _is_word(labels[j]) and j != i):
                    continue
                if best is None or w[head, i, j] > best["weight"]:
                    best = {"text": en, "query": labels[i], "position": i, "head": head,
                            "key": labels[j], "weight": float(w[head, i, j])}  # fmt: skip
    if best is None:
        raise ValueError("no string of these pairs has a row that goes to another word")
    return best
