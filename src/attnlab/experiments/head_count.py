"""Why several heads, measured: the date Transformer trained by its own recipe with one head
and with four at the same width (d_model = 64: one head of d_k = 64 against four of 16), on
three seeds each.

Zeroing a trained model's heads (:func:`attnlab.lecture.head_study`) shows how four heads split
the work, not whether four help; this trains both and compares the steps each needs to reach
the recipe's target on the validation dates and the exact match on fresh test dates.
``python -m attnlab deck`` runs it (:func:`attnlab.lecture.measurements.measure`), about
100 s per model on one thread.
"""

from __future__ import annotations

from dataclasses import replace

from attnlab.models.threads import torch_threads
from attnlab.training.config import recipe
from attnlab.training.loop import fit
from attnlab.training.runs import _test_scores

__all__ = ["HEADS", "MODEL", "SEEDS", "train_head_counts"]

MODEL = "transformer-dates"  # whose recipe is trained
HEADS = (1, 4)  # h, at the recipe's d_model
SEEDS = (0, 1, 2)


def train_head_counts(
    heads: tuple[int, ...] = HEADS, seeds: tuple[int, ...] = SEEDS, progress: bool = True
) -> dict:
    """Train :data:`MODEL`'s recipe once per (h, seed); what each run reached.

    Every run: ``heads``, ``d_k``, ``seed``, ``parameters``, ``reached`` (the first step
    whose validation exact match reached the recipe's target; None if none did within its
    step budget), ``steps``, ``seconds``, the validation ``curve`` (step, exact match) and
    ``test_exact_match`` on the recipe's fresh test dates."""
    base = recipe(MODEL)
    runs = []
    for h in heads:
        if base.model.d_model % h:
            raise ValueError(f"d_model {base.model.d_model} does not split into {h} heads")
        for seed in seeds:
            run = replace(base, model=replace(base.model, num_heads=h))
            run = replace(run, train=replace(base.train, seed=seed))
            model, history = fit(
                run.kind, run.task, config=run.train, model_config=run.model, progress=progress
            )
            with torch_threads(run.train.threads):
                scores = _test_scores(model, run)
            runs.append(
                {
                    "heads": h,
                    "d_k": base.model.d_model // h,
                    "seed": seed,
                    "parameters": model.num_parameters(),
                    "reached": history["reached"],
                    "steps": history["steps"],
                    "seconds": round(history["seconds_total"], 1),
                    "curve": {"step": history["step"], "accuracy": history["accuracy"]},
                    "test_exact_match": scores["heldout_accuracy"],
                }
            )
    return {
        "model": MODEL,
        "d_model": base.model.d_model,
        "target": base.train.target,
        "max_steps": base.train.max_steps,
        "eval_every": base.train.eval_every,
        "test_examples": base.train.n_test,
        "runs": runs,
    }
