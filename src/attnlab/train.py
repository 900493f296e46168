"""Training: ``fit(...)`` for a notebook cell, and ``python -m attnlab.train`` for the shipped models.

Everything is counted in optimisation **steps**, not seconds, so a run gives the same model
on a busy machine as on an idle one: a fixed seed, a fixed number of threads (1), Adam with
gradient clipping, the held-out exact match measured every ``eval_every`` steps, and an
early stop as soon as it reaches ``target`` (or at ``max_steps``).

    >>> from attnlab.train import fit
    >>> model, history = fit("rnnsearch", "dates", target=0.99)   # ~5 s on 2 cores

In a notebook ``fit`` draws the loss and held-out accuracy live, updating one picture in
place; elsewhere it shows a tqdm bar (``progress=True``) or nothing.

Command line::

    python -m attnlab.train --model rnnsearch --task dates     # -> checkpoints/rnnsearch-dates.*
    python -m attnlab.train --all                              # every shipped dates model
"""

from __future__ import annotations

import argparse
import io
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch
from torch import Tensor, nn

from attnlab.data import Task, Vocab, get_task, normalise
from attnlab.decode import Seq2SeqModel, greedy

__all__ = [
    "TrainConfig",
    "MODEL_NAMES",
    "default_configs",
    "build_model",
    "encode_pairs",
    "evaluate",
    "fit",
    "train_and_save",
    "main",
]

#: Short model names (used in checkpoint names) -> model kind.
MODEL_NAMES = {"rnnenc": "rnnencdec", "rnnsearch": "rnnsearch", "transformer": "transformer"}
SHORT_NAMES = {kind: short for short, kind in MODEL_NAMES.items()}

#: Seeds of the example sets, offset from the training seed so that they never coincide.
VALID_SEED_OFFSET, TEST_SEED_OFFSET = 1_000_000, 2_000_000


@dataclass
class TrainConfig:
    """How to train (a step budget, not a time budget)."""

    lr: float = 1e-2  # Adam's learning rate
    batch_size: int = 128
    max_steps: int = 3000  # the budget: stop here if the target is not reached
    eval_every: int = 50  # steps between two measurements of held-out exact match
    target: float | None = 0.995  # early stop at this held-out exact match (None: never)
    warmup: int = 0  # steps of linear learning-rate warm-up
    decay: bool = False  # then decay the learning rate linearly to lr / 10 at max_steps
    clip: float = 1.0  # gradient norm clipping
    seed: int = 0
    # torch threads.  One: at this size a second thread gains ~20% on an idle 2-core machine
    # but costs 5-15x when another process shares the cores (measured); the last digits of
    # the results depend on it, so it is part of the recipe.
    threads: int = 1
    n_train: int = 50_000  # training examples generated from the seed
    n_valid: int = 1000  # held-out examples measured during training
    n_test: int = 2000  # fresh examples measured once at the end (the card's accuracy)
    bucket: bool = False  # draw each batch among examples of similar length (less padding)
    train_length: list[int] = field(default_factory=lambda: [5, 60])  # reverse: lengths lo..hi
    test_length: list[int] = field(default_factory=lambda: [5, 60])  # reverse: held-out lengths

    def task_kwargs(self, task: str, split: str) -> dict:
        if task != "reverse":
            return {}
        return {"length": tuple(self.train_length if split == "train" else self.test_length)}


