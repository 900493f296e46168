"""Training: ``fit(...)`` for a notebook cell (it writes nothing), and the training loop.

Everything is counted in optimisation **steps**, not seconds, so a run gives the same model
on a busy machine as on an idle one: a fixed seed, a fixed number of threads (1), Adam with
gradient clipping, the held-out exact match measured every ``eval_every`` steps, and an
early stop as soon as it reaches ``target`` (or at ``max_steps``).

    >>> from attnlab.training.loop import fit
    >>> model, history = fit("rnnsearch", "dates", target=0.99)   # ~5 s on 2 cores

In a notebook ``fit`` draws the loss and held-out accuracy live, updating one picture in
place; elsewhere it shows a tqdm bar (``progress=True``) or nothing.  The recipes are in
:mod:`attnlab.training.config`, the tensors and the held-out score in :mod:`attnlab.training.batches`, and
the command line that saves checkpoints (``python -m attnlab.cli``) in :mod:`attnlab.cli`.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass, replace

import torch
from torch import nn
from tqdm.auto import tqdm  # its notebook bar in a kernel, its terminal bar elsewhere

from attnlab.models.base import Seq2SeqModel
from attnlab.pictures.training_plots import LivePlot
from attnlab.text.tasks import Task, get_task
from attnlab.training.batches import encode_pairs, evaluate, take
from attnlab.training.config import VALID_SEED_OFFSET, TrainConfig, default_configs, new_model

__all__ = ["TrainConfig", "default_configs", "encode_pairs", "evaluate", "fit", "train_step"]


def fit(
    model: str | Seq2SeqModel = "rnnsearch",
    task: str = "dates",
    *,
    target: float | None = None,
    max_steps: int | None = None,
    seed: int | None = None,
    plot: bool | None = None,
    progress: bool | None = None,
    config: TrainConfig | None = None,
    target_accuracy: float | None = None,
) -> tuple[Seq2SeqModel, dict]:
    """Train ``model`` (a kind of :data:`attnlab.models.registry.MODEL_KINDS` or a model) on
    ``task`` until held-out exact match >= target.

    ``target`` (or its long name ``target_accuracy``), ``max_steps`` and ``seed`` override
    the defaults of ``default_configs`` (or of ``config``).  ``plot``: draw loss and accuracy
    live (default: in a notebook); ``progress``: a tqdm bar (default: outside a notebook).

    Returns ``(model, history)``; history has lists ``step``, ``loss`` (mean training loss
    since the previous measurement), ``accuracy`` (held-out exact match), ``seconds`` (since
    the start, measurements included), and ``steps``, ``seconds_total``, ``reached`` (the
    step at which the target was reached, or None), ``config``.
    """
    t = get_task(task)
    kind = model if isinstance(model, str) else model.kind
    config = config or default_configs(kind, t.name)[1]
    target = target if target is not None else target_accuracy
    overrides = {"target": target, "max_steps": max_steps, "seed": seed}
    config = replace(config, **{k: v for k, v in overrides.items() if v is not None}).check()
    threads = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    try:
        torch.manual_seed(config.seed)  # the initial weights
        net = new_model(model, t) if isinstance(model, str) else model
        return net, _fit(net, t, config, _Progress.make(net, t, config, plot, progress))
    finally:
        torch.set_num_threads(threads)


# --------------------------------------------------------------------------- showing progress
def _in_notebook() -> bool:
    """True inside a Jupyter kernel (which has always imported IPython: no import here)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and getattr(shell, "kernel", None) is not None


