"""Small helpers behind the deck's demo cells, so that each lecture cell stays a few lines.

Each helper returns something that displays itself (an HTML table, highlighted source, a
picture) with a stable text form, so that nbval can compare the stored outputs.  Pictures are
drawn through :mod:`attnlab.plots` (Agg canvases, no pyplot) with the lecture's type sizes.
"""

from __future__ import annotations

import ast
import html
import inspect
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from . import attention as A
from . import plots

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
]


# --------------------------------------------------------------------------- display objects
@dataclass
class Table:
    """A small table that shows as HTML in the notebook and as aligned text elsewhere."""

    header: list[str]
    rows: list[list[str]]
    caption: str = ""

    def _repr_html_(self) -> str:
        # Inline styles: the offline export does not load the slideshow's rise.css.  Long
        # strings (digits) wrap inside their cell rather than run off the slide.
        td = '<td style="font-family: monospace; word-break: break-all; text-align: left">'
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.header)
        body = "".join(
            "<tr>" + "".join(f"{td}{html.escape(str(c))}</td>" for c in row) + "</tr>"
            for row in self.rows
        )
        cap = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        return (
            '<table class="attnlab-table" style="table-layout: fixed; width: 100%">'
            f"{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
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
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer

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
        return plots.png_bytes(self.fig, draw=True)

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
    from .checkpoints import CHECKPOINT_DIR, available, read_card

    if name not in available():
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(available())}")
    return read_card(CHECKPOINT_DIR / f"{name}.json")


def model_table(names: Sequence[str] = ("rnnenc-dates", "rnnsearch-dates", "transformer-dates")):
    """Our own "results table": accuracy, parameters and training time of the shipped models.

    The figures come from each checkpoint's card (written by the training script when it
    saved the model), so they are what our training measured, not numbers typed into the
    deck; no weights are loaded.
    """
    rows = []
    for name in names:
        card = _card(name)
        acc = card.get("heldout_accuracy")
        params = card.get("parameters")
        seconds = card.get("train_seconds")
        rows.append(
            [
                name,
                f"{100 * acc:.2f}%" if acc is not None else "n/a",
                f"{params:,}" if params is not None else "n/a",
                f"{seconds:.0f} s" if seconds is not None else "n/a",
                f"{card.get('steps', 'n/a')}",
            ]
        )
    return Table(
        ["model", "exact match (held-out dates)", "parameters", "training time", "steps"],
        rows,
        caption="Dates -> ISO, as our training script measured (one CPU thread, wall-clock)",
    )


def reverse_demo(names: Sequence[str], lengths: Sequence[int], seed: int = 0) -> Table:
    """Reverse random digit strings of the given lengths with each model; mark each answer.

    A right answer shows as a tick; a wrong one shows how many digits it got wrong, then the
    model's output, so the failure is visible without comparing long strings by eye.
    """
    from . import load

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
    return Table(["length", "input", *names], rows, caption="Reverse a digit string")


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
    """Log-log plot of the timings from :func:`time_rnn_vs_attention` (``plots.timings``)."""
    return Picture(plots.timings(timings), "forward time of a GRU and of self-attention", timings)


# --------------------------------------------------------------------------- pictures
#: The widest a picture is drawn (px at 100 dpi): narrower than the output area of both the
#: RISE slideshow and the offline export at 1280x720, so it is shown at its own size and
#: its type at the size :mod:`attnlab.plots` sets.
MAX_WIDTH_PX = 960


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
    fig = plots.mask_and_weights(mask.numpy(), weights.numpy())
    summary = f"masked self-attention, n = {n}: total weight on future positions = {future:.3f}"
    return Picture(fig, summary, {"weights": weights, "mask": mask, "future": future})


def head_grid(model, text: str) -> Picture:
    """Cross-attention of every layer and head of the Transformer on ``text`` (``plots``)."""
    from .decode import decode

    result = decode(model, text)
    layers, heads = result.alpha.shape[:2]
    summary = f"cross-attention, {layers} layers x {heads} heads: {text!r} -> {result.text!r}"
    fig = plots.head_grid(result, shown_width_px=MAX_WIDTH_PX, height_px=450)
    return Picture(fig, summary, {"alpha": result.alpha})


