"""The Transformer's parts shown on a trained model or random inputs: the causal mask, the
positional encoding, teacher forcing, every head, and the three attentions of one layer."""

from __future__ import annotations

import numpy as np
import torch

from attnlab import attention as A
from attnlab.decode import decode, greedy, source_lengths
from attnlab.guard import inputs
from attnlab.lecture.display import MAX_WIDTH_PX, Message, Picture, Table
from attnlab.pictures import canvas, heatmaps, plots
from attnlab.text.padding import teacher_forced_input

__all__ = [
    "causal_demo",
    "head_grid",
    "three_attentions",
    "positional_encoding_picture",
    "teacher_forcing",
]


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
        # the mask is typed in the deck: validated here, then the equation runs
        _, weights = inputs.validated(A.scaled_dot_product_attention)(Q, K, V, mask=mask)
    except (TypeError, ValueError) as err:
        return Message(f"✗ {err}")
    future = float(weights.triu(diagonal=1).sum())  # weight on keys j > t
    drawn = (mask.numpy(), weights.numpy())
    summary = f"masked self-attention, n = {n}: total weight on future positions = {future:.3f}"
    return Picture(
        lambda: plots.mask_and_weights(*drawn), summary,
        {"weights": weights, "mask": mask, "future": future},
        name="causal_demo", inputs=drawn, code=(__name__,),
    )  # fmt: skip


def head_grid(model, text: str) -> Picture:
    """Cross-attention of every layer and head of the Transformer on ``text`` (``plots``)."""

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

    Encoder self-attention (source x source), masked decoder self-attention (the causal
    triangle) and cross-attention, of ``layer``.  The decoder's rows are labelled as in every
    picture of the deck, by the output token y_t that position writes; the masked panel's
    columns (its keys) by what each position reads, the outputs shifted right (``<s>``, y_1,
    ...): the position that reads ``<s>`` writes y_1.
    """
    w = model.attention_weights(text)
    src, out = w["source_tokens"], w["output_tokens"]
    inputs = ["<s>", *out[:-1]]  # the decoder reads its outputs shifted right: <s>, y_1, ...
    panels = [
        ("encoder self", _mean_heads(w["encoder_self"][layer]), src, src),
        ("masked decoder self", _mean_heads(w["decoder_self"][layer]), inputs, out),
        ("cross (decoder -> encoder)", _mean_heads(w["cross"][layer]), src, out),
    ]

    def draw():
        fig, sizes = canvas.slide_figure(1140, 500)  # three panels of 22 px labels
        axes = fig.subplots(1, 3, width_ratios=[len(src), len(out) + 2, len(src) + 3])
        labels = [("source", "source"), ("decoder input (read)", r"output $y_t$ (written)"),
                  ("source", "")]  # fmt: skip
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
        return fig

    nlayers = w["encoder_self"].shape[0]
    summary = (
        f"layer {range(nlayers)[layer] + 1} of {nlayers}, mean over the heads: {text!r} -> "
        f"{''.join(out[:-1])!r}"
    )
    drawn = [[title, values, list(x), list(y)] for title, values, x, y in panels]
    return Picture(
        draw, summary, {title: values for title, values, _, _ in panels},
        name="three_attentions", inputs=[drawn, len(out)], code=(__name__,),
    )  # fmt: skip


def positional_encoding_picture(n: int = 40, d: int = 64, at: int = 10) -> Picture:
    """PE as two heatmaps (sin rows, cos rows, by pair index i) and PE[pos] . PE[at] against pos.

    PE[pos, 2i] = sin(pos / 10000^(2i/d)) and PE[pos, 2i+1] = cos(...): the left panels show
    the d/2 sine and the d/2 cosine dimensions apart, row i = the pair index (frequency
    falling with i), so the picture is not the barcode that interleaving them gives.  The
    right panel: nearby positions look alike.
    """
    pe = A.positional_encoding(n, d)  # (n, d), row pos = 0..n-1
    similarity = (pe @ pe[at]).numpy()  # PE[pos] . PE[at]: (n,)

    def draw():
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
        return fig

    peak = int(np.argmax(similarity))
    summary = (
        f"positional encoding (n={n}, d={d}): sin and cos by pair index i = 0..{d // 2 - 1}; "
        f"PE[pos]·PE[{at}] peaks at pos = {peak}"
    )
    return Picture(
        draw, summary, {"pe": pe, "similarity": similarity},
        name="positional_encoding", inputs=[pe.numpy(), similarity, at], code=(__name__,),
    )  # fmt: skip


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


def teacher_forcing(model, text: str, target: str, mistake=None):
    """Training against decoding on one example of a trained Transformer.

    Training (teacher forcing): the decoder reads the true target shifted right, ``<s>``,
    y_1, ..., y_{T-1}, and predicts y_t at every position t in ONE pass.  Decoding: it reads
    its own previous outputs, so output t needs output t-1: T passes.  The passes are counted
    with a hook on the model's output layer, not assumed.  ``mistake`` = (t, token), or a list
    of them: one more row each, decoding with output t forced to ``token`` (1-based), what the
    model writes after a mistake it never read in training (exposure bias).
    """
    prepared = model.prepare(text)
    src = model.source_ids(prepared)  # (1, n)
    vocab = model.tgt_vocab
    y = vocab.encode(target)  # the true y_1..y_T (without <eos>)
    tgt_in = teacher_forced_input([y], vocab)  # shifted right: <s>, y_1, ..., y_T
    training, _ = model.training, model.eval()  # no dropout while we look
    try:
        with torch.no_grad(), _Calls(model.out) as forced_calls:
            src_len = source_lengths(src, model.src_vocab.pad)  # (1,)
            logits = model(src, src_len, tgt_in)  # all at once: (1, T+1, V)
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
    rows = [
        ["input (shifted right)", *inputs],
        ["training: predicted", *pad(forced)],
        ["decoding: output", *pad(decoded)],
    ]
    mistakes = mistake if isinstance(mistake, list) else [] if mistake is None else [mistake]
    for one in mistakes:
        t, token = one if isinstance(one, tuple) and len(one) == 2 else (None, None)
        if not (isinstance(t, int) and 1 <= t <= len(ids)) or token not in vocab.stoi:
            raise ValueError(f"mistake must be (t, token) with t in 1..{len(ids)} and a token "
                             f"the model writes, or a list of them; got {one!r:.40}")  # fmt: skip
    for t, token in mistakes:
        prefix = [*ids[: t - 1], vocab.stoi[token]]  # its own outputs, then the mistake
        after = greedy(model, src, forced=prefix)[0]
        written = [vocab.itos[i] for i in after] + ["<eos>"]
        if len(written) > len(inputs):  # longer than the table: cut, and say so
            written = [*written[: len(inputs) - 1], "…"]
        rows.append([f"decoding, {token!r} forced at t = {t}", *pad(written)])
    return Table(["t", *(str(t) for t in range(1, len(inputs) + 1))], rows, caption, first_width=22)
