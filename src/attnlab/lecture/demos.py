"""Small helpers behind the deck's demo cells, so that each lecture cell stays a few lines.

Each helper returns something that displays itself (an HTML table, highlighted source, a
picture) with a stable text form, so that nbval can compare the stored outputs.  Pictures are
drawn through :mod:`attnlab.pictures.canvas` (Agg canvases, no pyplot) with the lecture's type sizes.
"""

from __future__ import annotations

import argparse
import ast
import html
import inspect
import json
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer
from torch.utils.flop_counter import FlopCounterMode

from attnlab import attention as A
from attnlab import load
from attnlab.decode import decode, greedy
from attnlab.experiments.language import load_results
from attnlab.files import RESULTS_DIR, write_atomic
from attnlab.pictures import canvas, heatmaps
from attnlab.pictures import plots as deck_pictures
from attnlab.pictures.typography import TYPE
from attnlab.text.tasks import get_task
from attnlab.text.vocab import tokenize
from attnlab.training.batches import encode_pairs, evaluate, take
from attnlab.training.checkpoints import CHECKPOINT_DIR, available, read_card
from attnlab.training.config import default_configs, new_model

__all__ = [
    "Table",
    "Source",
    "Picture",
    "Message",
    "show_source",
    "model_table",
    "reverse_demo",
    "time_rnn_vs_attention",
    "plot_timings",
    "causal_demo",
    "head_grid",
    "three_attentions",
    "positional_encoding_picture",
    "alignment_failure",
    "count_parameters",
    "graph_depth",
    "sequential_steps",
    "flops_per_step",
    "teacher_forcing",
    "head_study",
    "MEASUREMENTS_FILE",
    "measure",
    "measurements",
    "equal_compute",
    "heads_measured",
    "held_out_example",
    "self_attention_heads",
    "language_table",
    "head_roles_table",
    "alpha_and_occlusion",
]


