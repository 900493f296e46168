"""Training: ``fit(...)``, the one training loop of every model (it writes nothing).

Everything is counted in optimisation **steps**, not seconds, so a run gives the same model
on a busy machine as on an idle one: a fixed seed, a fixed number of threads, Adam(W) with
gradient clipping and a learning-rate warm-up and decay, the held-out score measured every
``eval_every`` steps, and an early stop as soon as it reaches ``target`` (or at
``max_steps``).

    >>> from attnlab.training.loop import fit
    >>> model, history = fit("rnnsearch", "dates", target=0.99)   # ~5 s on 2 cores

The generated tasks (``dates``, ``reverse``) measure held-out exact match; the word models
(``en-fr``, ``en-de``) measure the dev split's chrF and keep their best weights
(:mod:`attnlab.training.translation`).  The recipes are in :mod:`attnlab.training.config`,
the tensors and batches in :mod:`attnlab.training.batches`; saving a trained recipe with its
card is :func:`attnlab.training.runs.train_and_save`.

Progress is shown by observers (anything with the methods of :class:`Observer`): a tqdm
bar (``progress=True``), and whatever the caller passes as ``observer``, e.g. the deck's
live picture, :class:`attnlab.pictures.training_plots.LivePlot`.
"""

from __future__ import annotations

import copy
import time
from collections import deque
from dataclasses import asdict, replace
from typing import Protocol

import torch
from torch import nn
from tqdm.auto import tqdm  # its notebook bar in a kernel, its terminal bar elsewhere

from attnlab.models.base import Seq2SeqModel
from attnlab.models.threads import torch_threads
from attnlab.text.corpus import load_corpus
from attnlab.text.tasks import get_task
from attnlab.training.batches import Batch, Examples, batches, encode_pairs
from attnlab.training.config import (
    CORPUS_TASKS,
    VALID_SEED_OFFSET,
    TrainConfig,
    default_configs,
    new_model,
)
from attnlab.training.evaluate import evaluate
from attnlab.training.translation import word_examples

__all__ = [
    "Observer",
    "average_states",
    "examples",
    "fit",
    "loss_function",
    "optimiser",
    "train_step",
]


class Observer(Protocol):
    """What watches a run: told of every step's loss and of every measurement."""

    def step(self, step: int, loss: float) -> None: ...
    def measured(self, history: dict, target: float | None) -> None: ...
    def close(self) -> None: ...


def fit(
    kind: str | Seq2SeqModel = "rnnsearch",
    task: str = "dates",
    *,
    config: TrainConfig | None = None,
    model_config: object | None = None,
    target: float | None = None,
    max_steps: int | None = None,
    seed: int | None = None,
    progress: bool = True,
    observer: Observer | None = None,
    corpus: dict | None = None,
) -> tuple[Seq2SeqModel, dict]:
    """Train a model on ``task`` until its held-out score >= target (or ``max_steps``).

    ``kind``: a kind of :data:`attnlab.models.registry.MODEL_KINDS` (a fresh model is built
    from the seed, of ``model_config``'s sizes, default the recipe's), or a model already
    built for a generated task (trained in place).  ``config``: the training config (default
    the recipe's, :func:`attnlab.training.config.default_configs`); ``target`` (held-out exact
    match, or dev chrF for the word models), ``max_steps`` and ``seed`` override it.  ``progress``: a tqdm
    bar; ``observer``: told of every step and measurement (e.g. a
    :class:`~attnlab.pictures.training_plots.LivePlot`).  ``corpus``: a word model's corpus
    (default :func:`attnlab.text.corpus.load_corpus` of the task's language).

    Returns ``(model, history)``; history has lists ``step``, ``loss`` (mean training loss
    since the previous measurement), the held-out score (``accuracy``: exact match on the
    generated tasks; ``dev_chrf``: the word models), ``seconds`` (since the start,
    measurements included), and ``steps``, ``seconds_total``, ``cpu_seconds_total``,
    ``reached`` (the step at which the target was reached, or None), ``best_step`` (whose
    weights are returned), ``averaged`` and ``config``.
    """
    name = kind if isinstance(kind, str) else kind.kind
    config = config or default_configs(name, task)[1]
    overrides = {"target": target, "max_steps": max_steps, "seed": seed}
    config = replace(config, **{k: v for k, v in overrides.items() if v is not None}).check()
    shown = [o for o in (_Bar.make(name, task, config, progress), observer) if o is not None]
    with torch_threads(config.threads):
        torch.manual_seed(config.seed)  # the initial weights
        ex = examples(kind, task, config, model_config, corpus)
        return ex.model, _train(ex, config, shown)


