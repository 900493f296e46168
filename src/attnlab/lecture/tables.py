"""The deck's tables read from files: the shipped models' cards and the real-language results.

No weights are loaded and nothing is measured here: each table shows what the training run
wrote into a model's card, or what :mod:`attnlab.experiments.language` stored.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attnlab.experiments.language import load_results
from attnlab.lecture.display import Table
from attnlab.training.checkpoints import CHECKPOINT_DIR, available, read_card

__all__ = [
    "model_card",
    "model_table",
    "rare_words_counts",
    "language_table",
    "vaswani_table",
    "head_roles_table",
]


def model_card(name: str) -> dict:
    """A shipped model's card (JSON), read without loading its weights."""

    if name not in available():
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(available())}")
    return read_card(CHECKPOINT_DIR / f"{name}.json")


def model_table(names: Sequence[str] = ("rnnenc-dates", "rnnsearch-dates", "transformer-dates")):
    """Our own "results table": accuracy, parameters, steps and training time of shipped models.

    The figures come from each checkpoint's card (written by the training script when it
    saved the model), so they are what our training measured, not numbers typed into the
    deck; no weights are loaded.  The time is the wall-clock time of the whole training run
    (held-out measurements included) on one CPU thread of a shared 2-core machine; the steps
    are the work, and ``stopped`` says why training ended (target reached or step budget).
    """
    rows = []
    for name in names:
        card = model_card(name)
        acc = card.get("heldout_accuracy")
        params = card.get("parameters")
        seconds = card.get("train_seconds")
        reached = card.get("reached_target_at_step")
        target = (card.get("train") or {}).get("target")
        stopped = f"reached {target:.1%}" if reached is not None else "step budget"
        rows.append(
            [
                name,
                f"{100 * acc:.2f}%" if acc is not None else "n/a",
                f"{params:,}" if params is not None else "n/a",
                f"{card.get('steps', 'n/a')} ({stopped})",
                f"{seconds:.0f} s" if seconds is not None else "n/a",
            ]
        )
    return Table(
        ["model", "exact match (held-out)", "parameters", "steps of 128", "training time"],
        rows,
        caption="Dates -> ISO, from the cards: wall-clock time of the whole run, one CPU thread",
    )


def rare_words_counts(rare: dict) -> str:
    """One line: how often the EN->DE model wrote a word in several subword pieces, over
    the test split (``results["rare_words"]``, :mod:`attnlab.experiments.language`)."""
    share = rare["pieced_in_reference"] / max(rare["pieced_words"], 1)
    return (  # two short lines: one long one wraps on the slide
        f"test split: {rare['pieced_outputs']} of {rare['strings']} outputs hold a word "
        f"written in pieces;\n{rare['pieced_words']} such words, {rare['pieced_in_reference']} "
        f"of them ({share:.0%}) words of the reference"
    )


def language_table(results: dict | None = None) -> Table:
    """Our models and both baselines on both test splits: BLEU / chrF in domain (the test
    split) and on the held-out packages, and the training time.

    Vaswani et al.'s Table 2 is a table of its own (:func:`vaswani_table`): other data, other
    test sets, so no score of theirs sits in a column of ours.  The caption gives the range of
    sacrebleu's 95% intervals of the chrF scores.
    """
    results = results or load_results()
    evaluated = results["evaluation"]
    models = results["scores"]["models"]
    names = ["transformer-en-de", "transformer-en-fr", "rnnsearch-en-fr", "rnnenc-en-fr"]
    cis = []

    def scores(pair: str, split: str, system: str) -> str:
        s = evaluated[pair][split]["systems"].get(system)
        if s is None:
            return ""
        cis.append(s["bootstrap"]["chrf"]["ci"])
        return f"{s['bleu']:.1f} / {s['chrf']:.1f}"

    rows = []
    for system in [*names, "dictionary", "copy"]:
        label = f"baseline: {system}" if system not in models else system
        cells = [
            scores(p, split, system) for p in ("en-de", "en-fr") for split in ("test", "unseen")
        ]
        trained = {"dictionary": "IBM Model 1", "copy": "none"}  # the dictionary: EM, seconds
        minutes = f"{models[system]['train_seconds'] / 60:.1f} min" if system in models else None
        minutes = minutes or trained[system]
        rows.append([label, *cells, minutes])
    threads = {models[n]["threads"] for n in names}  # from the cards, stored with the scores
    thread = "1 CPU thread" if threads == {1} else f"{'/'.join(map(str, sorted(threads)))} threads"
    return Table(
        ["BLEU / chrF", "EN→DE test", "EN→DE held out", "EN→FR test", "EN→FR held out", "training"],
        rows,
        caption=f"Our interface strings, cased (sacrebleu); held out: packages no model saw; "
        f"chrF ± {min(cis):.1f}–{max(cis):.1f} (95%); {thread} each",
        first_width=24,
    )


def vaswani_table(results: dict | None = None) -> Table:
    """Vaswani et al.'s Table 2 (newstest2014 BLEU, training on 8 GPUs), on its own."""
    results = results or load_results()
    rows = []
    for name, v in results["table2"]["vaswani"].items():
        rows.append([f"Transformer ({name.split('-')[1]})", f"{v['en-de']}", f"{v['en-fr']}",
                     v["training"].split(" (")[0]])  # fmt: skip
    return Table(
        ["Vaswani et al. 2017", "EN→DE BLEU", "EN→FR BLEU", "training"],
        rows,
        caption="Their Transformer rows of Table 2 (arXiv; the NIPS paper: 41.0 for big EN→FR), "
        "WMT 2014 news: not comparable with ours",
        first_width=24,
    )


def head_roles_table(roles: dict, layer: int = 0) -> Table:
    """The measured roles of the encoder self-attention heads of ``layer`` (``head_roles``).

    For each head: where its strongest weight falls most often above chance (the fraction if
    the strongest key were drawn at random), and the fraction of every role.
    """
    names, chance = roles["roles"], np.asarray(roles["chance"])
    rows = []
    for head, fractions in enumerate(np.asarray(roles["fractions"][layer])):
        named = [k for k, r in enumerate(names) if r != "other"]
        top = max(named, key=lambda k: fractions[k] / max(chance[k], 1e-9))
        best = f"{names[top]} {fractions[top]:.0%} (chance {chance[top]:.0%})"
        shares = ", ".join(f"{r} {f:.0%}" for r, f in zip(names, fractions, strict=True))
        rows.append([f"head {head + 1}", best, shares])
    caption = (
        f"{roles['model']}, encoder layer {layer + 1}: every query of the {roles['strings']} "
        "test-split strings"
    )
    return Table(["head", "most above chance", "strongest weight on ..."], rows, caption, 12)