def default_configs(kind: str, task: str) -> tuple[object, TrainConfig]:
    """The model config and training config the shipped models use."""
    from attnlab.seq2seq import RNNConfig
    from attnlab.transformer import TransformerConfig

    t = get_task(task)
    lens = {"max_src_len": t.max_src_len, "max_tgt_len": t.max_tgt_len}
    if kind == "rnnsearch":
        cfg = RNNConfig(**lens)
        train = TrainConfig(lr=1e-2, max_steps=3000)
    elif kind == "rnnencdec":
        cfg = RNNConfig(enc_hidden=128, dec_hidden=128, **lens)
        # A fixed budget, no early stop: twice the 100 steps RNNSearch needs on dates; the
        # card reports what it reaches (about 0.9 where RNNSearch has 0.999).
        train = TrainConfig(lr=1e-2, max_steps=200, target=None)
    elif kind == "transformer":
        cfg = TransformerConfig(**lens)
        # 0.995 on 1000 held-out dates left it at 0.993 on 2000 fresh ones: aim higher.
        train = TrainConfig(lr=3e-3, warmup=100, decay=True, max_steps=1500, target=0.999)
    else:
        raise ValueError(f"unknown model {kind!r}; choose one of {', '.join(MODEL_NAMES)}")
    if task == "reverse":
        # The length experiment: the same fixed budget for every model (~90 s each on an
        # idle 2-core machine), batches of similar lengths, no early stop.
        train = replace(
            train, max_steps=1000, eval_every=100, n_valid=300, target=None, bucket=True
        )
    return cfg, train


def build_model(kind: str, task: str | Task, config: object | None = None) -> Seq2SeqModel:
    """A fresh, untrained model of ``kind`` ("rnnenc"/"rnnencdec", "rnnsearch", "transformer")."""
    from attnlab.seq2seq import RNNEncDec, RNNSearch
    from attnlab.transformer import Transformer

    kind = MODEL_NAMES.get(kind, kind)
    task = get_task(task) if isinstance(task, str) else task
    classes = {"rnnencdec": RNNEncDec, "rnnsearch": RNNSearch, "transformer": Transformer}
    if kind not in classes:
        raise ValueError(f"unknown model {kind!r}; choose one of {', '.join(MODEL_NAMES)}")
    config = config if config is not None else default_configs(kind, task.name)[0]
    return classes[kind](task.src_vocab, task.tgt_vocab, config)


# --------------------------------------------------------------------------- data as tensors
def encode_pairs(pairs: list[tuple[str, str]], src_vocab: Vocab, tgt_vocab: Vocab) -> dict:
    """Padded id tensors of (source, target) pairs.

    src (N, n) = x_1..x_n <eos> <pad>..., src_len (N,), tgt_in (N, T) = <sos> y_1..y_m <pad>...,
    tgt_out (N, T) = y_1..y_m <eos> <pad>... (the next token at every position).
    """
    srcs = [
        src_vocab.encode(normalise(s, src_vocab), unknown="unk") + [src_vocab.eos] for s, _ in pairs
    ]
    tgts = [tgt_vocab.encode(t) for _, t in pairs]
    n, T = max(map(len, srcs)), max(map(len, tgts)) + 1
    pad = lambda ids, length: ids + [0] * (length - len(ids))  # noqa: E731  (<pad> = 0)
    src = torch.tensor([pad(s, n) for s in srcs])  # (N, n)
    tgt_in = torch.tensor([pad([tgt_vocab.sos, *y], T) for y in tgts])  # (N, T)
    tgt_out = torch.tensor([pad([*y, tgt_vocab.eos], T) for y in tgts])  # (N, T)
    src_len = torch.tensor([len(s) for s in srcs])  # (N,)
    return {"src": src, "src_len": src_len, "tgt_in": tgt_in, "tgt_out": tgt_out}


