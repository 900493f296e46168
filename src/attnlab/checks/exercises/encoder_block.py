r"""A pre-LN Transformer encoder block: x <- x + SelfAttn(LN_1(x)), x <- x + FFN(LN_2(x)).

The reference is :class:`attnlab.models.transformer.EncoderLayer` holding the student's
sub-layers; the student's ``self_attn`` (a function z -> z) stands in its self-attention
through :mod:`attnlab.guard.parts`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from attnlab import attention
from attnlab.checks.compare import as_tensor, check_close, check_finite, check_shape, hidden, randn
from attnlab.checks.exercises.seeded import kept_rng, library_module
from attnlab.checks.harness import call_student, run_check
from attnlab.checks.results import CheckResult
from attnlab.guard import parts
from attnlab.models import transformer

__all__ = ["REFERENCES", "BODIES", "self_attention", "check_encoder_block"]


def self_attention(mha: nn.Module, mask: Tensor | None) -> Callable[[Tensor], Tensor]:
    """The student's ``self_attn``: z (B, n, d) -> MultiHead(z, z, z) over the allowed keys."""

    def self_attn(z: Tensor) -> Tensor:
        return mha(z, z, z, mask)  # (B, n, d)

    return self_attn


def _ref_encoder_block(
    x: Tensor,
    self_attn: Callable[[Tensor], Tensor],
    ln_1: nn.LayerNorm,
    ln_2: nn.LayerNorm,
    W_1: nn.Linear,
    W_2: nn.Linear,
) -> Tensor:
    """transformer.EncoderLayer with the given sub-layers (pre-LN):
    x <- x + SelfAttn(LN_1(x)), then x <- x + W_2 ReLU(W_1 LN_2(x))."""
    layer = library_module(lambda: transformer.EncoderLayer(W_1.in_features, 1, W_1.out_features))
    layer.ln1, layer.ln2 = ln_1, ln_2
    layer.ffn[0], layer.ffn[2] = W_1, W_2  # FFN(z) = W_2 ReLU(W_1 z)

    def given(query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None) -> Tensor:
        return self_attn(query)  # (B, n, d): the function already holds its mask

    with parts.swapped(layer, "self_attn", given):  # a function where the layer holds a module
        return layer(x, None)  # (B, n, d)


def _block_examples():
    """(x, self_attn, ln_1, ln_2, W_1, W_2, details), LayerNorms with trained-looking weights."""
    g = torch.Generator().manual_seed(712)
    examples = []
    with kept_rng(713):  # the sub-layers' weights
        for (B, n, d, h, d_ff), lengths, details in (
            ((2, 5, 8, 2, 16), [5, 3], "d_model 8, 2 heads, d_ff 16, a (2, 1, 5) padding mask"),
            ((1, 4, 12, 3, 24), None, "d_model 12, 3 heads, d_ff 24, no mask"),
        ):
            layer = transformer.EncoderLayer(d, h, d_ff)
            for ln in (layer.ln1, layer.ln2):  # not the identity: a swapped LayerNorm shows
                with torch.no_grad():
                    ln.weight.copy_(1 + 0.3 * randn(g, d))
                    ln.bias.copy_(0.2 * randn(g, d))
            mask = None if lengths is None else attention.padding_mask(lengths, n)[:, None, :]
            attn = self_attention(layer.self_attn.eval(), mask)
            x = randn(g, B, n, d)
            examples.append((x, attn, layer.ln1, layer.ln2, layer.ffn[0], layer.ffn[2], details))
    return examples


def _block_alternatives(x, attn, ln_1, ln_2, W_1, W_2) -> tuple[tuple[Tensor, str], ...]:
    """The typical mistakes, each computed from the same sub-layers, with what to say."""
    relu = torch.relu

    def pre(first, second, last=lambda y: y):  # x + first(...), then + second(...)
        y = x + first(x)
        return last(y + second(y))

    ffn = lambda z: W_2(relu(W_1(z)))  # noqa: E731 - FFN(z) = W_2 ReLU(W_1 z)
    attn_ln = lambda y: attn(ln_1(y))  # noqa: E731
    y_post = ln_1(x + attn(x))
    y_no_attn_res = attn(ln_1(x))
    y_pre = x + attn(ln_1(x))
    wrong_relu = (
        "ReLU is in the wrong place: FFN(z) = W_2 ReLU(W_1 z), between the two linear layers."
    )
    return (
        (ln_2(y_post + ffn(y_post)), "This is post-LN, LayerNorm(x + Sublayer(x)) (the 2017 paper's order); this model is pre-LN: x + Sublayer(LayerNorm(x)), the LayerNorm on the sub-layer's input."),
        (ffn(ln_2(y_no_attn_res)), "The residual connections are left out: each sub-layer adds its output to its input, x + Sublayer(LayerNorm(x))."),
        (y_no_attn_res + ffn(ln_2(y_no_attn_res)), "The residual around the self-attention is left out: x + self_attn(ln_1(x))."),
        (ffn(ln_2(y_pre)), "The residual around the feed-forward network is left out: x + FFN(ln_2(x))."),
        (pre(attn_ln, lambda y: relu(W_2(W_1(ln_2(y))))), wrong_relu + " Yours is after W_2."),
        (pre(attn_ln, lambda y: W_2(W_1(relu(ln_2(y))))), wrong_relu + " Yours is before W_1."),
        (pre(attn_ln, lambda y: W_2(W_1(ln_2(y))), relu), wrong_relu + " Yours is on the residual sum."),
        (pre(attn_ln, lambda y: ffn(ln_2(y)), relu), wrong_relu + " Yours is also on the residual sum: the block's output is not passed through ReLU."),
        (pre(attn_ln, lambda y: W_2(W_1(ln_2(y)))), "The ReLU is left out: FFN(z) = W_2 ReLU(W_1 z)."),
        (pre(attn_ln, lambda y: ffn(ln_1(y))), "Each sub-layer has its own LayerNorm: ln_1 before the self-attention, ln_2 before the feed-forward network."),
        (pre(lambda y: ln_1(attn(y)), lambda y: ln_2(ffn(y))), "The LayerNorm goes on the sub-layer's input, not on its output: x + Sublayer(LayerNorm(x))."),
    )  # fmt: skip


def _block_body(fn: Callable) -> str:
    examples = _block_examples()
    for i, (*args, details) in enumerate(examples, start=1):
        x = args[0]
        where = hidden(i, len(examples), f"x {tuple(x.shape)}, {details}")
        out = as_tensor(call_student(fn, tuple(args), where), "output")
        check_shape(out, tuple(x.shape), "output", where, " The block keeps the shape of x.")
        check_finite(out, "output", where)
        check_close(
            out,
            _ref_encoder_block(*args),
            "output",
            where,
            "x <- x + self_attn(ln_1(x)), then x <- x + W_2(ReLU(W_1(ln_2(x)))).",
            _block_alternatives(*args),
        )
    return f"Your block matches transformer.EncoderLayer on {len(examples)} hidden examples."


def check_encoder_block(fn: Callable) -> CheckResult:
    """Check ``encoder_block(x, self_attn, ln_1, ln_2, W_1, W_2) -> x`` (pre-LN)."""
    return run_check("encoder_block", fn, _block_body)


#: The reference: transformer.EncoderLayer with the given sub-layers.
REFERENCES: dict[str, Callable] = {"encoder_block": _ref_encoder_block}

#: The check without its harness (in_model runs it first).
BODIES: dict[str, Callable[[Callable], str]] = {"encoder_block": _block_body}