@dataclass
class _Progress:
    """Where a run shows itself: a live picture (notebook), a tqdm bar, both or neither."""

    live: LivePlot | None
    bar: object | None

    @classmethod
    def make(cls, model, task: Task, cfg: TrainConfig, plot, progress) -> _Progress:
        notebook = _in_notebook()
        plot = notebook if plot is None else plot
        progress = not notebook if progress is None else progress
        title = f"{model.kind} on {task.name}"
        bar = None
        if progress:
            bar = tqdm(total=cfg.max_steps, desc=title, unit="step", mininterval=1.0)
        return cls(LivePlot(title) if plot else None, bar)

    def step(self, step: int, loss: float) -> None:
        if self.live is not None:
            self.live.add_loss(step, loss)
        if self.bar is not None:
            self.bar.update(1)

    def measured(self, history: dict, target: float | None) -> None:
        if self.bar is not None:
            self.bar.set_postfix(
                loss=f"{history['loss'][-1]:.3f}", acc=f"{history['accuracy'][-1]:.3f}"
            )
        if self.live is not None:
            self.live.update(history, target)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# --------------------------------------------------------------------------- the loop
def _batches(data: dict, cfg: TrainConfig):
    """Endless example indices (B,): uniform, or (``bucket``) among neighbours in length."""
    gen = torch.Generator().manual_seed(cfg.seed)  # the order of the batches
    N, B = len(data["src"]), cfg.batch_size
    by_length = torch.argsort(data["src_len"], stable=True)
    window = min(N, 8 * B)  # bucket: B examples among 8B neighbours in length order
    while True:
        if not cfg.bucket:
            yield torch.randint(N, (B,), generator=gen)
        else:
            first = int(torch.randint(N - window + 1, (1,), generator=gen))
            yield by_length[first + torch.randint(window, (B,), generator=gen)]


def _optimiser(model: nn.Module, cfg: TrainConfig):
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)

    def lr_factor(step: int) -> float:  # lr_t = lr * factor(t)
        if step < cfg.warmup:
            return (step + 1) / cfg.warmup  # linear warm-up
        if cfg.decay:
            done = (step - cfg.warmup) / max(1, cfg.max_steps - cfg.warmup)
            return 1.0 - 0.9 * min(1.0, done)  # linear decay to 1/10
        return 1.0

    return opt, torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)


def train_step(model, batch, opt, sched, loss_fn, clip: float) -> float:
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


def _fit(model: Seq2SeqModel, task: Task, cfg: TrainConfig, shown: _Progress) -> dict:
    make = lambda n, seed, split: task.make(n, seed, **cfg.task_kwargs(task.name, split))  # noqa: E731
    data = encode_pairs(make(cfg.n_train, cfg.seed, "train"), model.src_vocab, model.tgt_vocab)
    valid = make(cfg.n_valid, VALID_SEED_OFFSET + cfg.seed, "test")
    opt, sched = _optimiser(model, cfg)
    loss_fn = nn.CrossEntropyLoss(ignore_index=0)  # <pad> positions do not count
    history: dict = {"step": [], "loss": [], "accuracy": [], "seconds": []}
    reached, losses, step, start = None, [], 0, time.perf_counter()
    model.train()
    try:
        for idx in _batches(data, cfg):
            step += 1
            losses.append(train_step(model, take(data, idx), opt, sched, loss_fn, cfg.clip))
            shown.step(step, losses[-1])
            if step % cfg.eval_every == 0 or step == cfg.max_steps:
                _measure(model, valid, history, losses, step, start)
                losses = []
                shown.measured(history, cfg.target)
                if cfg.target is not None and history["accuracy"][-1] >= cfg.target:
                    reached = step
            if reached or step >= cfg.max_steps:
                break
    finally:
        shown.close()
        model.eval()
    seconds = time.perf_counter() - start
    return {
        **history,
        "steps": step,
        "seconds_total": seconds,
        "reached": reached,
        "config": asdict(cfg),
    }


def _measure(model, valid, history: dict, losses: list[float], step: int, start: float) -> None:
    history["step"].append(step)
    history["loss"].append(sum(losses) / len(losses))
    history["accuracy"].append(evaluate(model, valid)["exact_match"])
    history["seconds"].append(time.perf_counter() - start)  # the measurement included
    model.train()


if __name__ == "__main__":  # not the command line: attnlab.cli imports this module
    raise SystemExit("the command line is attnlab.cli: python -m attnlab.cli --help")
