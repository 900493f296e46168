"""Pictures only the deck shows: the length experiment, GRU against self-attention timings,
the Transformer's head grid and the causal mask (drawn for :mod:`attnlab.lecture` and
:mod:`attnlab.pictures.figures`).
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import NullLocator

from attnlab.pictures.canvas import new_figure, shown_figure, slide_figure
from attnlab.pictures.heatmaps import still_heatmap
from attnlab.pictures.typography import TYPE, TypeSizes, literal

__all__ = [
    "length_curves",
    "length_figure",
    "real_language_by_length",
    "timings",
    "head_grid",
    "mask_and_weights",
]


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

    ranges: list[tuple[float, float]] = []
    for name, info in (config.get("models") or {}).items():
        r = as_range(info.get("train_lengths")) if isinstance(info, dict) else None
        if r and name in models and r not in ranges:
            ranges.append(r)
    r = as_range(config.get("train_lengths"))
    if r and r not in ranges:
        ranges.append(r)
    # Several ranges: a shading holds for the models of its range only, and says which.
    label = (
        "longer than the ≤ {:g} models saw"
        if len(ranges) > 1
        else "longer than trained on (≤ {:g})"
    )
    return [(lo, hi, label.format(hi)) for lo, hi in ranges]


#: Type for static pictures with room to spare (px at the shown size): 22 px ticks and labels.
HALL_TYPE = TypeSizes(tick=22.0, label=22.0, title=24.0, caption=22.0, table=22.0)

#: The lecture's names of the model kinds in the length experiment.
KIND_NAMES = {"rnnencdec": "RNNEncDec", "rnnsearch": "RNNSearch"}
#: Colour by attention, line style by training lengths (as Bahdanau et al.'s Fig. 2).
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
    results: dict,
    shown_width_px: float = 845,
    metric: str = "exact_match",
    by_length: dict | None = None,
) -> Figure:
    """The length experiment as Bahdanau et al.'s Fig. 2: every model's curve, named for the lecture.

    Attention in blue, none in vermillion; trained on the longest lengths solid, on shorter
    ones dashed and dodged 1.5 symbols right (equal curves stay apart); the lengths beyond the shorter training range shaded; the legend below the
    axes, where it hides no point.  With ``by_length`` (the ``attention_by_length`` of the
    real-language results) a second panel beside it: the same two designs on English->French
    by English length (:func:`real_language_by_length`).  Sized so that its text is
    :data:`TYPE` on the slide when shown ``shown_width_px`` wide.
    """
    width = 12.0
    fig, sizes = shown_figure(width, 5.0 if by_length else 6.0, shown_width_px)
    if by_length:  # a static picture: the hall's larger type fits
        sizes = HALL_TYPE.at(width, shown_width_px)
    fig.patch.set_facecolor("white")
    if by_length:
        ax, real = fig.subplots(1, 2, width_ratios=[1.55, 1])
    else:
        ax, real = fig.add_subplot(), None
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
            # dodged right by 1.5 symbols: where two models score the same (both RNNEncDecs
            # fail alike), both curves stay visible rather than one hiding the other
            line.set_xdata(np.asarray(line.get_xdata(), dtype=float) + 1.5)
    ax.get_legend().remove()
    handles, labels = ax.get_legend_handles_labels()
    if by_length:  # the shaded lengths named inside the shading: two rows of legend
        shaded = [i for i, h in enumerate(handles) if not isinstance(h, Line2D)]
        lo, hi = ax.get_xlim()
        for i in reversed(shaded):
            handles.pop(i)
            label = labels.pop(i).replace("than ", "than\n", 1)  # two lines in the shading
            ax.text(hi - 0.05 * (hi - lo), 0.6, label, fontsize=sizes.label, color="0.3",
                    ha="right", va="center")  # fmt: skip
    fig.legend(
        handles, labels, fontsize=sizes.label, loc="outside lower center", ncols=2, frameon=False
    )
    if real is None:
        ax.set_title(
            "Exact match against input length (reverse a digit string)", fontsize=sizes.title
        )
        return fig
    ax.set_title("Reversing digit strings", fontsize=sizes.title)
    real_language_by_length(by_length, real, sizes)
    return fig


def real_language_by_length(by_length: dict, ax, sizes, split: str = "unseen") -> None:
    """RNNSearch against RNNEncDec on English->French, chrF by English length (words), on
    ``split`` (default: the held-out packages), each point with sacrebleu's 95% interval and
    attention's gain written above it; the word-by-word dictionary dashed, where measured."""
    buckets = by_length["splits"][split]
    names = list(buckets)
    x = np.arange(len(names))
    attention, none = by_length["systems"]
    for name, kind in ((none, "rnnencdec"), (attention, "rnnsearch")):
        chrf = [buckets[b]["systems"][name]["chrf"] for b in names]
        ax.errorbar(
            x,
            [c["score"] for c in chrf],
            yerr=[c["ci"] for c in chrf],
            color=KIND_COLOURS[kind],
            marker="o",
            lw=3.0,
            ms=9,
            capsize=6,
            elinewidth=2,
        )
    if all("dictionary" in buckets[b]["systems"] for b in names):  # the baseline to beat
        chrf = [buckets[b]["systems"]["dictionary"]["chrf"]["score"] for b in names]
        ax.plot(x, chrf, ls="--", color="0.45", lw=2.5, marker="D", ms=7)
        ax.annotate("dictionary", (x[-1], chrf[-1]), xytext=(0, -10), textcoords="offset points",
                    ha="right", va="top", fontsize=sizes.label, color="0.35")  # fmt: skip
    for i, b in enumerate(names):
        top = buckets[b]["systems"][attention]["chrf"]
        a, n = top["score"], buckets[b]["systems"][none]["chrf"]["score"]
        ax.annotate(
            f"+{a - n:.1f}" if a >= n else f"{a - n:.1f}",
            (i, a + top["ci"]),
            xytext=(0, 4),
            textcoords="offset points",
            ha="center",
            fontsize=sizes.label,
            color=KIND_COLOURS["rnnsearch"],
        )
    ax.set_xticks(x, names)
    ax.set_xlim(-0.4, len(names) - 0.6)
    high = max(  # the top of the highest interval
        c["score"] + c["ci"]
        for b in names
        for c in (s["chrf"] for s in buckets[b]["systems"].values())
    )
    ax.set_ylim(0, 1.2 * high)  # from 0, so that the gaps read at their size; room for the gains
    ax.tick_params(labelsize=sizes.tick)
    ax.set_xlabel("English length (words)", fontsize=sizes.label)
    ax.set_ylabel("chrF", fontsize=sizes.label)
    ax.set_title("English→French, held out", fontsize=sizes.title)
    ax.grid(alpha=0.3)