def _batch(data: dict, idx: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    src_len = data["src_len"][idx]
    n = int(src_len.max())
    tgt_out = data["tgt_out"][idx]
    T = int((tgt_out != 0).sum(dim=1).max())
    return data["src"][idx, :n], src_len, data["tgt_in"][idx, :T], tgt_out[:, :T]


@torch.no_grad()
def evaluate(
    model: Seq2SeqModel, pairs: list[tuple[str, str]], batch_size: int = 1000
) -> dict[str, float]:
    """Greedy ``exact_match`` (whole output right) and ``token_accuracy`` (right characters
    at the right positions, over the target's characters) on ``pairs``."""
    data = encode_pairs(pairs, model.src_vocab, model.tgt_vocab)
    exact, correct, total = 0, 0, 0
    for i in range(0, len(pairs), batch_size):
        idx = torch.arange(i, min(i + batch_size, len(pairs)))
        src, src_len, _, tgt_out = _batch(data, idx)
        outs = greedy(model, src, src_len)
        for out, y in zip(outs, tgt_out.tolist(), strict=False):
            y = y[: y.index(model.tgt_vocab.eos)]
            exact += out == y
            correct += sum(a == b for a, b in zip(out, y, strict=False))
            total += len(y)
    return {"exact_match": exact / len(pairs), "token_accuracy": correct / max(total, 1)}


# --------------------------------------------------------------------------- live plot
def _in_notebook() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


class LivePlot:
    """Loss and held-out accuracy against steps, one picture updated in place in a notebook."""

    def __init__(self, title: str):
        from IPython.display import Image, display
        from matplotlib.figure import Figure

        self.fig = Figure(figsize=(8, 2.6), dpi=80)
        self.ax_loss, self.ax_acc = self.fig.subplots(1, 2)
        (self.loss_line,) = self.ax_loss.plot([], [], color="tab:blue")
        (self.acc_line,) = self.ax_acc.plot([], [], color="tab:green", marker=".")
        self.ax_loss.set(xlabel="step", ylabel="training loss", yscale="log")
        self.ax_acc.set(xlabel="step", ylabel="held-out exact match", ylim=(0, 1.02))
        self.title = title
        self.loss_steps: list[int] = []  # every step's training loss: the live curve
        self.loss_values: list[float] = []
        self.fig.suptitle(title)
        self.fig.tight_layout()
        self.handle = display(Image(data=self._png()), display_id=True)
        self._Image = Image

    def _png(self) -> bytes:
        buf = io.BytesIO()
        self.fig.savefig(buf, format="png")
        return buf.getvalue()

    def add_loss(self, step: int, loss: float, redraw_every: int = 10) -> None:
        """Record one step's loss; redraw every few steps (a redraw costs ~50 ms)."""
        self.loss_steps.append(step)
        self.loss_values.append(loss)
        if step % redraw_every == 0:
            self.loss_line.set_data(self.loss_steps, self.loss_values)
            self.ax_loss.relim()
            self.ax_loss.autoscale_view()
            self.handle.update(self._Image(data=self._png()))

    def update(self, history: dict, target: float | None) -> None:
        steps = history["step"]
        self.loss_line.set_data(self.loss_steps, self.loss_values)
        self.acc_line.set_data(steps, history["accuracy"])
        for ax in (self.ax_loss, self.ax_acc):
            ax.relim()
            ax.autoscale_view(scalex=True, scaley=ax is self.ax_loss)
        if target is not None and not self.ax_acc.lines[1:]:
            self.ax_acc.axhline(target, color="grey", lw=0.8, ls="--")
        self.fig.suptitle(
            f"{self.title}: step {steps[-1]}, {history['seconds'][-1]:.1f} s, "
            f"held-out exact match {history['accuracy'][-1]:.3f}"
        )
        self.handle.update(self._Image(data=self._png()))


# --------------------------------------------------------------------------- training
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
    """Train ``model`` (a name or a model) on ``task`` until held-out exact match >= target.

    ``target`` (or its long name ``target_accuracy``), ``max_steps`` and ``seed`` override
    the defaults of ``default_configs`` (or of ``config``).  ``plot``: draw loss and accuracy live (default: in a notebook);
    ``progress``: a tqdm bar (default: outside a notebook).

    Returns ``(model, history)``; history has lists ``step``, ``loss`` (mean training loss
    since the previous measurement), ``accuracy`` (held-out exact match), ``seconds`` (since
    the start, measurements included), and ``steps``, ``seconds_total``, ``reached`` (the
    step at which the target was reached, or None), ``config``.
    """
    t = get_task(task)
    if isinstance(model, str):
        kind = MODEL_NAMES.get(model, model)
        if config is None:
            config = default_configs(kind, t.name)[1]
    else:
        kind = model.kind
        config = config or default_configs(kind, t.name)[1]
    target = target if target is not None else target_accuracy
    overrides = {"target": target, "max_steps": max_steps, "seed": seed}
    config = replace(config, **{k: v for k, v in overrides.items() if v is not None})
    threads = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    try:
        return _fit(model, t, config, plot, progress)
    finally:
        torch.set_num_threads(threads)


def _fit(
    model: str | Seq2SeqModel,
    task: Task,
    cfg: TrainConfig,
    plot: bool | None,
    progress: bool | None,
) -> tuple[Seq2SeqModel, dict]:
    torch.manual_seed(cfg.seed)  # the initial weights
    if isinstance(model, str):
        model = build_model(model, task)
    train_data = encode_pairs(
        task.make(cfg.n_train, cfg.seed, **cfg.task_kwargs(task.name, "train")),
        model.src_vocab,
        model.tgt_vocab,
    )
    valid = task.make(
        cfg.n_valid, VALID_SEED_OFFSET + cfg.seed, **cfg.task_kwargs(task.name, "test")
    )
    gen = torch.Generator().manual_seed(cfg.seed)  # the order of the batches
    N, B = len(train_data["src"]), cfg.batch_size
    by_length = torch.argsort(train_data["src_len"], stable=True)

    def draw_batch() -> Tensor:
        if not cfg.bucket:
            return torch.randint(N, (B,), generator=gen)  # (B,) example indices
        window = min(N, 8 * B)  # B examples among 8B neighbours in length order
        first = int(torch.randint(N - window + 1, (1,), generator=gen))
        return by_length[first + torch.randint(window, (B,), generator=gen)]

    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)

    def lr_factor(step: int) -> float:  # lr_t = lr * factor(t)
        if step < cfg.warmup:
            return (step + 1) / cfg.warmup  # linear warm-up
        if cfg.decay:
            done = (step - cfg.warmup) / max(1, cfg.max_steps - cfg.warmup)
            return 1.0 - 0.9 * min(1.0, done)  # linear decay to 1/10
        return 1.0

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
    loss_fn = nn.CrossEntropyLoss(ignore_index=0)  # <pad> positions do not count

    notebook = _in_notebook()
    plot = notebook if plot is None else plot
    progress = not notebook if progress is None else progress
    live = LivePlot(f"{model.kind} on {task.name}") if plot else None
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(
            total=cfg.max_steps, desc=f"{model.kind} on {task.name}", unit="step", mininterval=1.0
        )

    history: dict = {"step": [], "loss": [], "accuracy": [], "seconds": []}
    reached, losses, step = None, [], 0
    start = time.perf_counter()
    model.train()
    while step < cfg.max_steps:
        idx = draw_batch()
        src, src_len, tgt_in, tgt_out = _batch(train_data, idx)
        logits = model(src, src_len, tgt_in)  # (B, T, V)
        loss = loss_fn(logits.flatten(0, 1), tgt_out.flatten())  # -log p(y_t | y_<t, x)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
        opt.step()
        sched.step()
        step += 1
        losses.append(loss.item())
        if live is not None:
            live.add_loss(step, losses[-1])
        if bar is not None:
            bar.update(1)
        if step % cfg.eval_every == 0 or step == cfg.max_steps:
            acc = evaluate(model, valid)["exact_match"]
            model.train()
            history["step"].append(step)
            history["loss"].append(sum(losses) / len(losses))
            history["accuracy"].append(acc)
            history["seconds"].append(time.perf_counter() - start)
            losses = []
            if bar is not None:
                bar.set_postfix(loss=f"{history['loss'][-1]:.3f}", acc=f"{acc:.3f}")
            if live is not None:
                live.update(history, cfg.target)
            if cfg.target is not None and acc >= cfg.target:
                reached = step
                break
    if bar is not None:
        bar.close()
    model.eval()
    history.update(
        steps=step,
        seconds_total=time.perf_counter() - start,
        reached=reached,
        config=asdict(cfg),
    )
    return model, history


