"""The length experiment: does attention help with long inputs? (Bahdanau et al. 2014, Fig. 2)

RNNEncDec (one fixed-length vector) and RNNSearch (attention) are trained with the same
step budget on ``reverse`` (digit strings of length 5-60, reversed), then measured on fresh
strings in input-length bins from 5 to 60: exact match (the whole output right) and per-token
accuracy.  The paper plots BLEU against sentence length and finds RNNencdec's score falling
with length while RNNsearch's holds up; our toy task shows the same shape.

    python -m attnlab.experiments.length              # train both, measure, write the results
    python -m attnlab.experiments.length --eval-only  # re-measure the shipped checkpoints

The models are saved as the shipped checkpoints ``rnnenc-reverse``, ``rnnsearch-reverse``
and the variants trained on 5-30 digits only, ``rnnenc-reverse-30`` and ``rnnsearch-reverse-30``;
the results go to ``src/attnlab/results/length.json``, read by :func:`load_results`
(``attnlab.plots.length_curves`` draws them).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

RESULTS_FILE = Path(__file__).resolve().parent.parent / "results" / "length.json"

#: Input-length bins [lo, hi] (both included).
BINS = [[5, 10], [11, 20], [21, 30], [31, 40], [41, 50], [51, 60]]
#: The models compared: checkpoint name -> (model, training lengths [lo, hi]).  The "-30"
#: variants see only strings of 5-30 digits in training, like the paper's RNNsearch-30
#: (trained on sentences of up to 30 words) against RNNsearch-50.
MODELS = {
    "rnnenc-reverse": ("rnnenc", [5, 60]),
    "rnnsearch-reverse": ("rnnsearch", [5, 60]),
    "rnnenc-reverse-30": ("rnnenc", [5, 30]),
    "rnnsearch-reverse-30": ("rnnsearch", [5, 30]),
}
PER_BIN = 200  # fresh test strings per bin
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
    from attnlab.data import reverse
    from attnlab.train import evaluate

    exact, token = [], []
    for k, (lo, hi) in enumerate(bins):
        pairs = reverse(per_bin, seed=seed + k, length=(lo, hi))
        scores = evaluate(model, pairs, batch_size=per_bin)
        exact.append(round(scores["exact_match"], 4))
        token.append(round(scores["token_accuracy"], 4))
    return {"exact_match": exact, "token_accuracy": token}


def run(
    train: bool = True,
    max_steps: int | None = None,
    out: Path | None = None,
    only: list[str] | None = None,
) -> dict:
    """Train (unless ``train=False``; only the models in ``only`` if given) and measure every
    model; write and return the results."""
    from dataclasses import replace

    import torch

    import attnlab
    from attnlab.train import default_configs, train_and_save

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
    for name, (short, lengths) in MODELS.items():
        kind = {"rnnenc": "rnnencdec"}.get(short, short)
        train_cfg = default_configs(kind, "reverse")[1]
        train_cfg = replace(train_cfg, train_length=lengths)
        if max_steps is not None:
            train_cfg = replace(train_cfg, max_steps=max_steps)
        if train and (only is None or name in only):
            train_and_save(short, "reverse", name=name, config=train_cfg)
        model = attnlab.load(name)
        torch.set_num_threads(model.card["train"]["threads"])
        results["models"][name] = measure(model)
        card = model.card
        config["models"][name] = {
            "kind": card["kind"],
            "train_lengths": card["train"]["train_length"],
            "steps": card["steps"],
            "batch_size": card["train"]["batch_size"],
            "lr": card["train"]["lr"],
            "train_seconds": card["train_seconds"],
            "parameters": card["parameters"],
            "config": card["config"],
        }
        print(name, results["models"][name])
    path = Path(out) if out is not None else RESULTS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {path}")
    return results


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m attnlab.experiments.length", description=__doc__.split("\n")[0]
    )
    p.add_argument("--eval-only", action="store_true", help="measure the shipped checkpoints")
    p.add_argument("--max-steps", type=int, default=None, help="override the step budget")
    p.add_argument("--out", type=Path, default=None, help="results file (default: shipped)")
    p.add_argument("--only", nargs="+", choices=list(MODELS), help="train only these")
    args = p.parse_args(argv)
    run(train=not args.eval_only, max_steps=args.max_steps, out=args.out, only=args.only)


if __name__ == "__main__":
    main()
