"""Property tests (hypothesis) of attnlab.attention over random shapes, masks and values.

Reference implementations: torch.nn.functional.scaled_dot_product_attention and
torch.nn.MultiheadAttention.  Tensors are drawn from a torch generator seeded by hypothesis
(fast); masks are drawn by hypothesis itself, so a failing mask shrinks to a small one.
"""

import numpy as np
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from attnlab.attention import (
    AdditiveScore,
    DotScore,
    GeneralScore,
    MultiHeadAttention,
    ScaledDotScore,
    attention,
    causal_mask,
    masked_softmax,
    padding_mask,
    scaled_dot_product_attention,
)
from attnlab.guard.inputs import validated

ATOL = 1e-5

batch_shapes = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)  # "..."
sizes = st.integers(1, 6)
seeds = st.integers(0, 2**32 - 1)


def randn(seed: int, *shape: int, scale: float = 1.0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return scale * torch.randn(*shape, generator=generator)


@st.composite
def masks(draw, shape: tuple[int, ...]) -> torch.Tensor:
    """A boolean mask broadcastable to ``shape``: some leading/size dims may be 1 or absent."""
    dims = draw(st.integers(2, len(shape)))  # keep at least (m, n)
    mask_shape = tuple(size if draw(st.booleans()) else 1 for size in shape[-dims:-2])
    mask_shape += tuple(shape[-2:]) if draw(st.integers(0, 3)) else (1, shape[-1])
    return torch.from_numpy(draw(hnp.arrays(np.bool_, mask_shape)))


def allowed_rows(mask: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """Boolean (..., m, 1): rows of ``shape`` with at least one allowed key."""
    return mask.expand(shape).any(-1, keepdim=True)


# --------------------------------------------------------------------------- masked softmax
@given(data=st.data(), batch=batch_shapes, m=sizes, n=sizes, seed=seeds)
def test_weights_are_a_distribution_over_allowed_keys(data, batch, m, n, seed):
    shape = (*batch, m, n)
    scale = data.draw(st.sampled_from([1.0, 10.0, 1e4]))  # 1e4: stability
    scores = randn(seed, *shape, scale=scale)
    mask = data.draw(st.none() | masks(shape))
    alpha = masked_softmax(scores, mask)
    assert alpha.shape == shape
    assert torch.isfinite(alpha).all() and (alpha >= 0).all()
    full = torch.ones(shape, dtype=torch.bool) if mask is None else mask.expand(shape)
    assert (alpha[~full] == 0).all()  # masked weights are exactly 0
    has_key = full.any(-1)
    sums = alpha.sum(-1)
    torch.testing.assert_close(sums[has_key], torch.ones_like(sums[has_key]), atol=ATOL, rtol=0)
    assert (sums[~has_key] == 0).all()  # nothing allowed: all zeros, not NaN


# --------------------------------------------------------------------------- scaled dot-product
@given(
    data=st.data(),
    batch=batch_shapes,
    m=sizes,
    n=sizes,
    d_k=st.integers(1, 16),
    d_v=st.integers(1, 8),
    seed=seeds,
)
def test_scaled_dot_product_attention_equals_torch(data, batch, m, n, d_k, d_v, seed):
    Q = randn(seed, *batch, m, d_k)
    K = randn(seed + 1, *batch, n, d_k)
    V = randn(seed + 2, *batch, n, d_v)
    mask = data.draw(st.none() | masks((*batch, m, n)))
    output, alpha = scaled_dot_product_attention(Q, K, V, mask)
    expected = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
    assert output.shape == (*batch, m, d_v) and alpha.shape == (*batch, m, n)
    if mask is None:
        torch.testing.assert_close(output, expected, atol=ATOL, rtol=0)
    else:
        # torch may give NaN for a row with no allowed key; ours gives 0 there.
        rows = allowed_rows(mask, (*batch, m, n)).expand_as(output)
        torch.testing.assert_close(output[rows], expected[rows], atol=ATOL, rtol=0)
        assert (output[~rows] == 0).all()
        assert (alpha[~mask.expand_as(alpha)] == 0).all()


@given(batch=batch_shapes, n=sizes, d=st.integers(1, 8), seed=seeds, perm_seed=seeds)
def test_scaled_dot_product_self_attention_is_permutation_equivariant(batch, n, d, seed, perm_seed):
    x = randn(seed, *batch, n, d)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(perm_seed))
    out, alpha = scaled_dot_product_attention(x, x, x)
    xp = x[..., perm, :]  # permute the rows (tokens)
    out_p, alpha_p = scaled_dot_product_attention(xp, xp, xp)
    torch.testing.assert_close(out_p, out[..., perm, :], atol=ATOL, rtol=0)
    torch.testing.assert_close(alpha_p, alpha[..., perm, :][..., perm], atol=ATOL, rtol=0)


# --------------------------------------------------------------------------- multi-head
def torch_twin(mha: MultiHeadAttention) -> torch.nn.MultiheadAttention:
    """torch.nn.MultiheadAttention holding the same weights as ``mha``."""
    twin = torch.nn.MultiheadAttention(mha.d_model, mha.num_heads, batch_first=True)
    with torch.no_grad():
        # in_proj_weight stacks W_q, W_k, W_v: (3 d_model, d_model)
        twin.in_proj_weight.copy_(torch.cat([mha.W_q.weight, mha.W_k.weight, mha.W_v.weight]))
        twin.in_proj_bias.copy_(torch.cat([mha.W_q.bias, mha.W_k.bias, mha.W_v.bias]))
        twin.out_proj.weight.copy_(mha.W_o.weight)
        twin.out_proj.bias.copy_(mha.W_o.bias)
    return twin.eval()


def randomised_mha(d_model: int, num_heads: int, seed: int) -> MultiHeadAttention:
    torch.manual_seed(seed)
    mha = MultiHeadAttention(d_model, num_heads)
    with torch.no_grad():
        for linear in (mha.W_q, mha.W_k, mha.W_v, mha.W_o):
            linear.bias.normal_()  # non-zero biases, so that copying them is tested too
    return mha.eval()


@given(
    B=st.integers(1, 3),
    m=sizes,
    n=sizes,
    num_heads=st.integers(1, 4),
    d_k=st.integers(1, 4),
    self_attention=st.booleans(),
    causal=st.booleans(),
    seed=seeds,
)
def test_multi_head_attention_equals_torch(B, m, n, num_heads, d_k, self_attention, causal, seed):
    d_model = num_heads * d_k
    mha = randomised_mha(d_model, num_heads, seed)
    twin = torch_twin(mha)
    query = randn(seed, B, m, d_model)
    memory = query if self_attention else randn(seed + 1, B, n, d_model)
    n = memory.shape[-2]
    mask = causal_mask(n)[:m] if causal and m <= n else None  # (m, n), every row sees key 1
    with torch.no_grad():
        output = mha(query, memory, memory, mask)
        alpha = mha.alpha  # the weights of that call, kept on the module
        expected, expected_alpha = twin(
            query,
            memory,
            memory,
            attn_mask=None if mask is None else ~mask,  # torch: True = NOT allowed
            need_weights=True,
            average_attn_weights=False,
        )
    assert output.shape == (B, m, d_model) and alpha.shape == (B, num_heads, m, n)
    torch.testing.assert_close(output, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(alpha, expected_alpha, atol=ATOL, rtol=0)


@given(
    lengths=st.lists(st.integers(1, 6), min_size=1, max_size=3),
    m=sizes,
    num_heads=st.integers(1, 3),
    seed=seeds,
)
def test_multi_head_attention_padding_equals_torch_key_padding_mask(lengths, m, num_heads, seed):
    B, n, d_model = len(lengths), max(lengths), 2 * num_heads
    mha = randomised_mha(d_model, num_heads, seed)
    twin = torch_twin(mha)
    query, memory = randn(seed, B, m, d_model), randn(seed + 1, B, n, d_model)
    real = padding_mask(lengths, n)  # (B, n), True at real tokens
    with torch.no_grad():
        output = mha(query, memory, memory, real[:, None, :])  # mask (B, 1, n)
        alpha = mha.alpha  # the weights of that call, kept on the module
        expected, expected_alpha = twin(
            query, memory, memory, key_padding_mask=~real, average_attn_weights=False
        )
    torch.testing.assert_close(output, expected, atol=ATOL, rtol=0)
    torch.testing.assert_close(alpha, expected_alpha, atol=ATOL, rtol=0)


@given(B=st.integers(1, 2), n=sizes, num_heads=st.integers(1, 3), seed=seeds, perm_seed=seeds)
def test_multi_head_self_attention_is_permutation_equivariant(B, n, num_heads, seed, perm_seed):
    d_model = 2 * num_heads
    mha = randomised_mha(d_model, num_heads, seed)
    x = randn(seed, B, n, d_model)  # no positional encoding added
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(perm_seed))
    with torch.no_grad():
        out = mha(x, x, x)
        alpha = mha.alpha  # the weights of that call, kept on the module
        out_p = mha(x[:, perm], x[:, perm], x[:, perm])
        alpha_p = mha.alpha  # the weights of that call, kept on the module
    torch.testing.assert_close(out_p, out[:, perm], atol=ATOL, rtol=0)
    torch.testing.assert_close(alpha_p, alpha[:, :, perm][..., perm], atol=ATOL, rtol=0)


@given(n=st.integers(2, 6), num_heads=st.integers(1, 3), seed=seeds)
def test_causal_mask_lets_no_future_position_influence_an_output(n, num_heads, seed):
    d_model = 2 * num_heads
    mha = randomised_mha(d_model, num_heads, seed)
    x = randn(seed, 1, n, d_model).requires_grad_()
    output = mha(x, x, x, causal_mask(n))  # (1, n, d_model)
    for t in range(n):
        (grad,) = torch.autograd.grad(output[0, t].sum(), x, retain_graph=True)  # (1, n, d)
        assert (grad[0, t + 1 :] == 0).all(), f"a future token influences output {t}"
        assert grad[0, : t + 1].abs().sum() > 0  # the past does influence it


# --------------------------------------------------------------------------- four scores
@given(
    batch=batch_shapes,
    m=sizes,
    n=sizes,
    d_q=st.integers(1, 6),
    d_k=st.integers(1, 6),
    d_v=st.integers(1, 6),
    seed=seeds,
    data=st.data(),
)
def test_the_four_scores_are_interchangeable(batch, m, n, d_q, d_k, d_v, seed, data):
    torch.manual_seed(seed)
    key, value = randn(seed, *batch, n, d_k), randn(seed + 1, *batch, n, d_v)
    query_k = randn(seed + 2, *batch, m, d_k)  # the dot scores need d_q == d_k
    query_q = randn(seed + 3, *batch, m, d_q)
    mask = data.draw(st.none() | masks((*batch, m, n)))
    cases = [
        (DotScore(), query_k),
        (ScaledDotScore(), query_k),
        (GeneralScore(d_q, d_k), query_q),
        (AdditiveScore(d_q, d_k, data.draw(st.integers(1, 5))), query_q),
    ]
    for score, query in cases:
        context, alpha = attention(query, key, value, score, mask)
        assert context.shape == (*batch, m, d_v), type(score).__name__
        assert alpha.shape == (*batch, m, n), type(score).__name__
        assert torch.isfinite(context).all() and (alpha >= 0).all()
        # c_t = sum_i alpha_{t,i} h_i
        torch.testing.assert_close(context, alpha @ value)
        expected = masked_softmax(score(query, key), mask)
        torch.testing.assert_close(alpha, expected)
        # the boundary's check passes good input through unchanged, to the same result
        validated_context, validated_alpha = validated(attention)(query, key, value, score, mask)
        assert torch.equal(validated_context, context) and torch.equal(validated_alpha, alpha)