# --------------------------------------------------------------------------- command line
def train_and_save(
    short: str,
    task: str,
    out_dir: Path | None = None,
    seed: int = 0,
    name: str | None = None,
    config: TrainConfig | None = None,
    progress: bool = True,
) -> Path:
    """Train one model with its defaults, measure it on fresh examples, save weights + card."""
    from attnlab import checkpoints

    kind = MODEL_NAMES.get(short, short)
    t = get_task(task)
    model_cfg, train_cfg = default_configs(kind, task)
    train_cfg = replace(config or train_cfg, seed=seed)
    model, history = fit(kind, task, config=train_cfg, plot=False, progress=progress)
    torch.set_num_threads(train_cfg.threads)
    test_pairs = t.make(
        train_cfg.n_test, TEST_SEED_OFFSET + seed, **train_cfg.task_kwargs(task, "test")
    )
    scores = evaluate(model, test_pairs)
    name = name or f"{SHORT_NAMES[kind]}-{task}"
    card = {
        "name": name,
        "kind": kind,
        "task": task,
        "config": asdict(model_cfg),
        "train": history["config"],
        "src_vocab": model.src_vocab.to_list(),
        "tgt_vocab": model.tgt_vocab.to_list(),
        "seed": seed,
        "steps": history["steps"],
        "reached_target_at_step": history["reached"],
        "train_seconds": round(history["seconds_total"], 2),
        "heldout_accuracy": scores["exact_match"],
        "heldout_token_accuracy": scores["token_accuracy"],
        "heldout_examples": train_cfg.n_test,
        "heldout_seed": TEST_SEED_OFFSET + seed,
        "history": {k: history[k] for k in ("step", "loss", "accuracy", "seconds")},
        "parameters": model.num_parameters(),
        "torch_version": torch.__version__,
    }
    path = checkpoints.save(model, name, card, directory=out_dir)
    print(
        f"{name}: {history['steps']} steps, {history['seconds_total']:.1f} s, "
        f"held-out exact match {scores['exact_match']:.4f} on {train_cfg.n_test} -> {path}"
    )
    return path


