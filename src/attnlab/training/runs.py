"""A recipe run for keeps: trained by :func:`attnlab.training.loop.fit`, measured once on
fresh test examples, and saved (weights + card, :func:`attnlab.training.checkpoints.save`).

    >>> train_and_save("rnnsearch-dates", Path("my-models"))          # a shipped recipe
    >>> r = replace(recipe("rnnsearch-dates"), train=my_config)
    >>> train_and_save("rnnsearch-dates", Path("my-models"), r)       # changed

The card holds what the model is (kind, task, sizes, vocabularies), how it was trained (the
:class:`~attnlab.training.config.TrainConfig`, the seed, the steps, the time, the history)
and what it scores on examples it never saw: the generated tasks' exact match and token
accuracy on ``n_test`` fresh examples; the word models' test BLEU and chrF
(:func:`attnlab.training.translation.test_scores`), their weights stored in fp16.

:func:`train_length_models` trains the length experiment's four models
(:mod:`attnlab.experiments.length` measures them).
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path

import torch

from attnlab.models import catalogue
from attnlab.models.base import Seq2SeqModel
from attnlab.models.threads import torch_threads
from attnlab.text.corpus import load_corpus
from attnlab.text.tasks import get_task
from attnlab.training import checkpoints
from attnlab.training.config import CORPUS_TASKS, TEST_SEED_OFFSET, Recipe, recipe
from attnlab.training.evaluate import evaluate
from attnlab.training.loop import fit
from attnlab.training.translation import test_scores

__all__ = [
    "DATE_MODELS",
    "LENGTH_MODELS",
    "WORD_MODELS",
    "card",
    "train_and_save",
    "train_length_models",
]

#: The shipped models of each family (:mod:`attnlab.models.catalogue`): the date models,
#: the length experiment's (Bahdanau et al.'s Fig. 2: every reversal model), the word models.
DATE_MODELS = catalogue.names(task="dates")
LENGTH_MODELS = catalogue.names(task="reverse")
WORD_MODELS = tuple(name for task in CORPUS_TASKS for name in catalogue.names(task=task))


def train_and_save(
    name: str, out_dir: Path, run: Recipe | None = None, *, progress: bool = True
) -> Path:
    """Train ``run`` (default: the shipped model ``name``'s recipe), measure it on fresh
    test examples, and save weights + card as ``name`` in ``out_dir``; the weights' path."""
    run = run or recipe(name)
    checkpoints.check_replaceable(out_dir, name)  # a user's NAME.json: refused before training
    corpus = load_corpus(CORPUS_TASKS[run.task]) if run.task in CORPUS_TASKS else None
    model, history = fit(
        run.kind, run.task, config=run.train, model_config=run.model, corpus=corpus,
        progress=progress,
    )  # fmt: skip
    with torch_threads(run.train.threads):
        if corpus is not None:  # stored in fp16, scored as it will be loaded
            model = model.half().float()
            scores = test_scores(model, corpus)
        else:
            scores = _test_scores(model, run)
    written = card(name, run, model, history, scores)
    stored = copy.deepcopy(model).half() if corpus is not None else model
    path = checkpoints.save(stored, name, written, directory=out_dir)
    print(
        f"{name}: {history['steps']} steps (best {history['best_step']}), "
        f"{history['seconds_total']:.1f} s, held-out exact match "
        f"{written['heldout_accuracy']:.4f} -> {path}"
    )
    return path


def _test_scores(model: Seq2SeqModel, run: Recipe) -> dict:
    """Exact match and token accuracy on ``n_test`` fresh examples of a generated task."""
    cfg, seed = run.train, TEST_SEED_OFFSET + run.train.seed
    pairs = get_task(run.task).make(cfg.n_test, seed, **cfg.task_kwargs(run.task, "test"))
    scores = evaluate(model, pairs)
    return {
        "heldout_accuracy": scores["exact_match"],
        "heldout_token_accuracy": scores["token_accuracy"],
        "heldout_examples": cfg.n_test,
        "heldout_seed": seed,
    }


def _subword_model(model: Seq2SeqModel) -> dict:
    """A subword model's card field: its one SentencePiece model, base64 (else nothing)."""
    if model.src_vocab.level != "subword":
        return {}
    if model.src_vocab != model.tgt_vocab:
        raise ValueError("a subword model reads and writes one vocabulary")
    return {"subword_model": base64.b64encode(model.src_vocab.model).decode("ascii")}


def card(name: str, run: Recipe, model: Seq2SeqModel, history: dict, scores: dict) -> dict:
    """The checkpoint card of a trained run: what it is, how it was trained, ``scores``."""
    return {
        "name": name,
        "kind": run.kind,
        "task": run.task,
        "config": asdict(run.model),
        "train": history["config"],
        "src_vocab": model.src_vocab.to_list(),
        "tgt_vocab": model.tgt_vocab.to_list(),
        **_subword_model(model),
        "seed": run.train.seed,
        "steps": history["steps"],
        "reached_target_at_step": history["reached"],
        "best_step": history["best_step"],  # whose weights these are
        "averaged": history["averaged"],  # the mean of the last checkpoints, measured
        "train_seconds": round(history["seconds_total"], 2),  # wall clock, shared or not
        "train_cpu_seconds": round(history["cpu_seconds_total"], 1),  # all training threads
        "train_threads": run.train.threads,
        **scores,
        "history": {k: v for k, v in history.items() if isinstance(v, list)},
        "parameters": model.num_parameters(),
        "torch_version": torch.__version__,
    }


def train_length_models(
    out_dir: Path, names: Sequence[str] | None = None, max_steps: int | None = None
) -> list[Path]:
    """Train the length experiment's models (``names``, default all of
    :data:`LENGTH_MODELS`) into ``out_dir``, each by its recipe (``max_steps``: a shorter
    budget, the same for every model)."""
    paths = []
    for name in names or LENGTH_MODELS:
        run = recipe(name)
        if max_steps is not None:
            run = replace(run, train=replace(run.train, max_steps=max_steps))
        paths.append(train_and_save(name, out_dir, run))
    return paths
