"""The length experiment: does attention help with long inputs? (Bahdanau et al. 2014, Fig. 2)

RNNEncDec (one fixed-length vector) and RNNSearch (attention) are trained with the same
step budget on ``reverse`` (digit strings of length 5-60, reversed;
:func:`attnlab.training.runs.train_length_models`, their recipes in
:mod:`attnlab.training.config`), then measured on fresh strings in input-length bins
from 5 to 60: exact match (the whole output right) and per-token
accuracy.  The paper plots BLEU against sentence length and finds RNNencdec's score falling
with length while RNNsearch's holds up; our toy task shows the same shape.

    python -m attnlab length --replace-shipped  # train, measure, ship (make train)
    python -m attnlab length                    # the same into the user's folder
    python -m attnlab length --eval-only        # re-measure the shipped checkpoints

The models are the checkpoints ``rnnenc-reverse``, ``rnnsearch-reverse`` and the variants
trained on 5-30 digits only, ``rnnenc-reverse-30`` and ``rnnsearch-reverse-30``; the shipped
results are ``src/attnlab/results/length.json``, read by :func:`load_results`
(``attnlab.pictures.plots.length_curves`` draws them);
:mod:`attnlab.experiments.length_run` measures them, so reading them here loads no model and
no training code.  Without ``--replace-shipped`` the command writes nothing shipped: the checkpoints go to ``--checkpoints DIR`` (default
:func:`attnlab.files.user_checkpoint_dir`), the results to ``--out FILE`` (default
``results/length.json`` beside that folder).
"""

from __future__ import annotations

import json
from pathlib import Path

from attnlab.files import RESULTS_DIR
from attnlab.models import catalogue

RESULTS_FILE = RESULTS_DIR / "length.json"

#: Input-length bins [lo, hi] (both included).
BINS = [[5, 10], [11, 20], [21, 30], [31, 40], [41, 50], [51, 60]]
#: The models compared: the reverse-digit models (their checkpoint names).  The "-30"
#: variants see only strings of 5-30 digits in training, like the paper's RNNsearch-30
#: (trained on sentences of up to 30 words) against RNNsearch-50.
REVERSE_MODELS = catalogue.names(task="reverse")

__all__ = ["BINS", "REVERSE_MODELS", "RESULTS_FILE", "load_results"]


def load_results(path: Path | str | None = None) -> dict:
    """The shipped results: ``bins`` (list of [lo, hi]), ``models`` (name -> {"exact_match":
    [...], "token_accuracy": [...]}, one value per bin) and ``config`` (how they were made)."""
    path = Path(path) if path is not None else RESULTS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"length results not found: {path} (run python -m attnlab length)")
    try:
        results = json.loads(path.read_text())
        for key in ("bins", "models", "config"):
            results[key]  # noqa: B018  (a KeyError means a damaged file)
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"corrupted length results {path}: {err!r}") from None
    return results