#: The dates models ``--all`` retrains (the length experiment trains its own).
SHIPPED_DATES = ("rnnsearch", "transformer", "rnnenc")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m attnlab.train", description=__doc__.split("\n")[0])
    p.add_argument("--model", choices=sorted({*MODEL_NAMES, *MODEL_NAMES.values()}))
    p.add_argument("--task", default="dates", choices=["dates", "reverse"])
    p.add_argument("--all", action="store_true", help="retrain every shipped dates model")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-steps", type=int, default=None, help="override the step budget")
    p.add_argument("--target", type=float, default=None, help="override the early-stop target")
    p.add_argument("--out", type=Path, default=None, help="folder (default: the package's)")
    args = p.parse_args(argv)
    if not args.all and not args.model:
        p.error("give --model (and --task), or --all")
    jobs = [(m, "dates") for m in SHIPPED_DATES] if args.all else [(args.model, args.task)]
    for short, task in jobs:
        cfg = default_configs(MODEL_NAMES.get(short, short), task)[1]
        if args.max_steps is not None:
            cfg = replace(cfg, max_steps=args.max_steps)
        if args.target is not None:
            cfg = replace(cfg, target=args.target if args.target > 0 else None)
        train_and_save(short, task, out_dir=args.out, seed=args.seed, config=cfg)


if __name__ == "__main__":
    main()
