"""The length experiment measured: every model of
:data:`attnlab.experiments.length.REVERSE_MODELS` on fresh digit strings in each input-length
bin, written to ``results/length.json`` (``python -m attnlab length``;
:func:`attnlab.experiments.length.load_results` reads it).
"""

from __future__ import annotations

import json
from pathlib import Path

from attnlab.experiments.length import BINS, RESULTS_FILE, REVERSE_MODELS
from attnlab.files import write_atomic
from attnlab.models.threads import torch_threads
from attnlab.text.tasks import reverse
from attnlab.training.checkpoints import CHECKPOINT_DIR, load
from attnlab.training.evaluate import evaluate

PER_BIN = 200  # fresh test strings per bin
TEST_SEED = 3_000_000

__all__ = ["PER_BIN", "TEST_SEED", "measure", "run"]


def measure(model, bins: list[list[int]] = BINS, per_bin: int = PER_BIN, seed: int = TEST_SEED):
    """Exact match and token accuracy of ``model`` on ``per_bin`` fresh strings in each bin."""
    exact, token = [], []
    for k, (lo, hi) in enumerate(bins):
        pairs = reverse(per_bin, seed=seed + k, length=(lo, hi))
        scores = evaluate(model, pairs, batch_size=per_bin)
        exact.append(round(scores["exact_match"], 4))
        token.append(round(scores["token_accuracy"], 4))
    return {"exact_match": exact, "token_accuracy": token}


def _describe(card: dict) -> dict:
    return {
        "kind": card["kind"],
        "train_lengths": card["train"]["train_length"],
        "steps": card["steps"],
        "batch_size": card["train"]["batch_size"],
        "lr": card["train"]["lr"],
        "train_seconds": card["train_seconds"],
        "parameters": card["parameters"],
        "config": card["config"],
    }


def run(out: Path | None = None, checkpoint_dir: Path | None = None) -> dict:
    """Measure every model of :data:`REVERSE_MODELS` in ``checkpoint_dir`` (default: the shipped
    folder); write the results to ``out`` (default: the shipped file) and return them."""
    folder = Path(checkpoint_dir) if checkpoint_dir is not None else CHECKPOINT_DIR
    config: dict = {
        "task": "reverse: a random digit string -> the same string reversed",
        "metric": "greedy decoding; exact_match = whole output right, token_accuracy = "
        "right characters at the right positions",
        "bins": BINS,
        "per_bin": PER_BIN,
        "test_seed": TEST_SEED,
        "models": {},
    }
    results: dict = {"bins": BINS, "models": {}, "config": config}
    for name in REVERSE_MODELS:
        model = load(name, folder)
        with torch_threads(model.card["train"]["threads"]):
            results["models"][name] = measure(model)
        config["models"][name] = _describe(model.card)
        print(name, results["models"][name])
    path = Path(out) if out is not None else RESULTS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(results, indent=1) + "\n")
    print(f"wrote {path}")
    return results