# --------------------------------------------------------------------------- timings
def timings(result: dict, shown_width_px: float = 780) -> Figure:
    """Log-log forward time of a GRU against self-attention (``lecture.time_rnn_vs_attention``).

    ``result`` has ``n``, ``rnn_ms`` and ``attention_ms``.  The x ticks are the measured n
    (plain numbers, no overlapping powers of ten), the y ticks a few round numbers.
    """
    width = 7.8
    fig, sizes = shown_figure(width, 3.9, shown_width_px)
    ax = fig.add_subplot()
    n = list(result["n"])
    ax.loglog(n, result["rnn_ms"], "o-", lw=2.5, ms=8, label="GRU: n steps one after another")
    ax.loglog(n, result["attention_ms"], "s-", lw=2.5, ms=8, label="self-attention: all at once")
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticks(n, [str(v) for v in n])
    values = [v for v in (*result["rnn_ms"], *result["attention_ms"]) if v > 0]
    lo, hi = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))
    ax.yaxis.set_minor_locator(NullLocator())
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
    """The mask (True = may attend) beside the masked softmax weights, positions 1..n; the
    mask's hidden cells dark and the allowed ones white, as most references shade what is
    hidden; the weights' title says how much of it lands on future keys (exactly 0 with the
    causal mask)."""
    mask, weights = np.asarray(mask, dtype=float), np.asarray(weights, dtype=float)
    n = mask.shape[-1]
    future = float(np.triu(weights, k=1).sum())  # weight on keys j > t, all queries
    width = 9.0
    fig, sizes = shown_figure(width, 4.0, shown_width_px)
    axes = fig.subplots(1, 2)
    positions = [str(i + 1) for i in range(n)]
    panels = (
        (1.0 - mask, "Greys", "the mask: grey = hidden (False)"),
        (weights, "viridis", f"weights; on future keys: {future:.2f}"),
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
