"""The length experiment: does attention help with long inputs? (Bahdanau et al. 2014, Fig. 2)

RNNEncDec (one fixed-length vector) and RNNSearch (attention) are trained with the same
step budget on ``reverse`` (digit strings of length 5-60, reversed), then measured on fresh
strings in input-length bins from 5 to 60: exact match (the whole output right) and per-token
accuracy.  The paper plots BLEU against sentence length and finds RNNencdec's score falling
with length while RNNsearch's holds up; our toy task shows the same shape.

    python -m attnlab.experiments.length --replace-shipped  # train, measure, ship (make train)
    python -m attnlab.experiments.length              # the same into the user's folder
    python -m attnlab.experiments.length --eval-only  # re-measure the shipped checkpoints

The models are the checkpoints ``rnnenc-reverse``, ``rnnsearch-reverse`` and the variants
trained on 5-30 digits only, ``rnnenc-reverse-30`` and ``rnnsearch-reverse-30``; the shipped
results are ``src/attnlab/results/length.json``, read by :func:`load_results`
(``attnlab.pictures.plots.length_curves`` draws them).  Without ``--replace-shipped`` nothing shipped
is written: the checkpoints go to ``--checkpoints DIR`` (default
:func:`attnlab.cli.default_out_dir`), the results to ``--out FILE`` (default
``results/length.json`` beside that folder).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import torch

import attnlab
from attnlab.cli import (
    OutputError,
    check_writable,
    default_out_dir,
    int_in,
    path_arg,
    train_and_save,
)
from attnlab.files import RESULTS_DIR, write_atomic
from attnlab.text.tasks import reverse
from attnlab.training.batches import evaluate
from attnlab.training.checkpoints import CHECKPOINT_DIR
from attnlab.training.config import default_configs

RESULTS_FILE = RESULTS_DIR / "length.json"

#: Input-length bins [lo, hi] (both included).
BINS = [[5, 10], [11, 20], [21, 30], [31, 40], [41, 50], [51, 60]]
#: The models compared: checkpoint name -> (model, training lengths [lo, hi]).  The "-30"
#: variants see only strings of 5-30 digits in training, like the paper's RNNsearch-30
#: (trained on sentences of up to 30 words) against RNNsearch-50.
MODELS = {
    "rnnenc-reverse": ("rnnencdec", [5, 60]),
    "rnnsearch-reverse": ("rnnsearch", [5, 60]),
    "rnnenc-reverse-30": ("rnnencdec", [5, 30]),
    "rnnsearch-reverse-30": ("rnnsearch", [5, 30]),
}
PER_BIN = 200  # fresh test strings per bin
SIZE = int_in(1, 10_000_000)
TEST_SEED = 3_000_000

__all__ = ["BINS", "MODELS", "RESULTS_FILE", "load_results", "measure", "run", "main"]


def load_results(path: Path | str | None = None) -> dict:
    """The shipped results: ``bins`` (list of [lo, hi]), ``models`` (name -> {"exact_match":
    [...], "token_accuracy": [...]}, one value per bin) and ``config`` (how they were made)."""
    path = Path(path) if path is not None else RESULTS_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"length results not found: {path} (run python -m attnlab.experiments.length)"
        )
    try:
        results = json.loads(path.read_text())
        for key in ("bins", "models", "config"):
            results[key]  # noqa: B018  (a KeyError means a damaged file)
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"corrupted length results {path}: {err!r}") from None
    return results


def measure(model, bins: list[list[int]] = BINS, per_bin: int = PER_BIN, seed: int = TEST_SEED):
    """Exact match and token accuracy of ``model`` on ``per_bin`` fresh strings in each bin."""
    exact, token = [], []
    for k, (lo, hi) in enumerate(bins):
        pairs = reverse(per_bin, seed=seed + k, length=(lo, hi))
        scores = evaluate(model, pairs, batch_size=per_bin)
        exact.append(round(scores["exact_match"], 4))
        token.append(round(scores["token_accuracy"], 4))
    return {"exact_match": exact, "token_accuracy": token}


def _train_config(kind: str, lengths: list[int], max_steps: int | None):
    train_cfg = replace(default_configs(kind, "reverse")[1], train_length=lengths)
    return train_cfg if max_steps is None else replace(train_cfg, max_steps=max_steps)


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


def run(
    train: bool = True,
    max_steps: int | None = None,
    out: Path | None = None,
    only: list[str] | None = None,
    checkpoint_dir: Path | None = None,
) -> dict:
    """Train (unless ``train=False``; only the models in ``only`` if given) into
    ``checkpoint_dir`` (default: the shipped folder) and measure every model there; write the
    results to ``out`` (default: the shipped file) and return them."""
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
    for name, (kind, lengths) in MODELS.items():
        if train and (only is None or name in only):
            train_and_save(
                kind, "reverse", folder, name=name, config=_train_config(kind, lengths, max_steps)
            )
        model = attnlab.load(name, folder)
        torch.set_num_threads(model.card["train"]["threads"])
        results["models"][name] = measure(model)
        config["models"][name] = _describe(model.card)
        print(name, results["models"][name])
    path = Path(out) if out is not None else RESULTS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(results, indent=1) + "\n")
    print(f"wrote {path}")
    return results


def _where(p: argparse.ArgumentParser, args) -> tuple[Path, Path]:
    """(checkpoint folder, results file): the shipped ones only with --replace-shipped."""
    if args.replace_shipped:
        return args.checkpoints or CHECKPOINT_DIR, args.out or RESULTS_FILE
    reading = args.eval_only and args.checkpoints is None
    folder = CHECKPOINT_DIR if reading else (args.checkpoints or default_out_dir())
    out = args.out or default_out_dir().parent / "results" / "length.json"
    if (not args.eval_only and folder.resolve() == CHECKPOINT_DIR) or out.resolve() == RESULTS_FILE:
        p.exit(2, f"{p.prog}: error: that replaces shipped files: add --replace-shipped\n")
    try:
        if not args.eval_only:
            check_writable(folder, list(MODELS))
        check_writable(out.parent, [])
    except OutputError as err:
        p.exit(2, f"{p.prog}: error: {err}\n")
    return folder, out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m attnlab.experiments.length", description=__doc__.split("\n")[0]
    )
    p.add_argument("--eval-only", action="store_true", help="measure, do not train")
    p.add_argument("--max-steps", type=SIZE, default=None, help="override the step budget")
    p.add_argument("--only", nargs="+", choices=list(MODELS), help="train only these")
    p.add_argument("--checkpoints", type=path_arg, help="checkpoint folder (default: the user's)")
    p.add_argument("--out", type=path_arg, default=None, help="results file")
    p.add_argument(
        "--replace-shipped", action="store_true", help="write the shipped checkpoints and results"
    )
    args = p.parse_args(argv)
    folder, out = _where(p, args)
    print(f"checkpoints: {folder}; results: {out}", flush=True)
    run(
        train=not args.eval_only,
        max_steps=args.max_steps,
        out=out,
        only=args.only,
        checkpoint_dir=folder,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
