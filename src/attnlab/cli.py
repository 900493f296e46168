"""The command line, the package's entry point: train a recipe, measure it, save a checkpoint.

    python -m attnlab.cli --model rnnsearch --task dates     # -> the user's folder (below)
    python -m attnlab.cli --model rnnsearch --out my-models  # -> my-models/rnnsearch-dates.*
    python -m attnlab.cli --all --replace-shipped            # what `make train` runs
    python -m attnlab.cli --language rnnsearch-en-fr --out my-models  # a real-language model
    python -m attnlab.cli --language all --replace-shipped   # the four (`make train` too)

Where it writes: ``--out DIR`` if given, else ``$XDG_DATA_HOME/attnlab/checkpoints``
(``~/.local/share/attnlab/checkpoints`` when XDG_DATA_HOME is unset), never into the
package: replacing the shipped checkpoints (``src/attnlab/checkpoints/``) takes
``--replace-shipped``.  It prints the folder and how to load what it wrote
(``attnlab.load(name, directory)``).

Every argument is checked before training starts (argparse errors, exit 2), and so is the
output folder (a file in the way or a folder it cannot write to: one line, exit 2).  The
checkpoint is written by :func:`attnlab.training.checkpoints.save` (weights, then the card, each
renamed into place), so an error or Ctrl+C leaves the old checkpoint whole and no
temporary file behind.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from dataclasses import asdict, replace
from pathlib import Path

import torch

from attnlab.models.registry import MODEL_KINDS
from attnlab.text.corpus import CatalogError
from attnlab.text.tasks import TASKS, get_task
from attnlab.training import checkpoints, translation
from attnlab.training.batches import evaluate
from attnlab.training.config import (
    LANGUAGE_RECIPES,
    SHIPPED_RECIPES,
    TEST_SEED_OFFSET,
    TrainConfig,
    checkpoint_name,
    default_configs,
    new_model,
)
from attnlab.training.loop import fit

__all__ = [
    "OutputError",
    "check_writable",
    "default_out_dir",
    "path_arg",
    "int_in",
    "main",
    "train_and_save",
]

PROG = "python -m attnlab.cli"
MAX_SEED = 2**32 - 1
#: --flag -> (TrainConfig field, lowest, highest): the sizes a run may override.
SIZES = {
    "--max-steps": ("max_steps", 1, 10_000_000),
    "--eval-every": ("eval_every", 1, 10_000_000),
    "--batch-size": ("batch_size", 1, 65_536),
    "--n-train": ("n_train", 1, 1_000_000),
    "--n-valid": ("n_valid", 1, 100_000),
    "--n-test": ("n_test", 1, 100_000),
}


class OutputError(Exception):
    """The output folder cannot take the checkpoints (the message is one line)."""


def default_out_dir() -> Path:
    """``$XDG_DATA_HOME/attnlab/checkpoints`` (``~/.local/share/...`` if unset)."""
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "attnlab" / "checkpoints"


def check_writable(folder: Path, names: list[str]) -> None:
    """Make ``folder`` if needed and prove it can take ``names``' files, else OutputError."""
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"{folder} is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".attnlab-probe-"):
            pass
    except OSError as err:
        raise OutputError(f"cannot write to {folder}: {err.strerror or err}") from None
    for name in names:
        card = folder / f"{name}.json"
        if card.exists() and not card.is_file():
            raise OutputError(f"{card} is in the way (not a file)")


# --------------------------------------------------------------------------- one run
def _card(name: str, kind: str, task: str, model_cfg, model, history: dict, scores: dict) -> dict:
    cfg = history["config"]
    return {
        "name": name,
        "kind": kind,
        "task": task,
        "config": asdict(model_cfg),
        "train": cfg,
        "src_vocab": model.src_vocab.to_list(),
        "tgt_vocab": model.tgt_vocab.to_list(),
        "seed": cfg["seed"],
        "steps": history["steps"],
        "reached_target_at_step": history["reached"],
        "train_seconds": round(history["seconds_total"], 2),
        "heldout_accuracy": scores["exact_match"],
        "heldout_token_accuracy": scores["token_accuracy"],
        "heldout_examples": cfg["n_test"],
        "heldout_seed": TEST_SEED_OFFSET + cfg["seed"],
        "history": {k: history[k] for k in ("step", "loss", "accuracy", "seconds")},
        "parameters": model.num_parameters(),
        "torch_version": torch.__version__,
    }


