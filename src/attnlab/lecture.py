"""Small helpers behind the deck's demo cells, so that each lecture cell stays one or two lines.

Each helper returns something that displays itself (an HTML table, a matplotlib figure) with a
stable text form, so that nbval can compare the stored outputs.
"""

from __future__ import annotations

import html
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from . import attention as A

__all__ = [
    "Table",
    "model_table",
    "reverse_demo",
    "time_rnn_vs_attention",
    "plot_timings",
    "causal_demo",
    "head_grid",
    "count_parameters",
]


@dataclass
class Table:
    """A small table that shows as HTML in the notebook and as aligned text elsewhere."""

    header: list[str]
    rows: list[list[str]]
    caption: str = ""

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.header)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>"
            for row in self.rows
        )
        cap = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        return f'<table class="attnlab-table">{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'

    def __repr__(self) -> str:
        cells = [self.header, *[[str(c) for c in row] for row in self.rows]]
        widths = [max(len(r[i]) for r in cells) for i in range(len(self.header))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
        return "\n".join(([self.caption] if self.caption else []) + lines)


def count_parameters(model: torch.nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def model_table(names: Sequence[str] = ("rnnenc-dates", "rnnsearch-dates", "transformer-dates")):
    """Our own "results table": accuracy, parameters and training time of the shipped models.

    The figures come from each checkpoint's card (written by ``python -m attnlab.train``), so
    they are what our training script measured, not numbers typed into the deck.
    """
    from . import load

    rows = []
    for name in names:
        model = load(name)
        card = model.card
        acc = card.get("heldout_accuracy", card.get("accuracy"))
        rows.append(
            [
                name,
                f"{100 * acc:.1f}%" if acc is not None else "n/a",
                f"{count_parameters(model):,}",
                f"{card.get('train_seconds', float('nan')):.0f} s",
                f"{card.get('steps', 'n/a')}",
            ]
        )
    return Table(
        ["model", "exact match (held-out dates)", "parameters", "training time", "steps"],
        rows,
        caption="Dates -> ISO, measured by our training script on 2 CPU cores",
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


def plot_timings(timings: dict[str, list[float]]):
    """Log-log plot of the timings from :func:`time_rnn_vs_attention`."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.4), dpi=100)
    ax.loglog(timings["n"], timings["rnn_ms"], "o-", label="GRU: n sequential steps, O(n)")
    ax.loglog(timings["n"], timings["attention_ms"], "s-", label="self-attention: O(1) steps")
    ax.set_xlabel("sequence length n")
    ax.set_ylabel("forward time (ms)")
    ax.legend(frameon=False)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    plt.close(fig)
    return fig


def causal_demo(n: int = 6, d_k: int = 8, seed: int = 0):
    """Weights of masked self-attention on random Q, K: the upper triangle is exactly 0."""
    import matplotlib.pyplot as plt

    g = torch.Generator().manual_seed(seed)
    Q = torch.randn(n, d_k, generator=g)  # (n, d_k)
    K = torch.randn(n, d_k, generator=g)  # (n, d_k)
    V = torch.randn(n, d_k, generator=g)  # (n, d_k)
    _, weights = A.scaled_dot_product_attention(Q, K, V, mask=A.causal_mask(n))
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.4), dpi=100)
    axes[0].imshow(A.causal_mask(n).numpy(), cmap="Greys", vmin=0, vmax=1.5)
    axes[0].set_title("causal_mask(n): True = may attend")
    im = axes[1].imshow(weights.numpy(), cmap="viridis", vmin=0, vmax=1)
    axes[1].set_title("softmax(QK^T/sqrt(d_k)) with the mask")
    for ax in axes:
        ax.set_xlabel("key position (earlier words)")
        ax.set_ylabel("query position")
        ax.set_xticks(range(n))
        ax.set_yticks(range(n))
    fig.colorbar(im, ax=axes[1], fraction=0.046)
    fig.tight_layout()
    plt.close(fig)
    return fig, weights


def head_grid(model, text: str):
    """Cross-attention of every layer and head of the Transformer on ``text``, one panel each."""
    import matplotlib.pyplot as plt

    from .decode import steps

    src = model.source_tokens(text)
    decoded = list(steps(model, text))
    alpha = np.stack([s.alpha for s in decoded], axis=-2)  # (layers, heads, T, n_src)
    layers, heads = alpha.shape[:2]
    fig, axes = plt.subplots(
        layers, heads, figsize=(2.6 * heads, 2.3 * layers), dpi=100, squeeze=False
    )
    out = [s.token for s in decoded]
    for i in range(layers):
        for j in range(heads):
            ax = axes[i, j]
            ax.imshow(alpha[i, j], cmap="viridis", vmin=0, vmax=1, aspect="auto")
            ax.set_title(f"layer {i + 1}, head {j + 1}", fontsize=9)
            ax.set_xticks(range(len(src)), src, fontsize=6)
            ax.set_yticks(range(len(out)), out, fontsize=6)
    fig.suptitle(f"cross-attention on {text!r} -> {''.join(out)!r}", fontsize=11)
    fig.tight_layout()
    plt.close(fig)
    return fig