# --------------------------------------------------------------------------- display objects
@dataclass
class Table:
    """A small table that shows as HTML in the notebook and as aligned text elsewhere."""

    header: list[str]
    rows: list[list[str]]
    caption: str = ""
    first_width: int | None = None  # % of the width for the first column (row labels)

    def _repr_html_(self) -> str:
        # Inline styles: the offline export does not load the slideshow's rise.css.  Long
        # strings (digits) wrap inside their cell rather than run off the slide.
        td = '<td style="font-family: monospace; overflow-wrap: anywhere; text-align: left">'
        head = "".join(f'<th style="text-align: left">{html.escape(h)}</th>' for h in self.header)
        cols = ""
        if self.first_width:
            rest = (100 - self.first_width) / max(len(self.header) - 1, 1)
            widths = [self.first_width] + [rest] * (len(self.header) - 1)
            cols = "<colgroup>" + "".join(f'<col style="width: {w:.1f}%">' for w in widths)
            cols += "</colgroup>"
        body = "".join(
            "<tr>" + "".join(f"{td}{html.escape(str(c))}</td>" for c in row) + "</tr>"
            for row in self.rows
        )
        cap = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        return (
            '<table class="attnlab-table" style="table-layout: fixed; width: 100%">'
            f"{cap}{cols}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        )

    def __repr__(self) -> str:
        cells = [self.header, *[[str(c) for c in row] for row in self.rows]]
        widths = [max(len(r[i]) for r in cells) for i in range(len(self.header))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
        return "\n".join(([self.caption] if self.caption else []) + lines)


@dataclass
class Source:
    """The source of a library function, shown highlighted (HTML) or as plain text."""

    name: str
    code: str

    def _repr_html_(self) -> str:

        body = highlight(self.code, PythonLexer(), HtmlFormatter(noclasses=True, style="default"))
        title = f"<div class='attnlab-source-name'>{html.escape(self.name)}</div>"
        return f"<div class='attnlab-source'>{title}{body}</div>"

    def __repr__(self) -> str:
        return f"# {self.name}\n{self.code}"


@dataclass
class Picture:
    """A figure drawn on an Agg canvas; shows as PNG, its text form is a one-line summary."""

    fig: object
    summary: str
    data: dict = field(default_factory=dict)  # what was drawn, for code and tests

    def _repr_png_(self) -> bytes:
        return canvas.png_bytes(self.fig, draw=True)

    def __repr__(self) -> str:
        return self.summary


@dataclass
class Message:
    """A one-line result or error message in place of a picture (never a traceback)."""

    text: str

    def _repr_html_(self) -> str:
        return f"<div class='attnlab-message'>{html.escape(self.text)}</div>"

    def __repr__(self) -> str:
        return self.text


# --------------------------------------------------------------------------- source on slides
def _without_docstring(code: str) -> str:
    """``code`` (one def or class) with the docstring of its outermost definition removed."""
    tree = ast.parse(code)
    node = tree.body[0]
    body = getattr(node, "body", [])
    first = body[0] if body else None
    is_doc = isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant)
    if not (is_doc and isinstance(first.value.value, str)):
        return code
    lines = code.splitlines()
    del lines[first.lineno - 1 : first.end_lineno]
    return "\n".join(lines)


def _source(fn: Callable, docstring: bool) -> tuple[str, str]:
    """(qualified name, source) of one function, method or class."""
    target = inspect.unwrap(fn)
    try:
        code = textwrap.dedent(inspect.getsource(target)).rstrip()
    except (TypeError, OSError) as err:
        raise ValueError(f"show_source: no Python source for {fn!r} ({err})") from None
    module = getattr(target, "__module__", "") or ""
    qualname = getattr(target, "__qualname__", getattr(target, "__name__", repr(target)))
    return (f"{module}.{qualname}" if module else qualname), (
        code if docstring else _without_docstring(code)
    )


def show_source(*fns: Callable, docstring: bool = False) -> Source:
    """The real source of each of ``fns`` (functions, methods, classes), highlighted.

    The code is read with :func:`inspect.getsource` from the installed package, so the slide
    always shows the code that runs.  Docstrings are left out unless ``docstring=True``.
    """
    if not fns:
        raise ValueError("show_source needs at least one function")
    parts = [_source(fn, docstring) for fn in fns]
    return Source(", ".join(name for name, _ in parts), "\n\n".join(code for _, code in parts))


# --------------------------------------------------------------------------- tables
def count_parameters(model: torch.nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def _card(name: str) -> dict:
    """A shipped model's card (JSON), read without loading its weights."""

    if name not in available():
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(available())}")
    return read_card(CHECKPOINT_DIR / f"{name}.json")


def model_table(names: Sequence[str] = ("rnnenc-dates", "rnnsearch-dates", "transformer-dates")):
    """Our own "results table": accuracy, parameters, steps and training time of shipped models.

    The figures come from each checkpoint's card (written by the training script when it
    saved the model), so they are what our training measured, not numbers typed into the
    deck; no weights are loaded.  The time is the wall-clock time of the whole training run
    (held-out measurements included) on one CPU thread of a shared 2-core machine; the steps
    are the work, and ``stopped`` says why training ended (target reached or step budget).
    """
    rows = []
    for name in names:
        card = _card(name)
        acc = card.get("heldout_accuracy")
        params = card.get("parameters")
        seconds = card.get("train_seconds")
        reached = card.get("reached_target_at_step")
        target = (card.get("train") or {}).get("target")
        stopped = f"reached {target:.1%}" if reached is not None else "step budget"
        rows.append(
            [
                name,
                f"{100 * acc:.2f}%" if acc is not None else "n/a",
                f"{params:,}" if params is not None else "n/a",
                f"{card.get('steps', 'n/a')} ({stopped})",
                f"{seconds:.0f} s" if seconds is not None else "n/a",
            ]
        )
    return Table(
        ["model", "exact match (held-out)", "parameters", "steps of 128", "training time"],
        rows,
        caption="Dates -> ISO, from the cards: wall-clock time of the whole run, one CPU thread",
    )


def reverse_demo(names: Sequence[str], lengths: Sequence[int], seed: int = 0) -> Table:
    """Reverse random digit strings of the given lengths with each model; mark each answer.

    A right answer shows as a tick; a wrong one shows how many digits it got wrong, then the
    model's output, so the failure is visible without comparing long strings by eye.
    """
    rng = np.random.default_rng(seed)
    models = [load(n) for n in names]
    rows = []
    for length in lengths:
        digits = "".join(rng.choice(list("0123456789"), size=length))
        expected = digits[::-1]
        row = [str(length), digits]
        for model in models:
            try:
                got = model.translate(digits)
            except ValueError as err:  # e.g. longer than the model supports
                got = f"({err})"
            row.append("✓ right" if got == expected else "✗ " + _mark_wrong(got, expected))
        rows.append(row)
    return Table(["length", "input", *names], rows, "Reverse a digit string", first_width=10)


def _mark_wrong(got: str, expected: str) -> str:
    """How many of the expected digits ``got`` has wrong (or missing), then ``got`` itself."""
    wrong = sum(i >= len(got) or got[i] != c for i, c in enumerate(expected))
    return f"{wrong}/{len(expected)} digits wrong: {got}"


# --------------------------------------------------------------------------- timing
def time_rnn_vs_attention(
    lengths: Sequence[int] = (16, 32, 64, 128, 256, 512), d: int = 256, repeats: int = 5
) -> dict[str, list[float]]:
    """Forward time (ms) of a GRU over n steps against one self-attention layer over n tokens.

    The GRU must take its n steps one after another (h_t needs h_{t-1}); self-attention
    computes all n outputs with a few matrix products that run in parallel.  Its O(n^2 d)
    work catches up once n grows past d (Table 1 of Vaswani et al.), hence d = 256 here.
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
    """Log-log plot of the timings from :func:`time_rnn_vs_attention` (``deck_pictures.timings``)."""
    return Picture(
        deck_pictures.timings(timings), "forward time of a GRU and of self-attention", timings
    )


# --------------------------------------------------------------------------- pictures
#: The widest a picture is drawn (px at 100 dpi): narrower than the output area of both the
#: RISE slideshow and the offline export at 1280x720, so it is shown at its own size and
#: its type at the size :mod:`attnlab.pictures.typography` sets.
MAX_WIDTH_PX = 960
#: The smallest cell of a heatmap of words (px on the slide).
CELL_PX = 44


def causal_demo(mask: torch.Tensor | None = None, n: int = 6, d_k: int = 8, seed: int = 0):
    """Masked self-attention on random Q, K, V with ``mask`` (default ``causal_mask(n)``).

    Draws the mask and the weights softmax(QK^T/sqrt(d_k)) with positions numbered 1..n as
    the slides number them; the summary says how much weight lands on future positions
    (exactly 0 with the causal mask).  A mask the attention refuses gives a one-line
    :class:`Message` instead of a traceback (it is the deck's edit-me cell).
    """
    g = torch.Generator().manual_seed(seed)
    if mask is None:
        mask = A.causal_mask(n)
    if not isinstance(mask, torch.Tensor) or mask.dim() != 2 or mask.shape[0] != mask.shape[1]:
        shape = tuple(mask.shape) if isinstance(mask, torch.Tensor) else type(mask).__name__
        return Message(f"✗ the mask must be an (n, n) boolean tensor; got {shape}")
    n = mask.shape[0]
    Q, K, V = (torch.randn(n, d_k, generator=g) for _ in range(3))  # each (n, d_k)
    try:
        _, weights = A.scaled_dot_product_attention(Q, K, V, mask=mask)
    except (TypeError, ValueError) as err:
        return Message(f"✗ {err}")
    future = float(weights.triu(diagonal=1).sum())  # weight on keys j > t
    fig = deck_pictures.mask_and_weights(mask.numpy(), weights.numpy())
    summary = f"masked self-attention, n = {n}: total weight on future positions = {future:.3f}"
    return Picture(fig, summary, {"weights": weights, "mask": mask, "future": future})


def head_grid(model, text: str) -> Picture:
    """Cross-attention of every layer and head of the Transformer on ``text`` (``deck_pictures``)."""

    result = decode(model, text)
    layers, heads = result.alpha.shape[:2]
    summary = f"cross-attention, {layers} layers x {heads} heads: {text!r} -> {result.text!r}"
    fig = deck_pictures.head_grid(result, shown_width_px=MAX_WIDTH_PX, height_px=450)
    return Picture(fig, summary, {"alpha": result.alpha})


def _mean_heads(w: np.ndarray) -> np.ndarray:
    """(h, m, n) -> (m, n): the mean over the heads."""
    return w.mean(axis=0)


def three_attentions(model, text: str, layer: int = -1) -> Picture:
    """The Transformer's three attentions on ``text``, side by side (mean over the heads).

    Encoder self-attention (source x source), masked decoder self-attention (decoder input x
    decoder input: the causal triangle) and cross-attention (decoder input x source), of
    ``layer``.  The decoder's queries and keys are its inputs, the outputs shifted right
    (``<s>``, y_1, y_2, ...): the query at ``<s>`` writes y_1, the one at y_1 writes y_2.
    """
    w = model.attention_weights(text)
    src, out = w["source_tokens"], w["output_tokens"]
    inputs = ["<s>", *out[:-1]]  # the decoder reads its outputs shifted right: <s>, y_1, ...
    panels = [
        ("encoder self", _mean_heads(w["encoder_self"][layer]), src, src),
        ("masked decoder self", _mean_heads(w["decoder_self"][layer]), inputs, inputs),
        ("cross (decoder -> encoder)", _mean_heads(w["cross"][layer]), src, inputs),
    ]
    fig, sizes = canvas.slide_figure(MAX_WIDTH_PX, 455)
    axes = fig.subplots(1, 3, width_ratios=[len(src), len(out) + 2, len(src) + 3])
    labels = [("source", "source"), ("decoder input", "decoder input"), ("source", "")]
    for k, (ax, (title, values, x, y)) in enumerate(zip(axes, panels, strict=True)):
        xlabel, ylabel = labels[k]
        heatmaps.still_heatmap(
            ax,
            values,
            x,
            y,
            title=title,
            colorbar=k == 2,
            xlabel=xlabel,
            ylabel=ylabel,
            sizes=sizes,
        )
    nlayers = w["encoder_self"].shape[0]
    summary = (
        f"layer {range(nlayers)[layer] + 1} of {nlayers}, mean over the heads: {text!r} -> "
        f"{''.join(out[:-1])!r}"
    )
    return Picture(fig, summary, {title: values for title, values, _, _ in panels})


def positional_encoding_picture(n: int = 40, d: int = 64, at: int = 10) -> Picture:
    """PE as two heatmaps (sin rows, cos rows, by pair index i) and PE[pos] . PE[at] against pos.

    PE[pos, 2i] = sin(pos / 10000^(2i/d)) and PE[pos, 2i+1] = cos(...): the left panels show
    the d/2 sine and the d/2 cosine dimensions apart, row i = the pair index (frequency
    falling with i), so the picture is not the barcode that interleaving them gives.  The
    right panel: nearby positions look alike.
    """
    pe = A.positional_encoding(n, d)  # (n, d), row pos = 0..n-1
    similarity = (pe @ pe[at]).numpy()  # PE[pos] . PE[at]: (n,)
    fig, sizes = canvas.slide_figure(MAX_WIDTH_PX, 380)
    sin_ax, cos_ax, right = fig.subplots(1, 3, width_ratios=[1, 1, 1.1])
    for ax, name, cols in ((sin_ax, "sin", pe[:, 0::2]), (cos_ax, "cos", pe[:, 1::2])):
        im = ax.imshow(cols.numpy().T, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
        ax.set_xlabel("position pos", fontsize=sizes.label)
        ax.set_title(rf"$\{name}(pos\,/\,10000^{{2i/d}})$", fontsize=sizes.label)
    sin_ax.set_ylabel("pair index i", fontsize=sizes.label)
    fig.colorbar(im, ax=cos_ax, fraction=0.08).ax.tick_params(labelsize=sizes.tick)
    right.plot(range(n), similarity, "o-", markersize=4)
    right.axvline(at, color="0.6", lw=1)
    right.set_xlabel("position pos", fontsize=sizes.label)
    right.set_title(f"PE[pos] · PE[{at}]", fontsize=sizes.label)
    for ax in (sin_ax, cos_ax, right):
        ax.tick_params(labelsize=sizes.tick)
    peak = int(np.argmax(similarity))
    summary = (
        f"positional encoding (n={n}, d={d}): sin and cos by pair index i = 0..{d // 2 - 1}; "
        f"PE[pos]·PE[{at}] peaks at pos = {peak}"
    )
    return Picture(fig, summary, {"pe": pe, "similarity": similarity})


def _first_wrong(got: str, expected: str) -> int | None:
    """0-based index of the first output character that is not the expected one, or None."""
    for t in range(max(len(got), len(expected))):
        if t >= len(got) or t >= len(expected) or got[t] != expected[t]:
            return t
    return None


def alignment_failure(model, length: int = 45, seed: int = 0) -> Picture:
    """Reverse a random digit string with ``model``; show alpha against the right alignment.

    For reversal, output digit t (1-based) should attend to source digit n + 1 - t: the
    dotted line.  The red line marks the first wrong output digit.
    """
    rng = np.random.default_rng(seed)
    digits = "".join(rng.choice(list("0123456789"), size=length))
    result = decode(model, digits)
    alpha = result.alpha.reshape(-1, *result.alpha.shape[-2:]).mean(axis=0)  # (T, n)
    wrong = _first_wrong(result.text, digits[::-1])
    T, n = alpha.shape
    fig, sizes = canvas.slide_figure(760, 460)
    ax = fig.add_subplot()
    x, y = [str(i) for i in range(1, n + 1)], [str(t) for t in range(1, T + 1)]  # 1-based
    heatmaps.still_heatmap(
        ax, alpha, x, y, xlabel="source position i", ylabel="output step t", sizes=sizes
    )
    ax.plot([length - 1 - t for t in range(length)], range(length), ":", color="white", lw=2)
    if wrong is not None:
        ax.axhline(wrong - 0.5, color="red", lw=2)  # above the first wrong row
    right = length if wrong is None else wrong
    ax.set_title(f"{length} digits in: the first {right} outputs right", fontsize=sizes.title)
    summary = (
        f"{length} digits in, {len(result.text)} out; first wrong output digit: "
        f"{'none' if wrong is None else wrong + 1}"
    )
    data = {"digits": digits, "output": result.text, "first_wrong": wrong, "alpha": alpha}
    return Picture(fig, summary, data)


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


def sequential_steps(lengths: Sequence[int] = (8, 32, 128, 512), d: int = 32) -> Table:
    """Sequential steps (:func:`graph_depth`) of a GRU over n tokens and of self-attention.

    The GRU computes h_t = GRUCell(x_t, h_{t-1}) for t = 1..n; one self-attention layer
    (:class:`attnlab.attention.MultiHeadAttention`, 4 heads) computes all n outputs at once.
    """
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


def flops_per_step(kind: str, task: str = "reverse", batch: int = 128, seed: int = 1) -> float:
    """GFLOP of one training step (forward, loss, backward) of a fresh ``kind`` model.

    Counted by :class:`torch.utils.flop_counter.FlopCounterMode` on ``batch`` training
    examples of ``task`` (the shipped recipe's sizes), so two designs can be compared at equal
    compute rather than equal steps or equal wall-clock time.
    """
    torch.manual_seed(seed)
    t = get_task(task)
    train = default_configs(kind, t.name)[1]
    pairs = t.make(batch, seed=seed, **train.task_kwargs(t.name, "train"))
    model = new_model(kind, t)
    src, src_len, tgt_in, tgt_out = take(
        encode_pairs(pairs, model.src_vocab, model.tgt_vocab), torch.arange(batch)
    )
    with FlopCounterMode(display=False) as counter:
        logits = model(src, src_len, tgt_in)  # (B, T, V)
        loss = torch.nn.functional.cross_entropy(
            logits.flatten(0, 1), tgt_out.flatten(), ignore_index=0
        )
        loss.backward()
    return counter.get_total_flops() / 1e9


# --------------------------------------------------------------------------- teacher forcing
class _Calls:
    """Counts the forward calls of a module (a forward hook) while in a ``with`` block."""

    def __init__(self, module: torch.nn.Module):
        self.module, self.count = module, 0

    def __enter__(self):
        self.handle = self.module.register_forward_hook(self._hook)
        return self

    def _hook(self, *_):
        self.count += 1

    def __exit__(self, *_):
        self.handle.remove()


def teacher_forcing(model, text: str, target: str) -> Table:
    """Training against decoding on one example of a trained Transformer.

    Training (teacher forcing): the decoder reads the true target shifted right, ``<s>``,
    y_1, ..., y_{T-1}, and predicts y_t at every position t in ONE pass.  Decoding: it reads
    its own previous outputs, so output t needs output t-1: T passes.  The passes are counted
    with a hook on the model's output layer, not assumed.
    """
    prepared = model.prepare(text)
    src = model.source_ids(prepared)  # (1, n)
    vocab = model.tgt_vocab
    y = vocab.encode(target)  # the true y_1..y_T (without <eos>)
    tgt_in = torch.tensor([[vocab.sos, *y]])  # shifted right: <s>, y_1, ..., y_T
    training, _ = model.training, model.eval()  # no dropout while we look
    try:
        with torch.no_grad(), _Calls(model.out) as forced_calls:
            logits = model(src, torch.tensor([src.shape[1]]), tgt_in)  # all at once: (1, T+1, V)
    finally:
        model.train(training)
    predicted = logits[0].argmax(-1).tolist()  # y_t predicted at each position
    with _Calls(model.out) as decoding:
        ids = greedy(model, src)[0]
    inputs = ["<s>", *target]  # what the decoder reads at t = 1..T+1
    forced = [vocab.itos[i] for i in predicted]
    decoded = [vocab.itos[i] for i in ids] + ["<eos>"]
    right = sum(a == b for a, b in zip(forced, [*target, "<eos>"], strict=False))
    caption = (
        f"{text!r}: training predicts all {len(inputs)} positions in {forced_calls.count} pass "
        f"({right} of {len(inputs)} right); decoding took {decoding.count} passes, one per token"
    )
    pad = lambda row: row + [""] * (len(inputs) - len(row))  # noqa: E731
    return Table(
        ["t", *(str(t) for t in range(1, len(inputs) + 1))],
        [
            ["input (shifted right)", *inputs],
            ["training: predicted", *pad(forced)],
            ["decoding: output", *pad(decoded)],
        ],
        caption,
        first_width=22,
    )


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
    heads, only head k, or every head but k (the others' outputs set to zero before W^O); and
    how often the heads of the last cross-attention put their strongest weight on different
    source positions.
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


# --------------------------------------------------------------------------- real language
def _sized_heatmaps(x_labels, y_labels, panels: int = 1, max_height: float = 520, title=""):
    """A slide figure with ``panels`` heatmaps side by side, each big enough for every label.

    Cells at least :data:`CELL_PX` square (and as much as ``heatmaps.heatmap_room`` asks), plus
    room for the longest labels (x labels turned upright), the titles and one colorbar.
    """
    room_w, room_h = heatmaps.heatmap_room(x_labels, y_labels)  # px at the shown size
    label_px = 0.62 * TYPE.tick  # about one character of a tick label
    x_room = label_px * max(map(len, x_labels)) + 2.5 * TYPE.label  # upright ticks + label
    y_room = label_px * max(map(len, y_labels)) + 2.5 * TYPE.label
    title_px = 0.62 * TYPE.title * len(title)  # about the width of the longest title
    cols_px = max(room_w, CELL_PX * len(x_labels), 5 * CELL_PX, title_px if panels > 1 else 0)
    rows_px = max(room_h, CELL_PX * len(y_labels))
    width = panels * cols_px + y_room + 90 + 30 * (panels - 1)
    width = min(MAX_WIDTH_PX, max(width, title_px + y_room + 90))
    height = min(max_height, rows_px + x_room + 2.5 * TYPE.title)
    fig, sizes = canvas.slide_figure(width, height)
    axes = fig.subplots(1, panels, squeeze=False)[0]
    return fig, sizes, axes


def self_attention_heads(model, text: str, layer: int = 0) -> Picture:
    """The encoder self-attention of every head of ``layer`` on ``text``, side by side."""
    w = model.attention_weights(text)
    src = w["source_tokens"]
    weights = w["encoder_self"][layer]  # (h, n, n)
    h = weights.shape[0]
    fig, sizes, axes = _sized_heatmaps(src, src, panels=h)
    for ax in axes[1:]:
        ax.sharey(axes[0])  # one row of query labels, on the left, for every panel
    for k, ax in enumerate(axes):
        heatmaps.still_heatmap(
            ax, weights[k], src, src, title=f"head {k + 1}", colorbar=k == h - 1,
            xlabel="key", ylabel="query" if k == 0 else "", sizes=sizes,
        )  # fmt: skip
        if k:
            ax.tick_params(labelleft=False)
    summary = (
        f"{model.card['name']}: encoder self-attention, layer {layer + 1}, {h} heads: {text!r}"
    )
    return Picture(fig, summary, {"weights": weights, "source": src})


def _language_results() -> dict:
    return load_results()


def held_out_example(model, example: dict, what: str = "", layer: int | None = None, head=None):
    """A stored test-split example (:mod:`attnlab.experiments.language`), decoded live again.

    The picture is ``model``'s alpha on the example's English (the cross-attention of
    ``layer``, mean over the heads or ``head``); its title says it is held out and whether the
    live output equals the reference, word for word (``what`` goes in front).
    """
    result = decode(model, example["source"])
    right = tokenize(result.text) == tokenize(example["reference"])
    if head is not None and not what:
        shown = range(result.alpha.shape[0])[-1 if layer is None else layer]  # 0-based
        what = f"layer {shown + 1}, head {head + 1}: "
    title = f"{what}held out, output {'= reference' if right else '≠ reference'}"
    alpha = result.alpha[-1 if layer is None else layer]  # (h, T, n)
    alpha = alpha.mean(axis=0) if head is None else alpha[head]  # (T, n)
    x, y = result.source_tokens, result.output_tokens
    fig, sizes, (ax,) = _sized_heatmaps(x, y, title=title)
    heatmaps.still_heatmap(
        ax, alpha, x, y, title=title, xlabel="English (source i)", ylabel="output t", sizes=sizes
    )
    summary = (
        f"held-out (test split): {example['source']!r} -> {result.text!r}; reference "
        f"{example['reference']!r} ({'the same words' if right else 'different'})"
    )
    return Picture(fig, summary, {"alpha": alpha, "output": result.text, "right": right})


def rare_words_counts(rare: dict) -> str:
    """One line: how often the EN->DE model wrote a compound in parts and looked a word up,
    over the test split (``results["rare_words"]``, :mod:`attnlab.experiments.language`)."""
    return (
        f"test split: {rare['compound_outputs']} of {rare['strings']} outputs hold a compound "
        f"in parts; {rare['looked_up']} <unk> looked up, {rare['looked_up_in_reference']} "
        "of them in the reference"
    )


def language_table(results: dict | None = None) -> Table:
    """Table 2 in miniature: our test BLEU/chrF and training time beside Vaswani et al.'s."""
    results = results or _language_results()
    models, base = results["scores"]["models"], results["scores"]["baselines"]
    vaswani = results["table2"]["vaswani"]

    def ours(name: str) -> list[str]:
        s = models[name]
        pair = s["pair"]
        row = [name, "", ""]
        row[1 if pair == "en-de" else 2] = f"{s['bleu']:.1f} / {s['chrf']:.1f}"
        threads = _card(name)["train"]["threads"]
        cpu = f"{threads} CPU thread{'s' if threads > 1 else ''}"
        return [*row, f"{s['train_seconds'] / 60:.1f} min, {cpu}"]

    rows = [ours(n) for n in ("transformer-en-de", "transformer-en-fr", "rnnsearch-en-fr")]
    rows.append(ours("rnnenc-en-fr"))
    for kind in ("copy", "dictionary"):
        rows.append(
            [
                f"baseline: {kind}",
                f"{base['en-de'][kind]['bleu']:.1f} / {base['en-de'][kind]['chrf']:.1f}",
                f"{base['en-fr'][kind]['bleu']:.1f} / {base['en-fr'][kind]['chrf']:.1f}",
                "none",
            ]
        )
    for name, v in vaswani.items():
        when = v["training"].split(" (")[0]
        rows.append([f"Vaswani {name.split('-')[1]}", f"{v['en-de']}", f"{v['en-fr']}", when])
    return Table(
        ["model", "EN→DE BLEU / chrF", "EN→FR BLEU / chrF", "training (wall-clock)"],
        rows,
        caption="Ours: test split of the interface strings; Vaswani et al.: newstest2014 (BLEU)",
    )


def head_roles_table(roles: dict, layer: int = 0) -> Table:
    """The measured roles of the encoder self-attention heads of ``layer`` (``head_roles``).

    For each head: where its strongest weight falls most often above chance (the fraction if
    the strongest key were drawn at random), and the fraction of every role.
    """
    names, chance = roles["roles"], np.asarray(roles["chance"])
    rows = []
    for head, fractions in enumerate(np.asarray(roles["fractions"][layer])):
        named = [k for k, r in enumerate(names) if r != "other"]
        top = max(named, key=lambda k: fractions[k] / max(chance[k], 1e-9))
        best = f"{names[top]} {fractions[top]:.0%} (chance {chance[top]:.0%})"
        shares = ", ".join(f"{r} {f:.0%}" for r, f in zip(names, fractions, strict=True))
        rows.append([f"head {head + 1}", best, shares])
    caption = (
        f"{roles['model']}, encoder layer {layer + 1}: every query of the {roles['strings']} "
        "test-split strings"
    )
    return Table(["head", "most above chance", "strongest weight on ..."], rows, caption, 12)


def alpha_and_occlusion(example: dict, agreement: float) -> Picture:
    """alpha beside occlusion (the drop of log p(y_t) when source word i is hidden)."""
    x = example["source_tokens"][:-1]  # without <eos>
    y = example["output_tokens"]
    alpha = np.asarray(example["alpha"])[:, :-1]  # (T, n - 1)
    drop = np.clip(np.asarray(example["occlusion"]), 0, None)  # (T, n - 1) nats
    costs = "hiding word i costs (scaled)"
    fig, sizes, (left, right) = _sized_heatmaps(x, y, panels=2, max_height=420, title=costs)
    right.sharey(left)  # one row of output labels, on the left
    heatmaps.still_heatmap(
        left, alpha, x, y, title="alpha", xlabel="source i", ylabel="output t", sizes=sizes
    )
    heatmaps.still_heatmap(
        right, drop / max(drop.max(), 1e-9), x, y, title=costs,
        xlabel="source i", ylabel="", sizes=sizes,
    )  # fmt: skip
    right.tick_params(labelleft=False)
    t, a, k = example["step"], example["alpha_argmax"], example["occlusion_argmax"]
    for ax in (left, right):
        ax.axhline(t - 0.5, color="red", lw=2)
        ax.axhline(t + 0.5, color="red", lw=2)
    cost = np.asarray(example["occlusion"])[t]  # nats
    summary = (
        f"{example['source']!r} -> {example['output']!r}, output {t + 1} ({y[t]!r}): alpha "
        f"{x[a]!r} {alpha[t, a]:.2f}, {x[k]!r} {alpha[t, k]:.2f}; hiding {x[k]!r} costs "
        f"{cost[k]:.1f} nats, hiding {x[a]!r} {cost[a]:.2f}. Over the test split alpha's "
        f"argmax is the most costly word at {agreement:.0%} of the steps"
    )
    return Picture(fig, summary, {"alpha": alpha, "drop": drop})


# --------------------------------------------------------------------------- cached measurements
#: The deck's slow measurements (seconds each), measured by ``python -m attnlab.lecture.demos`` and
#: read by the deck, so that Run-All stays within its 20 s; tests/test_lecture.py checks that
#: they are what the functions above measure now.
MEASUREMENTS_FILE = RESULTS_DIR / "deck.json"
COMPARED = ("rnnencdec", "rnnsearch")  # the length experiment's two designs
HEAD_STUDY = {"model": "transformer-dates", "n": 200}


def measure() -> dict:
    """Run the slow measurements the deck shows: FLOPs per training step, the head study."""
    flops = {kind: flops_per_step(kind, "reverse", batch=128) for kind in COMPARED}
    model = load(HEAD_STUDY["model"])
    heads = head_study(model, n=HEAD_STUDY["n"])
    return {
        "flops_per_step": {"task": "reverse", "batch": 128, "gflop": flops},
        "head_study": {**HEAD_STUDY, "header": heads.header, "rows": heads.rows},
    }


def measurements(path: Path | str | None = None) -> dict:
    """The cached measurements (``src/attnlab/results/deck.json``)."""
    path = Path(path) if path is not None else MEASUREMENTS_FILE
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path} is missing: run `python -m attnlab.lecture.demos`"
        ) from None


def equal_compute(cached: dict | None = None) -> Table:
    """The length experiment's two models: compute per step (cached FLOPs), steps, time."""
    flops = (cached or measurements())["flops_per_step"]
    rows = []
    for kind, name in zip(COMPARED, ("rnnenc-reverse", "rnnsearch-reverse"), strict=True):
        card = _card(name)
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


def heads_measured(cached: dict | None = None) -> Table:
    """The head study of ``transformer-dates`` as cached by :func:`measure`."""
    heads = (cached or measurements())["head_study"]
    caption = f"{heads['model']}: exact match on {heads['n']} fresh held-out dates"
    return Table(heads["header"], heads["rows"], caption=caption)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnlab.lecture.demos", description="Measure what the deck shows (cached)."
    )
    parser.add_argument("--out", type=Path, default=MEASUREMENTS_FILE, help="the JSON file")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    write_atomic(args.out, json.dumps(measure(), indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