def examples(
    kind: str | Seq2SeqModel,
    task: str,
    cfg: TrainConfig,
    model_config: object | None = None,
    corpus: dict | None = None,
) -> Examples:
    """The model (built from torch's current seed if ``kind`` is a kind), its training
    examples and its held-out score, for a generated task or a corpus task."""
    if task in CORPUS_TASKS:
        if not isinstance(kind, str):
            raise ValueError("a word model builds its vocabularies from the corpus: give its kind")
        model_config = model_config or default_configs(kind, task)[0]
        return word_examples(kind, cfg, model_config, corpus or load_corpus(CORPUS_TASKS[task]))
    t = get_task(task)
    model = new_model(kind, t, model_config) if isinstance(kind, str) else kind
    make = lambda n, seed, split: t.make(n, seed, **cfg.task_kwargs(t.name, split))  # noqa: E731
    data = encode_pairs(make(cfg.n_train, cfg.seed, "train"), model.src_vocab, model.tgt_vocab)
    valid = make(cfg.n_valid, VALID_SEED_OFFSET + cfg.seed, "test")
    return Examples(model, data, lambda m: evaluate(m, valid)["exact_match"], "accuracy")


# --------------------------------------------------------------------------- showing progress
class _Bar:
    """The tqdm bar of a run: one tick a step, the last loss and score after a measurement."""

    def __init__(self, bar, metric: str):
        self.bar, self.metric = bar, metric

    @classmethod
    def make(cls, kind: str, task: str, cfg: TrainConfig, progress: bool) -> _Bar | None:
        if not progress:
            return None
        metric = "dev_chrf" if task in CORPUS_TASKS else "accuracy"
        bar = tqdm(total=cfg.max_steps, desc=f"{kind} on {task}", unit="step", mininterval=1.0)
        return cls(bar, metric)

    def step(self, step: int, loss: float) -> None:
        self.bar.update(1)

    def measured(self, history: dict, target: float | None) -> None:
        last = {"loss": history["loss"][-1], self.metric: history[self.metric][-1]}
        self.bar.set_postfix({k: f"{v:.3f}" for k, v in last.items()})

    def close(self) -> None:
        self.bar.close()


# --------------------------------------------------------------------------- the loop
def optimiser(model: nn.Module, cfg: TrainConfig):
    """AdamW (Adam when ``weight_decay`` is 0) and its learning-rate schedule."""
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)

    def lr_factor(step: int) -> float:  # lr_t = lr * factor(t)
        if step < cfg.warmup:
            return (step + 1) / cfg.warmup  # linear warm-up
        if cfg.decay:
            done = (step - cfg.warmup) / max(1, cfg.max_steps - cfg.warmup)
            return 1.0 - 0.9 * min(1.0, done)  # linear decay to 1/10
        return 1.0

    return opt, torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)


def loss_function(model: Seq2SeqModel, cfg: TrainConfig) -> nn.CrossEntropyLoss:
    """-log p(y_t | y_<t, x) per target token, label-smoothed by ``cfg``; <pad> does not count."""
    return nn.CrossEntropyLoss(
        ignore_index=model.tgt_vocab.pad, label_smoothing=cfg.label_smoothing
    )


