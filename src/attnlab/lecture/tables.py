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
    return (
        f"test split: {rare['pieced_outputs']} of {rare['strings']} outputs hold a word "
        f"written in pieces; {rare['pieced_words']} such words, {rare['pieced_in_reference']} "
        "of them words of the reference"
    )


def language_table(results: dict | None = None) -> Table:
    """Our test BLEU/chrF and training time beside Vaswani et al.'s Table 2 rows.

    Not comparable: our scores are on the test split of short interface strings (our data),
    Vaswani et al.'s on newstest2014 (news, WMT 2014 training data); the two share the table's
    columns for layout only, and the caption names both test sets.  The compute is the point.
    """
    results = results or load_results()
    models, base = results["scores"]["models"], results["scores"]["baselines"]
    vaswani = results["table2"]["vaswani"]

    def ours(name: str) -> list[str]:
        s = models[name]
        pair = s["pair"]
        row = [name, "", ""]
        row[1 if pair == "en-de" else 2] = f"{s['bleu']:.1f} / {s['chrf']:.1f}"
        threads = model_card(name)["train"]["threads"]
        cpu = f"{threads} CPU thread{'s' if threads > 1 else ''}"
        return [*row, f"{s['train_seconds'] / 60:.1f} min, {cpu}"]

    rows = [ours(n) for n in ("transformer-en-de", "transformer-en-fr", "rnnsearch-en-fr")]
    rows.append(ours("rnnenc-en-fr"))
    for kind in ("copy", "dictionary"):
        rows.append(
            [
                f"baseline: {kind}",
                f"{base['en-de'][kind]['bleu']:.1f} / {base['en-de'][kind]['chrf']:.1f}",
                f"{base['en-fr'][kind]['bleu']:.1f} / {base['en-fr'][kind]['chrf']:.1f}",
                "none",
            ]
        )
    for name, v in vaswani.items():
        when = v["training"].split(" (")[0]
        rows.append([f"Vaswani {name.split('-')[1]}", f"{v['en-de']}", f"{v['en-fr']}", when])
    return Table(
        ["model", "EN→DE BLEU / chrF", "EN→FR BLEU / chrF", "training (wall-clock)"],
        rows,
        caption="Ours: test split of the interface strings; Vaswani et al.: newstest2014 (BLEU)",
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