def _mean_heads(w: np.ndarray) -> np.ndarray:
    """(h, m, n) -> (m, n): the mean over the heads."""
    return w.mean(axis=0)


def three_attentions(model, text: str, layer: int = -1) -> Picture:
    """The Transformer's three attentions on ``text``, side by side (mean over the heads).

    Encoder self-attention (source x source), masked decoder self-attention (output x
    output: the causal triangle) and cross-attention (output x source), of ``layer``.
    """
    w = model.attention_weights(text)
    src, out = w["source_tokens"], w["output_tokens"]
    panels = [
        ("encoder self", _mean_heads(w["encoder_self"][layer]), src, src),
        ("masked decoder self", _mean_heads(w["decoder_self"][layer]), out, out),
        ("cross (decoder -> encoder)", _mean_heads(w["cross"][layer]), src, out),
    ]
    fig, sizes = plots.slide_figure(MAX_WIDTH_PX, 440)
    axes = fig.subplots(1, 3, width_ratios=[len(src), len(out) + 2, len(src) + 3])
    for k, (ax, (title, values, x, y)) in enumerate(zip(axes, panels, strict=True)):
        plots.still_heatmap(
            ax, values, x, y, title=title, colorbar=k == 2, xlabel="key", ylabel="", sizes=sizes
        )
    axes[0].set_ylabel("query", fontsize=sizes.label)
    nlayers = w["encoder_self"].shape[0]
    summary = (
        f"layer {range(nlayers)[layer] + 1} of {nlayers}, mean over the heads: {text!r} -> "
        f"{''.join(out[:-1])!r}"
    )
    return Picture(fig, summary, {title: values for title, values, _, _ in panels})


def positional_encoding_picture(n: int = 40, d: int = 64, at: int = 10) -> Picture:
    """PE (n, d) as a heatmap, and PE[pos] . PE[at] against pos: nearby positions look alike."""
    pe = A.positional_encoding(n, d)  # (n, d)
    similarity = (pe @ pe[at]).numpy()  # PE[pos] . PE[at]: (n,)
    fig, sizes = plots.slide_figure(MAX_WIDTH_PX, 340)
    left, right = fig.subplots(1, 2, width_ratios=[1.4, 1])
    im = left.imshow(pe.numpy().T, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
    left.set_xlabel("position pos", fontsize=sizes.label)
    left.set_ylabel("dimension i", fontsize=sizes.label)
    left.set_title(f"PE[pos, i], d = {d}", fontsize=sizes.title)
    fig.colorbar(im, ax=left, fraction=0.04).ax.tick_params(labelsize=sizes.tick)
    right.plot(range(n), similarity, "o-", markersize=4)
    right.axvline(at, color="0.6", lw=1)
    right.set_xlabel("position pos", fontsize=sizes.label)
    right.set_title(f"PE[pos] · PE[{at}]", fontsize=sizes.title)
    for ax in (left, right):
        ax.tick_params(labelsize=sizes.tick)
    peak = int(np.argmax(similarity))
    summary = f"positional encoding (n={n}, d={d}); PE[pos]·PE[{at}] peaks at pos = {peak}"
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
    from .decode import decode

    rng = np.random.default_rng(seed)
    digits = "".join(rng.choice(list("0123456789"), size=length))
    result = decode(model, digits)
    alpha = result.alpha.reshape(-1, *result.alpha.shape[-2:]).mean(axis=0)  # (T, n)
    wrong = _first_wrong(result.text, digits[::-1])
    T, n = alpha.shape
    fig, sizes = plots.slide_figure(760, 460)
    ax = fig.add_subplot()
    x, y = [str(i) for i in range(1, n + 1)], [str(t) for t in range(1, T + 1)]  # 1-based
    plots.still_heatmap(
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
