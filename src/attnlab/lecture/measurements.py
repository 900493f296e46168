"""What the deck measures: time, sequential steps and FLOPs of an RNN against attention, and
the head study; the slow ones cached in ``results/deck.json`` so that Run-All stays fast."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from attnlab import attention as A
from attnlab.experiments.head_count import train_head_counts
from attnlab.files import RESULTS_DIR, write_atomic
from attnlab.lecture.display import Picture, Table
from attnlab.lecture.tables import model_card
from attnlab.models import catalogue
from attnlab.models.threads import torch_threads
from attnlab.pictures import plots
from attnlab.text.tasks import get_task
from attnlab.training.batches import encode_pairs, take
from attnlab.training.checkpoints import load
from attnlab.training.config import default_configs, new_model
from attnlab.training.evaluate import evaluate
from attnlab.training.loop import loss_function, optimiser, train_step

__all__ = [
    "time_rnn_vs_attention",
    "plot_timings",
    "graph_depth",
    "sequential_steps",
    "flops_per_step",
    "head_study",
    "MEASUREMENTS_FILE",
    "measure",
    "write_measurements",
    "read_measurements",
    "equal_compute",
    "heads_compared",
    "heads_measured",
]


# --------------------------------------------------------------------------- timing
def time_rnn_vs_attention(
    lengths: Sequence[int] = (16, 32, 64, 128, 256, 512), d: int = 256, repeats: int = 5
) -> dict[str, list[float]]:
    """Forward time (ms) of a GRU over n steps against one self-attention layer over n tokens.

    The GRU must take its n steps one after another (h_t needs h_{t-1}); self-attention
    computes all n outputs with a few large matrix products.  Past n = d its O(n^2 d) work
    exceeds the GRU's O(n d^2) (Table 1 of Vaswani et al.), hence d = 256 here: the deck's
    lengths lie on both sides of d.  More work is not more time: in the deck's stored run, on
    one CPU thread, self-attention is faster at every n measured, past n = d too, because the
    GRU's n small sequential steps each pay their overhead while large matrix products run
    efficiently even on one core.  Times vary from run to run and machine to machine.
    """
    torch.manual_seed(0)
    gru = torch.nn.GRU(d, d, batch_first=True)
    mha = A.MultiHeadAttention(d, 4)
    result: dict[str, list[float]] = {"n": list(lengths), "rnn_ms": [], "attention_ms": []}
    with torch.no_grad():
        for n in lengths:
            x = torch.randn(1, n, d)  # (B, n, d)
            result["rnn_ms"].append(_median_ms(gru, (x,), repeats))  # n sequential steps
            result["attention_ms"].append(_median_ms(mha, (x, x, x), repeats))  # all at once
    return result


def _median_ms(fn, args, repeats: int) -> float:
    fn(*args)  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args)
        times.append(1000 * (time.perf_counter() - start))
    return float(np.median(times))


def plot_timings(timings: dict[str, list[float]]) -> Picture:
    """Log-log plot of the timings from :func:`time_rnn_vs_attention` (``plots.timings``)."""
    return Picture(plots.timings(timings), "forward time of a GRU and of self-attention", timings)


# --------------------------------------------------------------------------- sequential steps
def graph_depth(out: torch.Tensor) -> int:
    """The longest chain of operations that must run one after another to compute ``out``.

    Read from the autograd graph of ``out`` (each node one operation, an edge "needs the
    result of"): operations on one chain cannot overlap, whatever the hardware, so this is the
    number of sequential steps; everything off the chain could run in parallel.
    """
    root = out.grad_fn
    if root is None:
        raise ValueError("graph_depth needs a tensor computed from inputs that require grad")
    children: dict = {}
    stack = [root]
    while stack:  # every node once (no recursion: the RNN's chain is thousands deep)
        fn = stack.pop()
        if fn in children:
            continue
        children[fn] = [nxt for nxt, _ in fn.next_functions if nxt is not None]
        stack.extend(k for k in children[fn] if k not in children)
    parents = dict.fromkeys(children, 0)
    for kids in children.values():
        for k in kids:
            parents[k] += 1
    order, ready = [], [root]
    while ready:  # topological order, root first
        fn = ready.pop()
        order.append(fn)
        for k in children[fn]:
            parents[k] -= 1
            if parents[k] == 0:
                ready.append(k)
    depth: dict = {}
    for fn in reversed(order):  # leaves first
        depth[fn] = 1 + max((depth[k] for k in children[fn]), default=0)
    return depth[root]


SEQUENTIAL_STEPS = {"lengths": [8, 32, 128, 512], "d": 32}  # what the deck counts


def sequential_steps(
    lengths: Sequence[int] = (8, 32, 128, 512), d: int = 32, cached: dict | None = None
) -> Table:
    """Sequential steps (:func:`graph_depth`) of a GRU over n tokens and of self-attention.

    The GRU computes h_t = GRUCell(x_t, h_{t-1}) for t = 1..n; one self-attention layer
    (:class:`attnlab.attention.MultiHeadAttention`, 4 heads) computes all n outputs at once.
    The counts of :data:`SEQUENTIAL_STEPS` are read from ``results/deck.json`` (``cached``,
    default the shipped file, as :func:`measure` wrote them: the same graphs, counted once);
    any other lengths or d are counted now.
    """
    stored = _stored_steps(cached)
    if stored is not None and stored["lengths"] == [int(n) for n in lengths] and stored["d"] == d:
        return Table(stored["header"], stored["rows"], caption=stored["caption"])
    torch.manual_seed(0)
    cell, mha = torch.nn.GRUCell(d, d), A.MultiHeadAttention(d, 4)
    rows = []
    for n in lengths:
        x = torch.randn(n, d, requires_grad=True)  # (n, d)
        h = torch.zeros(1, d)
        for t in range(n):
            h = cell(x[t : t + 1], h)  # h_t needs h_{t-1}: (1, d)
        y = mha(x, x, x)  # all n positions at once: (n, d)
        rows.append([str(n), f"{graph_depth(h):,}", f"{graph_depth(y):,}"])
    return Table(
        ["n tokens", "RNN (GRU cell, one step per token)", "one self-attention layer"],
        rows,
        caption="Longest chain of operations that must run one after another (autograd graph)",
    )


def _stored_steps(cached: dict | None) -> dict | None:
    """The counts :func:`measure` stored, or None (no file, or one written before them)."""
    if cached is None:
        try:
            cached = read_measurements()
        except (FileNotFoundError, ValueError):
            return None
    return cached.get("sequential_steps")


def flops_per_step(kind: str, task: str = "reverse", batch: int = 128, seed: int = 1) -> float:
    """GFLOP of one training step (forward, loss, backward) of a fresh ``kind`` model.

    Counted by :class:`torch.utils.flop_counter.FlopCounterMode` on ``batch`` training
    examples of ``task`` (the shipped recipe's sizes), so two designs can be compared by their
    compute rather than by steps or wall-clock time.  The step is the training loop's own
    (:func:`attnlab.training.loop.train_step`); the counter counts the matrix products, so
    the optimiser's update and the clipping add nothing.
    """
    torch.manual_seed(seed)
    t = get_task(task)
    train = default_configs(kind, t.name)[1]
    pairs = t.make(batch, seed=seed, **train.task_kwargs(t.name, "train"))
    model = new_model(kind, t)
    data = encode_pairs(pairs, model.src_vocab, model.tgt_vocab)
    b = take(data, torch.arange(batch), model.tgt_vocab.pad)
    opt, sched = optimiser(model, train)
    model.train()
    with FlopCounterMode(display=False) as counter:
        batch_tensors = (b["src"], b["src_len"], b["tgt_in"], b["tgt_out"])
        train_step(model, batch_tensors, opt, sched, loss_function(model, train), train.clip)
    return counter.get_total_flops() / 1e9


# --------------------------------------------------------------------------- heads
def _keep_heads(model, keep: set[int] | None):
    """Forward pre-hooks on every W^O of ``model``: the heads not in ``keep`` output zeros."""
    handles = []
    if keep is None:
        return handles
    for mha in (m for m in model.modules() if isinstance(m, A.MultiHeadAttention)):
        d_k = mha.d_k

        def zero_others(_, args, d_k=d_k):
            (concat,) = args  # Concat(head_1..head_h): (..., m, d_model)
            mask = torch.zeros(concat.shape[-1])
            for k in keep:
                mask[k * d_k : (k + 1) * d_k] = 1.0
            return (concat * mask,)

        handles.append(mha.W_o.register_forward_pre_hook(zero_others))
    return handles


def head_study(model, n: int = 300, seed: int = 4_000_000) -> Table:
    """Why several heads, measured on a trained Transformer and ``n`` fresh held-out examples.

    For each configuration, the exact match when every attention of the model keeps all its
    heads, only head k, or every head but k (the others' outputs set to zero before W^O).
    """
    task = get_task(model.card["task"])
    pairs = task.make(n, seed=seed)
    h = model.config.num_heads

    def score(keep):
        handles = _keep_heads(model, keep)
        try:
            return evaluate(model, pairs, batch_size=n)["exact_match"]
        finally:
            for handle in handles:
                handle.remove()

    rows = [["all heads", f"{score(None):.1%}", ""]]
    for k in range(h):
        others = set(range(h)) - {k}
        rows.append([f"head {k + 1}", f"{score({k}):.1%}", f"{score(others):.1%}"])
    return Table(
        ["heads in every attention", "only this head", "all but this head"],
        rows,
        caption=f"{model.card['name']}: exact match on {n} fresh held-out examples",
    )


# --------------------------------------------------------------------------- cached measurements
#: The deck's slow measurements (seconds each), written by :func:`write_measurements`
#: (``python -m attnlab deck``) and read by the deck, so that Run-All stays within its 20 s;
#: tests/test_lecture.py checks that they are what the functions above measure now.
MEASUREMENTS_FILE = RESULTS_DIR / "deck.json"
#: The length experiment's two designs (kind -> its model on all lengths, the catalogue's first).
COMPARED = {
    kind: catalogue.lecture_model(kind, "reverse")
    for kind in dict.fromkeys(m.kind for m in catalogue.entries(task="reverse"))
}
HEAD_STUDY = {"model": "transformer-dates", "n": 200}


def measure() -> dict:
    """Run the measurements the deck shows: FLOPs per training step, the head study, the
    sequential steps, and one head against four trained from scratch (about 10 minutes)."""
    flops = {kind: flops_per_step(kind, "reverse", batch=128) for kind in COMPARED}
    model = load(HEAD_STUDY["model"])
    heads = head_study(model, n=HEAD_STUDY["n"])
    return {
        "flops_per_step": {"task": "reverse", "batch": 128, "gflop": flops},
        "head_study": {**HEAD_STUDY, "header": heads.header, "rows": heads.rows},
        "sequential_steps": _counted_steps(),
        "head_count": train_head_counts(),
    }


def _counted_steps() -> dict:
    """:data:`SEQUENTIAL_STEPS` counted now (as :func:`sequential_steps` shows them)."""
    steps = sequential_steps(**SEQUENTIAL_STEPS, cached={})
    return {**SEQUENTIAL_STEPS, "header": steps.header, "rows": steps.rows,
            "caption": steps.caption}  # fmt: skip


def write_measurements(path: Path | str = MEASUREMENTS_FILE) -> Path:
    """Measure (:func:`measure`, on one CPU thread as the deck's numbers say) and write ``path``."""
    path = Path(path)
    with torch_threads(1):
        measured = measure()
    write_atomic(path, json.dumps(measured, indent=1, ensure_ascii=False) + "\n")
    return path


def read_measurements(path: Path | str | None = None) -> dict:
    """The cached measurements (``src/attnlab/results/deck.json``)."""
    path = Path(path) if path is not None else MEASUREMENTS_FILE
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} is missing: run `python -m attnlab deck`") from None


def equal_compute(cached: dict | None = None) -> Table:
    """The length experiment's two models: compute per step (cached FLOPs), steps, time.

    Not an equal-compute comparison: the model without attention gets more FLOPs per step (and
    more parameters) than RNNSearch over the same steps; the deck says by how much.
    """
    flops = (cached or read_measurements())["flops_per_step"]
    rows = []
    for kind, name in COMPARED.items():
        card = model_card(name)
        gflop = flops["gflop"][kind]
        rows.append(
            [
                name,
                f"{card['parameters']:,}",
                f"{1000 * gflop / flops['batch']:.0f}",
                f"{card['steps'] * gflop / 1000:.1f}",
                f"{card['train_seconds'] / 60:.0f} min",
            ]
        )
    return Table(
        ["model", "parameters", "MFLOP per string", "TFLOP in training", "wall-clock"],
        rows,
        caption=f"{card['steps']} steps of {card['train']['batch_size']} strings each; FLOPs "
        "counted by torch (forward and backward)",
    )


def heads_compared(cached: dict | None = None) -> Table:
    """One head against four at the same d_model, each trained by the date Transformer's
    recipe on every seed (:func:`attnlab.experiments.head_count.train_head_counts`, cached by
    :func:`measure`): steps to the recipe's target and exact match on fresh test dates."""
    found = (cached or read_measurements())["head_count"]
    rows = []
    for h in sorted({r["heads"] for r in found["runs"]}):
        runs = [r for r in found["runs"] if r["heads"] == h]
        reached = [r["reached"] for r in runs]
        steps = ", ".join("–" if s is None else f"{s:,}" for s in reached)
        tests = [r["test_exact_match"] for r in runs]
        rows.append(
            [
                f"h = {h}, d_k = {runs[0]['d_k']}",
                f"{runs[0]['parameters']:,}",
                steps,
                " – ".join(dict.fromkeys(f"{100 * t:.2f}%" for t in (min(tests), max(tests)))),
            ]
        )
    target = f"{100 * found['target']:.1f}%"
    missed = any(r["reached"] is None for r in found["runs"])
    seeds = sorted({r["seed"] for r in found["runs"]})
    return Table(
        ["heads", "parameters", f"steps to {target} (each seed)", "test exact match (min – max)"],
        rows,
        caption=f"the recipe of {found['model']}, d_model = {found['d_model']}, "
        f"{len(seeds)} seeds; validation every {found['eval_every']} steps"
        + (f" (–: not within {found['max_steps']:,})" if missed else "")
        + f"; {found['test_examples']:,} fresh test dates",
    )


def heads_measured(cached: dict | None = None) -> Table:
    """The head study of ``transformer-dates`` as cached by :func:`measure`."""
    heads = (cached or read_measurements())["head_study"]
    caption = f"{heads['model']}: exact match on {heads['n']} fresh held-out dates"
    return Table(heads["header"], heads["rows"], caption=caption)