def train_and_save(
    kind: str,
    task: str,
    out_dir: Path,
    *,
    name: str | None = None,
    config: TrainConfig | None = None,
    model_changes: dict | None = None,
    progress: bool = True,
) -> Path:
    """Train ``kind`` on ``task`` with its recipe (or ``config``; ``model_changes`` to the
    recipe's model config), measure it on fresh examples, and save weights + card as
    ``name`` in ``out_dir``; returns the weights path."""
    model_cfg, train_cfg = default_configs(kind, task)
    model_cfg, train_cfg = replace(model_cfg, **(model_changes or {})), config or train_cfg
    torch.manual_seed(train_cfg.seed)  # the initial weights, as fit() seeds them
    model = new_model(kind, task, model_cfg)
    model, history = fit(model, task, config=train_cfg, plot=False, progress=progress)
    torch.set_num_threads(train_cfg.threads)
    kwargs = train_cfg.task_kwargs(task, "test")
    test_pairs = get_task(task).make(train_cfg.n_test, TEST_SEED_OFFSET + train_cfg.seed, **kwargs)
    scores = evaluate(model, test_pairs)
    name = name or checkpoint_name(kind, task)
    card = _card(name, kind, task, model_cfg, model, history, scores)
    path = checkpoints.save(model, name, card, directory=out_dir)
    print(
        f"{name}: {history['steps']} steps, {history['seconds_total']:.1f} s, "
        f"held-out exact match {scores['exact_match']:.4f} on {train_cfg.n_test} -> {path}"
    )
    return path


# --------------------------------------------------------------------------- arguments
def int_in(lo: int, hi: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must be between {lo} and {hi}; got {text[:40]}")
        return value

    return parse


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number") from None
    if not (math.isfinite(value) and 0 < value <= 1):
        raise argparse.ArgumentTypeError(f"must be in (0, 1]; got {text[:40]}")
    return value


def path_arg(text: str) -> Path:
    if not text or "\x00" in text:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a path")
    return Path(text)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("--model", choices=list(MODEL_KINDS), help="the kind of model to train")
    p.add_argument("--task", default="dates", choices=list(TASKS))
    p.add_argument("--all", action="store_true", help="retrain every shipped dates model")
    p.add_argument(
        "--language",
        choices=[*LANGUAGE_RECIPES, "all"],
        help="train a real-language model (English->French/German) by its name, or all four",
    )
    p.add_argument("--seed", type=int_in(0, MAX_SEED), default=0, help=f"0..{MAX_SEED}")
    for flag, (field, lo, hi) in SIZES.items():
        p.add_argument(flag, type=int_in(lo, hi), dest=field, help=f"override ({lo}..{hi})")
    stop = p.add_mutually_exclusive_group()
    stop.add_argument("--target", type=fraction, help="early stop at this held-out exact match")
    stop.add_argument("--no-target", action="store_true", help="train the whole step budget")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--out", type=path_arg, help=f"folder (default: {default_out_dir()})")
    where.add_argument(
        "--replace-shipped", action="store_true", help="write into the package's checkpoints"
    )
    return p


def _jobs(p: argparse.ArgumentParser, args) -> list[tuple[str, str, str, dict]]:
    """(kind, task, checkpoint name, model config changes) of each model to train."""
    if args.all == bool(args.model):
        p.error("give --model (and --task), or --all")
    if args.all:
        return [
            (kind, task, name, changes) for name, (kind, task, changes) in SHIPPED_RECIPES.items()
        ]
    return [(args.model, args.task, checkpoint_name(args.model, args.task), {})]


def _out_dir(args) -> Path:
    if args.replace_shipped:
        return checkpoints.CHECKPOINT_DIR
    folder = args.out if args.out is not None else default_out_dir()
    if folder.resolve() == checkpoints.CHECKPOINT_DIR:
        raise OutputError(
            f"{folder} holds the shipped models: add --replace-shipped to replace them"
        )
    return folder


def _config(kind: str, task: str, args) -> TrainConfig:
    cfg = replace(default_configs(kind, task)[1], seed=args.seed)
    sizes = {field: getattr(args, field) for field, _, _ in SIZES.values()}
    cfg = replace(cfg, **{k: v for k, v in sizes.items() if v is not None})
    if args.target is not None:
        cfg = replace(cfg, target=args.target)
    return replace(cfg, target=None) if args.no_target else cfg


def _train_language(p: argparse.ArgumentParser, args) -> int:
    """``--language NAME|all``: the word models of :mod:`attnlab.training.translation`."""
    if args.model or args.all:
        p.error("give --language alone, or --model (and --task), or --all")
    names = list(LANGUAGE_RECIPES) if args.language == "all" else [args.language]
    try:
        out = _out_dir(args)
        check_writable(out, names)
    except OutputError as err:
        p.exit(2, f"{PROG}: error: {err}\n")
    print(f"writing checkpoints to {out}", flush=True)
    try:
        for name in names:
            translation.train_and_save(name, out)
            print(f"  load it with attnlab.load({name!r}, directory={str(out)!r})")
    except CatalogError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; the checkpoints in {out} are whole", file=sys.stderr)
        return 130
    return 0


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.language:
        return _train_language(p, args)
    jobs = _jobs(p, args)
    try:
        out = _out_dir(args)
        check_writable(out, [job[2] for job in jobs])
    except OutputError as err:
        p.exit(2, f"{PROG}: error: {err}\n")
    print(f"writing checkpoints to {out}", flush=True)
    try:
        for kind, task, name, changes in jobs:
            cfg = _config(kind, task, args)
            train_and_save(kind, task, out, name=name, config=cfg, model_changes=changes)
            print(f"  load it with attnlab.load({name!r}, directory={str(out)!r})")
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; the checkpoints in {out} are whole", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
