"""Our real-language scores as the deck shows them beside Vaswani et al.'s Table 2: chrF of
every model and the word-by-word dictionary, in domain and on the held-out packages, drawn
from the stored results (``src/attnlab/results/language.json``)."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from attnlab.experiments import language
from attnlab.pictures.canvas import shown_figure
from attnlab.pictures.figures.length_experiment import FigureUnavailable
from attnlab.pictures.figures.shown import shown_width_px
from attnlab.pictures.plots import HALL_TYPE, KIND_COLOURS, KIND_NAMES

__all__ = ["PANELS", "SPLITS", "SYSTEM_NAMES", "language_scores"]

#: The panels: language pair -> its title and the systems drawn, left to right.
PANELS = {
    "en-fr": ("English→French", ["transformer-en-fr", "rnnsearch-en-fr", "rnnenc-en-fr"]),
    "en-de": ("English→German", ["transformer-en-de"]),
}
#: The two test splits, as the legend names them: solid in domain, hatched held out.
SPLITS = {"test": "test split (in domain)", "unseen": "held-out packages (no model saw them)"}
#: How the picture names each model kind, and the dictionary (every panel's last baseline).
SYSTEM_NAMES = {**KIND_NAMES, "transformer": "Transformer", "dictionary": "dictionary"}
_COLOURS = {**KIND_COLOURS, "transformer": "#009E73", "dictionary": "0.55"}


def _training(models: dict, systems: list[str], threads: bool) -> str:
    """ "6.5–9.4 min" (one model: "9.9 min"), from the stored training times; with
    ``threads``, " on one CPU thread" when every model was trained on one."""
    minutes = sorted(models[s]["train_seconds"] / 60 for s in systems)
    span = f"{minutes[0]:.1f}" if len(minutes) == 1 else f"{minutes[0]:.1f}–{minutes[-1]:.1f}"
    one = {models[s]["threads"] for s in systems} == {1}
    return f"{span} min" + (" on one CPU thread" if threads and one else "")


def language_scores(results: dict | None = None) -> Figure:
    """chrF of each model and of the dictionary (IBM Model 1) on both test splits, one panel
    per language pair titled with the models' training time (minutes; the thread count once):
    a bar per split with sacrebleu's 95% paired-bootstrap interval and its score written
    above; the dictionary is compared bar by bar, split by split (one line across both splits
    would set an in-domain bar against a held-out score).  ``results`` defaults to
    :func:`attnlab.experiments.language.load_results`; raises :class:`FigureUnavailable` when
    they are missing or damaged."""
    try:
        results = results or language.load_results()
        evaluated, models = results["evaluation"], results["scores"]["models"]
        panels = {
            pair: [evaluated[pair][s]["systems"] for s in SPLITS] for pair in PANELS
        }  # fmt: skip
    except (FileNotFoundError, ValueError, KeyError, TypeError) as err:
        raise FigureUnavailable(f"no stored real-language results ({err})") from err
    width, shown = 12.0, shown_width_px("language_scores")
    fig, _ = shown_figure(width, 3.35, shown)
    sizes = HALL_TYPE.at(width, shown)
    fig.patch.set_facecolor("white")
    counts = [len(systems) + 1 for _, systems in PANELS.values()]
    axes = fig.subplots(1, len(PANELS), width_ratios=counts, sharey=True)
    for k_ax, (ax, (pair, (title, systems))) in enumerate(zip(axes, PANELS.items(), strict=True)):
        names = [*systems, "dictionary"]
        kinds = [models[s]["kind"] for s in systems] + ["dictionary"]  # the stored model kinds
        x = np.arange(len(names))
        for k, split_scores in enumerate(panels[pair]):
            for i, system in enumerate(names):
                chrf = split_scores[system]["bootstrap"]["chrf"]
                colour = _COLOURS[kinds[i]]
                left = x[i] + (k - 0.5) * 0.4
                ax.bar(left, chrf["score"], 0.38, color=colour, alpha=1.0 if k == 0 else 0.45,
                       hatch=None if k == 0 else "//", edgecolor=colour, linewidth=1.5)  # fmt: skip
                ax.errorbar(left, chrf["score"], yerr=chrf["ci"], color="black", capsize=4, lw=1.5)
                ax.annotate(f"{chrf['score']:.1f}", (left, chrf["score"] + chrf["ci"]),
                            xytext=(0, 3), textcoords="offset points", ha="center",
                            fontsize=sizes.label)  # fmt: skip
        ax.set_xticks(x, [SYSTEM_NAMES[k] for k in kinds])
        ax.set_xlim(-0.6, len(names) - 0.4)
        trained = _training(models, systems, threads=k_ax == 0)  # said once, in the first title
        ax.set_title(f"{title}: {trained}", fontsize=sizes.title)
        ax.tick_params(labelsize=sizes.tick)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("chrF", fontsize=sizes.label)
    axes[0].set_ylim(0, 72)
    axes[0].set_yticks([0, 20, 40, 60])
    legend = [Patch(facecolor="0.55", edgecolor="0.55", label=SPLITS["test"])]
    legend.append(Patch(facecolor="0.55", edgecolor="0.55", alpha=0.45, hatch="//",
                        label=SPLITS["unseen"]))  # fmt: skip
    fig.legend(handles=legend, fontsize=sizes.label, loc="outside lower center", ncols=2,
               frameon=False)  # fmt: skip
    return fig