def train_step(model, batch: Batch, opt, sched, loss_fn, clip: float) -> float:
    """One teacher-forced step on ``batch`` = (src, src_len, tgt_in, tgt_out); the loss."""
    src, src_len, tgt_in, tgt_out = batch
    logits = model(src, src_len, tgt_in)  # (B, T, V)
    loss = loss_fn(logits.flatten(0, 1), tgt_out.flatten())  # -log p(y_t | y_<t, x)
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), clip)
    opt.step()
    sched.step()
    return loss.item()


class _Kept:
    """The weights a run returns: the last ones, or (``keep_best``) those of the best
    measurement, or the mean of the last ``average_last`` measured ones if it is better."""

    def __init__(self, cfg: TrainConfig):
        self.on, self.best, self.best_state, self.best_step = (
            cfg.keep_best,
            -float("inf"),
            None,
            None,
        )
        self.recent: deque = deque(maxlen=max(1, cfg.average_last))  # the last measured weights

    def measured(self, model: nn.Module, value: float, step: int) -> None:
        if not self.on:
            return
        self.recent.append(copy.deepcopy(model.state_dict()))
        if value > self.best:
            self.best, self.best_state, self.best_step = (
                value,
                copy.deepcopy(model.state_dict()),
                step,
            )

    def restore(self, ex: Examples, history: dict) -> None:
        """Put the kept weights into the model; note which in ``history``."""
        model = ex.model
        history["best_step"], history["averaged"] = self.best_step or history["steps"], None
        if not self.on or self.best_state is None:
            return
        if len(self.recent) > 1:  # Vaswani et al. 6.1: the mean of the last checkpoints, if better
            model.load_state_dict(average_states(list(self.recent)))
            averaged = ex.measure(model)
            history["averaged"] = {"last": len(self.recent), ex.metric: averaged}
            if averaged > self.best:
                self.best_state, history["best_step"] = model.state_dict(), history["step"][-1]
        model.load_state_dict(self.best_state)


def average_states(states: list[dict]) -> dict:
    """The element-wise mean of model weights (``state_dict``s of one model)."""
    return {k: torch.stack([s[k] for s in states]).mean(dim=0) for k in states[0]}


def _train(ex: Examples, cfg: TrainConfig, shown: list[Observer]) -> dict:
    model = ex.model
    opt, sched = optimiser(model, cfg)
    loss_fn = loss_function(model, cfg)
    history: dict = {"step": [], "loss": [], ex.metric: [], "seconds": []}
    kept, reached, losses, step = _Kept(cfg), None, [], 0
    start, cpu_start = time.perf_counter(), time.process_time()  # CPU: all training threads
    model.train()
    try:
        for batch in batches(ex.data, cfg, model.src_vocab, model.tgt_vocab):
            step += 1
            losses.append(train_step(model, batch, opt, sched, loss_fn, cfg.clip))
            for o in shown:
                o.step(step, losses[-1])
            if step % cfg.eval_every == 0 or step == cfg.max_steps:
                value = _measure(ex, history, losses, step, start)
                losses = []
                kept.measured(model, value, step)
                for o in shown:
                    o.measured(history, cfg.target)
                if cfg.target is not None and value >= cfg.target:
                    reached = step
            if reached or step >= cfg.max_steps:
                break
    finally:
        for o in shown:
            o.close()
        model.eval()
    history.update(steps=step, reached=reached)
    kept.restore(ex, history)
    model.eval()
    history.update(
        seconds_total=time.perf_counter() - start,
        cpu_seconds_total=time.process_time() - cpu_start,
        config=asdict(cfg),
    )
    return history


def _measure(ex: Examples, history: dict, losses: list[float], step: int, start: float) -> float:
    value = ex.measure(ex.model)
    history["step"].append(step)
    history["loss"].append(sum(losses) / len(losses))
    history[ex.metric].append(value)
    history["seconds"].append(time.perf_counter() - start)  # the measurement included
    ex.model.train()
    return value
