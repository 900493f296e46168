"""Vaswani et al. (2017), "Attention Is All You Need", Table 2, typed once.

:data:`TABLE2` is the table as printed: BLEU on newstest2014 and the training cost in FLOPs.
The deck draws it (:mod:`attnlab.pictures.figures.table2`) and sets our own models beside its
Transformer rows (:func:`transformer_rows`, stored by :mod:`attnlab.experiments.language`).
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Row", "TABLE2", "TRANSFORMER_TRAINING", "transformer_rows"]


class Row(NamedTuple):
    """One row of Table 2; None where the paper reports nothing."""

    model: str
    bleu_en_de: str | None  # BLEU as printed ("26.30", not 26.3)
    bleu_en_fr: str | None
    cost_en_de: float | None  # training cost, FLOPs
    cost_en_fr: float | None  # None for the Transformer: the paper gives one cost for both pairs


TABLE2: tuple[Row, ...] = (
    Row("ByteNet", "23.75", None, None, None),
    Row("Deep-Att + PosUnk", None, "39.2", None, 1.0e20),
    Row("GNMT + RL", "24.6", "39.92", 2.3e19, 1.4e20),
    Row("ConvS2S", "25.16", "40.46", 9.6e18, 1.5e20),
    Row("MoE", "26.03", "40.56", 2.0e19, 1.2e20),
    Row("Deep-Att + PosUnk Ensemble", None, "40.4", None, 8.0e20),
    Row("GNMT + RL Ensemble", "26.30", "41.16", 1.8e20, 1.1e21),
    Row("ConvS2S Ensemble", "26.36", "41.29", 7.7e19, 1.2e21),
    Row("Transformer (base model)", "27.3", "38.1", 3.3e18, None),
    Row("Transformer (big)", "28.4", "41.8", 2.3e19, None),
)

#: The Transformers' training as Section 5.2 of the paper reports it, by the key the results
#: use -> (the row's model name, the wall-clock training).
TRANSFORMER_TRAINING: dict[str, tuple[str, str]] = {
    "transformer-base": (
        "Transformer (base model)",
        "12 hours on 8 NVIDIA P100 GPUs (100,000 steps)",
    ),
    "transformer-big": ("Transformer (big)", "3.5 days on 8 NVIDIA P100 GPUs (300,000 steps)"),
}


def transformer_rows() -> dict[str, dict]:
    """The two Transformer rows as numbers, with their training: what the results store."""
    rows = {row.model: row for row in TABLE2}
    result = {}
    for key, (model, training) in TRANSFORMER_TRAINING.items():
        row = rows[model]
        result[key] = {
            "en-de": float(row.bleu_en_de),
            "en-fr": float(row.bleu_en_fr),
            "training": training,
            "training_flops": row.cost_en_de,
        }
    return result
