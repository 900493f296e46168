"""What the deck shows about the models on real language: the cached results, read.

    >>> from attnlab.experiments.language import load_results
    >>> load_results()["scores"]["models"]["rnnsearch-en-fr"]["bleu"]      # doctest: +SKIP

The results are measured by :mod:`attnlab.experiments.language_run`
(``python -m attnlab language``); this module only reads them, so the deck loads no corpus,
no model and no training code to show them.
"""

from __future__ import annotations

import json
from pathlib import Path

from attnlab.experiments.vaswani import transformer_rows
from attnlab.files import RESULTS_DIR
from attnlab.models import catalogue

__all__ = ["MODELS", "RESULTS_FILE", "VASWANI_TABLE2", "load_results"]

RESULTS_FILE = RESULTS_DIR / "language.json"

#: The shipped word models (:mod:`attnlab.models.catalogue`) -> the language they translate
#: English into (their task's ``language``).
MODELS = {
    m.name: language
    for m in catalogue.entries()
    if (language := catalogue.TASK_TEXTS[m.task].language) is not None
}

#: Vaswani et al. (2017), Table 2: the Transformers' BLEU on newstest2014 and their training.
VASWANI_TABLE2 = transformer_rows()


def load_results(path: Path | str | None = None) -> dict:
    """The cached measurements (``src/attnlab/results/language.json``)."""
    path = Path(path) if path is not None else RESULTS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run `python -m attnlab language`")
    return json.loads(path.read_text())
