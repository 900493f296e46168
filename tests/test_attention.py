"""Unit tests of attnlab.attention against small examples computed by hand.

Every expected number below is worked out in the test from the formula (e, tanh, sin, ...),
never copied from a run of the code under test.
"""

import ast
import copy
import functools
import inspect
import math
import re
import textwrap

import pytest
import torch

import attnlab.attention as A
from attnlab.attention import (
    SCORES,
    AdditiveScore,
    DotScore,
    GeneralScore,
    MultiHeadAttention,
    ScaledDotScore,
    attention,
    causal_mask,
    dot_score,
    make_score,
    masked_softmax,
    padding_mask,
    positional_encoding,
    scaled_dot_product_attention,
    scaled_dot_score,
)
from attnlab.guard.inputs import validated

E = math.e


def t(x) -> torch.Tensor:
    return torch.tensor(x, dtype=torch.float32)


def close(actual: torch.Tensor, expected, atol: float = 1e-6) -> None:
    torch.testing.assert_close(actual, t(expected), atol=atol, rtol=1e-6)


def assert_shapes_named(excinfo: pytest.ExceptionInfo, *shapes: tuple[int, ...]) -> None:
    """The ValueError message names every shape the call got."""
    message = str(excinfo.value)
    for shape in shapes:
        assert str(tuple(shape)) in message, f"{shape} not named in: {message}"


def test_public_api_is_exported():
    names = [
        "dot_score",
        "scaled_dot_score",
        "DotScore",
        "ScaledDotScore",
        "GeneralScore",
        "AdditiveScore",
        "masked_softmax",
        "attention",
        "scaled_dot_product_attention",
        "causal_mask",
        "padding_mask",
        "MultiHeadAttention",
        "positional_encoding",
    ]
    namespace: dict = {}
    exec("from attnlab.attention import *", namespace)  # what a star import hands a student
    assert set(names) <= set(namespace) and "SCORES" in namespace and "make_score" in namespace
    assert all(namespace[name] is getattr(A, name) for name in names)
    # nothing else rides along: the checks live in attnlab.guard.inputs, not here
    assert {"entry_point", "AS_DEFINED", "torch", "math"}.isdisjoint(namespace)


# --------------------------------------------------------------------------- scores
S2 = [[1.0, 2.0], [3.0, 4.0]]  # two queries s_1, s_2 (m=2, d=2)
H2 = [[5.0, 6.0], [7.0, 8.0], [0.0, 1.0]]  # three keys h_1..h_3 (n=3, d=2)
DOTS = [  # s_t . h_i by hand
    [1 * 5 + 2 * 6, 1 * 7 + 2 * 8, 1 * 0 + 2 * 1],
    [3 * 5 + 4 * 6, 3 * 7 + 4 * 8, 3 * 0 + 4 * 1],
]


def test_dot_score_by_hand():
    close(dot_score(t(S2), t(H2)), DOTS)
    close(DotScore()(t(S2), t(H2)), DOTS)


def test_scaled_dot_score_divides_by_sqrt_d_k():
    scaled = [[x / math.sqrt(2) for x in row] for row in DOTS]
    close(scaled_dot_score(t(S2), t(H2)), scaled)
    close(ScaledDotScore()(t(S2), t(H2)), scaled)
    # d_k = 4: sqrt(d_k) = 2.  q = (1,1,1,1), k = (1,2,3,4) -> 10 / 2 = 5
    close(scaled_dot_score(t([[1.0, 1, 1, 1]]), t([[1.0, 2, 3, 4]])), [[5.0]])


def test_dot_scores_have_no_parameters():
    assert list(DotScore().parameters()) == []
    assert list(ScaledDotScore().parameters()) == []


def test_scores_keep_batch_dimensions():
    q, k = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 6, 5)
    assert dot_score(q, k).shape == (2, 3, 4, 6)
    assert scaled_dot_score(q, k).shape == (2, 3, 4, 6)
    # keys broadcast over the batch of queries
    assert dot_score(q, torch.randn(6, 5)).shape == (2, 3, 4, 6)


def test_general_score_with_hand_set_W_a():
    score = GeneralScore(2, 3)
    assert score.W_a.shape == (2, 3)
    with torch.no_grad():
        score.W_a.copy_(t([[1.0, 0.0, -1.0], [0.0, 2.0, 0.0]]))
    s = t([[1.0, 1.0], [2.0, 0.0]])  # (m=2, d_q=2)
    h = t([[3.0, 4.0, 5.0], [1.0, 0.0, 7.0]])  # (n=2, d_k=3)
    # s_1^T W_a = (1, 2, -1): . h_1 = 3 + 8 - 5 = 6,   . h_2 = 1 - 7 = -6
    # s_2^T W_a = (2, 0, -2): . h_1 = 6 - 10 = -4,     . h_2 = 2 - 14 = -12
    close(score(s, h), [[6.0, -6.0], [-4.0, -12.0]])


def test_general_score_with_identity_is_the_dot_score():
    score = GeneralScore(3, 3)
    with torch.no_grad():
        score.W_a.copy_(torch.eye(3))
    q, k = torch.randn(4, 3), torch.randn(5, 3)
    torch.testing.assert_close(score(q, k), dot_score(q, k))


def test_additive_score_with_hand_set_W_U_v():
    score = AdditiveScore(2, 2, 2)
    assert score.W.bias is None and score.U.bias is None and score.v.bias is None  # no bias
    assert sum(p.numel() for p in score.parameters()) == 4 + 4 + 2  # W, U, v only
    with torch.no_grad():
        score.W.weight.copy_(torch.eye(2))
        score.U.weight.copy_(t([[0.0, 1.0], [1.0, 0.0]]))  # U swaps the coordinates of h
        score.v.weight.copy_(t([[2.0, 1.0]]))
    s = t([[0.5, 0.0]])  # (m=1, d_q=2)
    h = t([[0.0, 0.5], [1.0, -1.0]])  # (n=2, d_k=2)
    # v^T tanh(W s + U h):  W s = (0.5, 0)
    # h_1: U h = (0.5, 0)  -> tanh(0.5 + 0.5), tanh(0 + 0)
    # h_2: U h = (-1, 1)   -> tanh(0.5 - 1),  tanh(0 + 1)
    expected = [
        [
            2 * math.tanh(1.0) + 1 * math.tanh(0.0),
            2 * math.tanh(-0.5) + 1 * math.tanh(1.0),
        ]
    ]
    close(score(s, h), expected)


def test_general_and_additive_allow_d_q_different_from_d_k():
    q, k = torch.randn(2, 4, 3), torch.randn(2, 6, 5)
    assert GeneralScore(3, 5)(q, k).shape == (2, 4, 6)
    assert AdditiveScore(3, 5, 7)(q, k).shape == (2, 4, 6)


def test_make_score_builds_each_of_the_four():
    assert tuple(SCORES) == ("dot", "scaled_dot", "general", "additive")
    assert isinstance(make_score("dot", 4, 4), DotScore)
    assert isinstance(make_score("scaled_dot", 4, 4), ScaledDotScore)
    assert isinstance(make_score("general", 3, 4), GeneralScore)
    additive = make_score("additive", 3, 4, d_attn=6)
    assert isinstance(additive, AdditiveScore) and additive.d_attn == 6


def test_make_score_rejects_bad_requests():
    with pytest.raises(ValueError, match="d_q=3, d_k=4"):
        make_score("dot", 3, 4)  # a builder refuses what it cannot build, like a constructor
    with pytest.raises(ValueError, match="unknown score"):
        make_score("cosine", 4, 4)


@pytest.mark.parametrize("score", [dot_score, scaled_dot_score, DotScore(), ScaledDotScore()])
def test_dot_scores_reject_different_d(score):
    q, k = torch.randn(2, 3), torch.randn(4, 5)
    with pytest.raises(ValueError) as excinfo:
        validated(score)(q, k)
    assert_shapes_named(excinfo, (2, 3), (4, 5))


@pytest.mark.parametrize("score", [GeneralScore(3, 5), AdditiveScore(3, 5, 4)])
def test_weighted_scores_reject_wrong_sizes(score):
    q, k = torch.randn(2, 4), torch.randn(6, 5)  # d_q = 4 where 3 was built
    with pytest.raises(ValueError) as excinfo:
        validated(score)(q, k)
    assert_shapes_named(excinfo, (2, 4), (6, 5))


def test_scores_reject_1d_and_mismatched_batches():
    with pytest.raises(ValueError) as excinfo:
        validated(dot_score)(torch.randn(3), torch.randn(4, 3))
    assert_shapes_named(excinfo, (3,), (4, 3))
    with pytest.raises(ValueError) as excinfo:
        validated(dot_score)(torch.randn(2, 4, 3), torch.randn(3, 5, 3))
    assert_shapes_named(excinfo, (2, 4, 3), (3, 5, 3))


# --------------------------------------------------------------------------- masked softmax
def test_softmax_without_mask_by_hand():
    total = E + E**2 + E**3
    close(masked_softmax(t([1.0, 2.0, 3.0])), [E / total, E**2 / total, E**3 / total])


def test_masked_softmax_row_by_hand():
    scores = t([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    mask = torch.tensor([[True, True, False], [False, True, True]])
    expected = [
        [E / (E + E**2), E**2 / (E + E**2), 0.0],
        [0.0, E**2 / (E**2 + E**3), E**3 / (E**2 + E**3)],
    ]
    alpha = masked_softmax(scores, mask)
    close(alpha, expected)
    assert alpha[0, 2].item() == 0.0 and alpha[1, 0].item() == 0.0  # exactly 0


def test_masked_softmax_mask_broadcasts():
    scores = torch.randn(2, 3, 4)
    key_mask = torch.tensor([True, False, True, True])  # (n,): the same for every row
    alpha = masked_softmax(scores, key_mask)
    assert alpha.shape == (2, 3, 4)
    assert (alpha[..., 1] == 0).all()
    torch.testing.assert_close(alpha.sum(-1), torch.ones(2, 3))


def test_all_masked_row_gives_zeros_not_nan():
    scores = t([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    mask = torch.tensor([[False, False, False], [True, True, True]])
    alpha = masked_softmax(scores, mask)
    assert not alpha.isnan().any()
    assert (alpha[0] == 0).all()
    close(alpha[1], (torch.softmax(t([4.0, 5.0, 6.0]), -1)).tolist())


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
def test_gradient_through_all_masked_rows_is_not_nan():
    scores = torch.randn(3, 4, requires_grad=True)
    mask = torch.tensor([[False] * 4, [True, False, True, False], [True] * 4])  # row 0 sees nothing
    with torch.autograd.detect_anomaly():  # fails on a NaN anywhere in the backward pass
        alpha = masked_softmax(scores, mask)
        (alpha * torch.randn(3, 4)).sum().backward()
    assert not scores.grad.isnan().any()
    assert (scores.grad[0] == 0).all()  # nothing allowed: nothing to learn
    assert (scores.grad[1, [1, 3]] == 0).all()  # masked scores get no gradient


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
def test_gradient_of_fully_masked_attention_is_finite():
    Q, K, V = (torch.randn(2, 3, 4, requires_grad=True) for _ in range(3))
    mask = torch.zeros(3, 3, dtype=torch.bool)
    with torch.autograd.detect_anomaly():
        output, alpha = scaled_dot_product_attention(Q, K, V, mask)
        assert (output == 0).all() and (alpha == 0).all()
        output.sum().backward()
    for x in (Q, K, V):
        assert torch.isfinite(x.grad).all()


@pytest.mark.parametrize("use_mask", [False, True])
def test_huge_scores_are_stable(use_mask):
    # scores around 1e4: a naive exp() overflows to inf and gives NaN
    scores = t([[1e4, 1e4 + 1.0, 1e4 - 1.0], [-1e4, -1e4 + 2.0, 1e4]])
    mask = torch.tensor([[True, True, False], [True, True, True]]) if use_mask else None
    alpha = masked_softmax(scores, mask)
    assert torch.isfinite(alpha).all()
    if use_mask:
        expected = [[1 / (1 + E), E / (1 + E), 0.0], [0.0, 0.0, 1.0]]
    else:
        total = 1 + E + 1 / E  # subtract 1e4: exp(0), exp(1), exp(-1)
        expected = [[1 / total, E / total, 1 / E / total], [0.0, 0.0, 1.0]]
    close(alpha, expected)


def test_scaled_dot_product_attention_with_scores_around_1e4():
    Q = torch.full((1, 3, 4), 100.0)  # q.k / sqrt(4) = 100 * 100 * 4 / 2 = 2e4
    K = torch.full((1, 5, 4), 100.0)
    V = torch.randn(1, 5, 2)
    for mask in (None, causal_mask(5)[:3]):
        output, alpha = scaled_dot_product_attention(Q, K, V, mask)
        assert torch.isfinite(output).all() and torch.isfinite(alpha).all()
        torch.testing.assert_close(alpha.sum(-1), torch.ones(1, 3))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.uint8])
def test_non_bool_mask_is_rejected(dtype):
    scores = torch.randn(2, 3)
    with pytest.raises(ValueError, match="bool"):
        validated(masked_softmax)(scores, torch.ones(2, 3, dtype=dtype))
    with pytest.raises(ValueError, match="bool"):
        validated(scaled_dot_product_attention)(
            torch.randn(2, 4), torch.randn(3, 4), torch.randn(3, 5), torch.ones(2, 3, dtype=dtype)
        )


def test_mask_of_wrong_shape_is_rejected():
    with pytest.raises(ValueError) as excinfo:
        validated(masked_softmax)(torch.randn(2, 3), torch.ones(2, 4, dtype=torch.bool))
    assert_shapes_named(excinfo, (2, 4), (2, 3))
    # a mask may broadcast to the scores, not the other way round
    with pytest.raises(ValueError) as excinfo:
        validated(masked_softmax)(torch.randn(2, 3), torch.ones(5, 2, 3, dtype=torch.bool))
    assert_shapes_named(excinfo, (5, 2, 3), (2, 3))


# --------------------------------------------------------------------------- attention
def test_attention_by_hand():
    s = t([[1.0, 0.0]])  # one query (m=1, d=2)
    h = t([[1.0, 0.0], [0.0, 1.0]])  # two keys (n=2)
    values = t([[1.0, 2.0], [3.0, 4.0]])  # (n=2, d_v=2)
    # scores (1, 0) -> alpha = (e, 1) / (e + 1);  c = alpha_1 h_1 + alpha_2 h_2
    a1, a2 = E / (E + 1), 1 / (E + 1)
    context, alpha = attention(s, h, values, DotScore())
    close(alpha, [[a1, a2]])
    close(context, [[a1 * 1 + a2 * 3, a1 * 2 + a2 * 4]])
    # the default score is the dot score; at the boundary a parameter-free score may be named
    for context in (attention(s, h, values)[0], validated(attention)(s, h, values, "dot")[0]):
        close(context, [[a1 * 1 + a2 * 3, a1 * 2 + a2 * 4]])
    # scaled: scores (1/sqrt 2, 0)
    b1 = math.exp(1 / math.sqrt(2)) / (math.exp(1 / math.sqrt(2)) + 1)
    close(attention(s, h, values, scaled_dot_score)[1], [[b1, 1 - b1]])
    close(validated(attention)(s, h, values, "scaled_dot")[1], [[b1, 1 - b1]])


def test_attention_default_score_is_dot():
    q, k, v = torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 2)
    torch.testing.assert_close(attention(q, k, v)[1], torch.softmax(q @ k.T, -1))


def test_attention_with_mask_by_hand():
    s, h = t([[1.0, 0.0]]), t([[1.0, 0.0], [0.0, 1.0]])
    values = t([[1.0, 2.0], [3.0, 4.0]])
    context, alpha = attention(s, h, values, dot_score, mask=torch.tensor([[False, True]]))
    close(alpha, [[0.0, 1.0]])
    close(context, [[3.0, 4.0]])  # all weight on h_2


def test_attention_context_is_the_weighted_sum_of_values():
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 6), torch.randn(2, 5, 7)
    context, alpha = attention(q, k, v, GeneralScore(4, 6))
    assert context.shape == (2, 3, 7) and alpha.shape == (2, 3, 5)
    # c_t = sum_i alpha_{t,i} h_i, written as a loop
    for b in range(2):
        for row in range(3):
            expected = sum(alpha[b, row, i] * v[b, i] for i in range(5))
            torch.testing.assert_close(context[b, row], expected)


def test_attention_rejects_incompatible_shapes():
    attention = validated(A.attention)  # the boundary: the equation behind validated arguments
    q, k = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    with pytest.raises(ValueError) as excinfo:
        attention(q, k, torch.randn(2, 6, 7), "dot")  # values n = 6, keys n = 5
    assert_shapes_named(excinfo, (2, 5, 4), (2, 6, 7))
    with pytest.raises(ValueError) as excinfo:
        attention(q, k, torch.randn(3, 5, 7), "dot")  # batch 3 vs 2
    assert_shapes_named(excinfo, (2, 3, 4), (2, 5, 4), (3, 5, 7))
    with pytest.raises(ValueError) as excinfo:
        attention(q, torch.randn(2, 5, 3), torch.randn(2, 5, 7), "dot")  # d_q != d_k
    assert_shapes_named(excinfo, (2, 3, 4), (2, 5, 3))
    with pytest.raises(ValueError) as excinfo:
        attention(q, k, torch.randn(2, 5, 7), "dot", mask=torch.ones(3, 6, dtype=torch.bool))
    assert_shapes_named(excinfo, (3, 6), (2, 3, 5))


def test_attention_rejects_weighted_score_by_name():
    q = torch.randn(3, 4)
    with pytest.raises(ValueError, match="GeneralScore"):
        validated(attention)(q, q, q, "general")


# --------------------------------------------------------------------------- scaled dot-product
def test_scaled_dot_product_attention_by_hand():
    Q = t([[2.0, 0.0, 0.0, 0.0]])  # d_k = 4, sqrt(d_k) = 2
    K = t([[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    V = t([[10.0], [20.0]])
    # Q K^T / 2 = (1, 0) -> weights (e, 1) / (e + 1)
    output, alpha = scaled_dot_product_attention(Q, K, V)
    close(alpha, [[E / (E + 1), 1 / (E + 1)]])
    close(output, [[(10 * E + 20) / (E + 1)]], atol=1e-5)


def test_scaled_dot_product_attention_with_causal_mask_by_hand():
    Q = K = t([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])  # equal scores: uniform over allowed keys
    V = t([[3.0], [6.0], [9.0]])
    output, alpha = scaled_dot_product_attention(Q, K, V, causal_mask(3))
    close(alpha, [[1, 0, 0], [1 / 2, 1 / 2, 0], [1 / 3, 1 / 3, 1 / 3]])
    close(output, [[3.0], [4.5], [6.0]])


def test_scaled_dot_product_attention_shapes():
    Q, K, V = torch.randn(2, 4, 3, 8), torch.randn(2, 4, 5, 8), torch.randn(2, 4, 5, 6)
    output, alpha = scaled_dot_product_attention(Q, K, V)
    assert output.shape == (2, 4, 3, 6) and alpha.shape == (2, 4, 3, 5)


@pytest.mark.parametrize(
    "shapes",
    [
        ((3, 4), (5, 6), (5, 2)),  # d_k of Q and K differ
        ((3, 4), (5, 4), (6, 2)),  # n of K and V differ
        ((4,), (5, 4), (5, 2)),  # Q is 1-D
        ((2, 3, 4), (3, 5, 4), (3, 5, 2)),  # batches 2 and 3 do not broadcast
    ],
)
def test_scaled_dot_product_attention_rejects_incompatible_shapes(shapes):
    Q, K, V = (torch.randn(*shape) for shape in shapes)
    with pytest.raises(ValueError) as excinfo:
        validated(scaled_dot_product_attention)(Q, K, V)
    assert_shapes_named(excinfo, *shapes)


def test_scaled_dot_product_attention_rejects_mask_of_wrong_shape():
    Q, K, V = torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 2)
    with pytest.raises(ValueError) as excinfo:
        validated(scaled_dot_product_attention)(Q, K, V, torch.ones(5, 3, dtype=torch.bool))
    assert_shapes_named(excinfo, (5, 3), (3, 5))


def test_non_tensor_input_is_a_type_error():
    with pytest.raises(TypeError):
        validated(scaled_dot_product_attention)([[1.0]], torch.ones(1, 1), torch.ones(1, 1))


# --------------------------------------------------------------------------- masks
def test_causal_mask_3():
    expected = torch.tensor([[True, False, False], [True, True, False], [True, True, True]])
    mask = causal_mask(3)
    assert mask.dtype == torch.bool
    assert torch.equal(mask, expected)
    assert causal_mask(0).shape == (0, 0)
    assert torch.equal(causal_mask(1), torch.tensor([[True]]))


@pytest.mark.parametrize("n", [-1, 2.5, "3", True])
def test_causal_mask_rejects_bad_n(n):
    with pytest.raises(ValueError):
        validated(causal_mask)(n)


def test_padding_mask_by_hand():
    expected = torch.tensor([[True, False, False, False], [True, True, True, False]])
    assert torch.equal(padding_mask([1, 3], 4), expected)
    assert torch.equal(padding_mask(torch.tensor([1, 3]), 4), expected)
    assert torch.equal(padding_mask([0, 2], 2), torch.tensor([[False, False], [True, True]]))
    assert padding_mask([1, 3], 4).dtype == torch.bool


@pytest.mark.parametrize(
    "lengths, n",
    [([1, 5], 4), ([-1, 2], 4), ([[1, 2]], 4), ([1.5, 2.0], 4), ([1, 2], -1)],
)
def test_padding_mask_rejects_bad_input(lengths, n):
    with pytest.raises(ValueError):
        validated(padding_mask)(lengths, n)


def test_padding_mask_masks_keys_in_attention():
    lengths = [2, 4]
    Q, K, V = torch.randn(2, 3, 8), torch.randn(2, 4, 8), torch.randn(2, 4, 5)
    key_mask = padding_mask(lengths, 4)[:, None, :]  # (B, 1, n)
    _, alpha = scaled_dot_product_attention(Q, K, V, key_mask)
    assert (alpha[0, :, 2:] == 0).all()
    torch.testing.assert_close(alpha.sum(-1), torch.ones(2, 3))


# --------------------------------------------------------------------------- multi-head
def identity_mha(d_model: int, num_heads: int) -> MultiHeadAttention:
    mha = MultiHeadAttention(d_model, num_heads)
    with torch.no_grad():
        for linear in (mha.W_q, mha.W_k, mha.W_v, mha.W_o):
            linear.weight.copy_(torch.eye(d_model))
            linear.bias.zero_()
    return mha


def test_multi_head_attention_by_hand():
    # d_model 2, 2 heads: d_k = 1, head i sees coordinate i of every token.
    mha = identity_mha(2, 2)
    x = t([[[1.0, 0.0], [0.0, 1.0]]])  # (B=1, n=2, d_model=2)
    output = mha(x, x, x)
    alpha = mha.alpha  # the weights of that call, kept on the module
    # head 1: q = k = v = (1, 0):  scores [[1, 0], [0, 0]]
    #   alpha row 1 = (e, 1) / (e + 1), row 2 = (1/2, 1/2);  out = (e / (e + 1), 1/2)
    # head 2: q = k = v = (0, 1):  scores [[0, 0], [0, 1]]
    #   alpha row 1 = (1/2, 1/2), row 2 = (1, e) / (1 + e);  out = (1/2, e / (1 + e))
    a = E / (E + 1)
    close(alpha, [[[[a, 1 - a], [0.5, 0.5]], [[0.5, 0.5], [1 - a, a]]]])
    close(output, [[[a, 0.5], [0.5, a]]])  # Concat(head_1, head_2) W^O with W^O = I


def test_multi_head_attention_shapes_and_cross_attention():
    mha = MultiHeadAttention(12, 3)
    assert mha.d_k == 4
    query, memory = torch.randn(2, 5, 12), torch.randn(2, 7, 12)
    output = mha(query, memory, memory)
    alpha = mha.alpha  # the weights of that call, kept on the module
    assert output.shape == (2, 5, 12) and alpha.shape == (2, 3, 5, 7)
    torch.testing.assert_close(alpha.sum(-1), torch.ones(2, 3, 5))
    # unbatched input works too
    output = mha(query[0], memory[0], memory[0])
    alpha = mha.alpha  # the weights of that call, kept on the module
    assert output.shape == (5, 12) and alpha.shape == (3, 5, 7)


def test_multi_head_attention_causal_and_padding_masks():
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, 4, 8)
    mha(x, x, x, causal_mask(4))
    alpha = mha.alpha  # the weights of that call, kept on the module
    assert (alpha.masked_select(~causal_mask(4)) == 0).all()
    key_mask = padding_mask([2, 4], 4)[:, None, :]  # (B, 1, n)
    mha(x, x, x, key_mask)
    alpha = mha.alpha  # the weights of that call, kept on the module
    assert (alpha[0, :, :, 2:] == 0).all()  # every head ignores the padding
    torch.testing.assert_close(alpha.sum(-1), torch.ones(2, 2, 4))
    full = causal_mask(4) & key_mask  # (B, m, n)
    mha(x, x, x, full)
    alpha = mha.alpha  # the weights of that call, kept on the module
    assert (alpha.masked_select(~full[:, None]) == 0).all()


@pytest.mark.parametrize("d_model, num_heads", [(10, 3), (8, 0), (0, 2), (6, 4)])
def test_multi_head_attention_rejects_d_model_not_divisible(d_model, num_heads):
    with pytest.raises(ValueError) as excinfo:
        MultiHeadAttention(d_model, num_heads)
    assert f"d_model={d_model}" in str(excinfo.value)
    assert f"num_heads={num_heads}" in str(excinfo.value)


@pytest.mark.parametrize(
    "shapes",
    [
        ((2, 5, 6), (2, 7, 8), (2, 7, 8)),  # key of the wrong width
        ((2, 5, 8), (2, 7, 8), (2, 6, 8)),  # key and value lengths differ
        ((2, 5, 8), (3, 7, 8), (3, 7, 8)),  # batches 2 and 3
        ((8,), (7, 8), (7, 8)),  # query 1-D
    ],
)
def test_multi_head_attention_rejects_incompatible_shapes(shapes):
    mha = MultiHeadAttention(8, 2)
    query, key, value = (torch.randn(*shape) for shape in shapes)
    with pytest.raises(ValueError) as excinfo:
        validated(mha)(query, key, value)
    assert_shapes_named(excinfo, *shapes)


def test_multi_head_attention_rejects_bad_masks():
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, 4, 8)
    with pytest.raises(ValueError) as excinfo:
        validated(mha)(x, x, x, causal_mask(5))
    assert_shapes_named(excinfo, (5, 5), (2, 4, 4))
    with pytest.raises(ValueError, match="bool"):
        validated(mha)(x, x, x, causal_mask(4).float())


def test_multi_head_attention_returns_a_tensor_and_keeps_its_last_weights():
    mha = MultiHeadAttention(8, 2)
    x, memory = torch.randn(2, 4, 8), torch.randn(2, 6, 8)
    assert mha.alpha is None  # nothing computed yet
    output = mha(x, x, x)
    assert isinstance(output, torch.Tensor) and output.shape == (2, 4, 8)
    assert mha.alpha.shape == (2, 2, 4, 4) and not hasattr(mha, "weights")  # one name
    mha(x, memory, memory)  # a second call replaces them: the weights of the last call
    assert mha.alpha.shape == (2, 2, 4, 6)
    Q, K = mha.split_heads(mha.W_q(x)), mha.split_heads(mha.W_k(memory))  # (B, h, T, d_k)
    torch.testing.assert_close(mha.alpha, torch.softmax(Q @ K.mT / 2.0, dim=-1))  # d_k = 4
    assert not mha.alpha.requires_grad  # kept to be read: a copy of the module holds no graph
    copy.deepcopy(mha)


# --------------------------------------------------------------------------- positions
def test_positional_encoding_entries():
    pe = positional_encoding(5, 4)
    assert pe.shape == (5, 4) and pe.dtype == torch.float32
    close(pe[0], [0.0, 1.0, 0.0, 1.0])  # sin 0 = 0, cos 0 = 1
    # PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(...):  d = 4
    close(pe[1], [math.sin(1), math.cos(1), math.sin(1 / 100), math.cos(1 / 100)])
    close(pe[3, 2:], [math.sin(3 / 100), math.cos(3 / 100)])


def test_positional_encoding_odd_d_and_range():
    pe = positional_encoding(7, 5)
    assert pe.shape == (7, 5)
    # the last column is 2i = 4: sin(pos / 10000^(4/5))
    close(pe[:, 4], [math.sin(p / 10000 ** (4 / 5)) for p in range(7)])
    assert positional_encoding(0, 4).shape == (0, 4)
    big = positional_encoding(50, 16)
    assert big.abs().max() <= 1.0
    # distinct positions get distinct codes
    assert torch.cdist(big, big).add(torch.eye(50)).min() > 0


@pytest.mark.parametrize("n, d", [(-1, 4), (3, 0), (2.0, 4), (3, "4")])
def test_positional_encoding_rejects_bad_sizes(n, d):
    with pytest.raises(ValueError):
        validated(positional_encoding)(n, d)


def from_torch(twin: torch.nn.MultiheadAttention) -> MultiHeadAttention:
    """Our MultiHeadAttention holding the weights of torch's (same mode, biases, no extras).

    torch stacks W_q, W_k, W_v into ``in_proj_weight`` (3 d_model, d_model); both compute
    y = x W^T + b, so the copies give the same outputs and the same per-head weights.
    """
    assert twin.bias_k is None and not twin.add_zero_attn and twin._qkv_same_embed_dim
    mha = MultiHeadAttention(twin.embed_dim, twin.num_heads)
    w_q, w_k, w_v = twin.in_proj_weight.detach().chunk(3)  # each (d_model, d_model)
    b_q, b_k, b_v = twin.in_proj_bias.detach().chunk(3)
    with torch.no_grad():
        for layer, w, b in ((mha.W_q, w_q, b_q), (mha.W_k, w_k, b_k), (mha.W_v, w_v, b_v)):
            layer.weight.copy_(w)
            layer.bias.copy_(b)
        mha.W_o.weight.copy_(twin.out_proj.weight)
        mha.W_o.bias.copy_(twin.out_proj.bias)
    return mha.train(twin.training)


def test_multi_head_attention_matches_torch_multihead_attention():
    torch.manual_seed(3)
    twin = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    mha = from_torch(twin)
    x, memory = torch.randn(2, 4, 8), torch.randn(2, 5, 8)
    out = mha(x, memory, memory)
    ref, ref_alpha = twin(x, memory, memory, average_attn_weights=False)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(mha.alpha, ref_alpha, atol=1e-6, rtol=1e-5)
    causal = causal_mask(4)  # torch's attn_mask: True = NOT allowed
    ref, _ = twin(x, x, x, attn_mask=~causal)
    torch.testing.assert_close(mha(x, x, x, causal), ref, atol=1e-5, rtol=1e-5)


F32, F64, I64 = torch.float32, torch.float64, torch.int64


def _calls(q, k, v):
    """Every equation of the attention core, through the boundary, on (q, k, v) of one shape."""
    mha = MultiHeadAttention(4, 2)
    return {
        "dot_score": lambda: validated(dot_score)(q, k),
        "scaled_dot_score": lambda: validated(scaled_dot_score)(q, k),
        "GeneralScore": lambda: validated(GeneralScore(4, 4))(q, k),
        "AdditiveScore": lambda: validated(AdditiveScore(4, 4, 3))(q, k),
        "masked_softmax": lambda: validated(masked_softmax)(q),
        "attention": lambda: validated(attention)(q, k, v),
        "scaled_dot_product_attention": lambda: validated(scaled_dot_product_attention)(q, k, v),
        "MultiHeadAttention": lambda: validated(mha)(q, k, v),
    }


@pytest.mark.parametrize(
    "dtypes",
    [(I64, I64, I64), (F32, F64, F32), (F32, F32, F64), (torch.int32, F32, F32), (F64, I64, F64)],
)
def test_integer_or_mixed_dtypes_are_a_value_error_naming_them(dtypes):
    q, k, v = (torch.ones(1, 2, 4).to(d) for d in dtypes)
    for name, call in _calls(q, k, v).items():
        if name == "masked_softmax" and dtypes[0].is_floating_point:
            continue  # one input: nothing to mix
        if name in ("dot_score", "scaled_dot_score", "GeneralScore", "AdditiveScore") and (
            dtypes[0] == dtypes[1] and dtypes[0].is_floating_point
        ):
            continue  # these read only q and k
        with pytest.raises(ValueError) as excinfo:
            call()
        message = str(excinfo.value)
        assert "\n" not in message, name
        assert any(str(d) in message for d in set(dtypes) - {F32}), (name, message)


def test_float64_throughout_is_fine_but_not_against_float32_weights():
    q = torch.randn(1, 2, 4, dtype=F64)
    for name, call in _calls(q, q, q).items():
        if name in ("GeneralScore", "AdditiveScore", "MultiHeadAttention"):  # float32 weights
            with pytest.raises(ValueError, match="torch.float32.*torch.float64"):
                call()
        else:
            assert call()[0].dtype == F64


def test_additive_score_precompute_gives_the_same_scores():
    torch.manual_seed(0)
    score = AdditiveScore(3, 5, 4)
    q, k = torch.randn(2, 6, 3), torch.randn(2, 7, 5)
    Uh = score.precompute(k)  # U h_i once per source: (B, n, d_attn)
    assert Uh.shape == (2, 7, 4)
    torch.testing.assert_close(score(q, k, Uh=Uh), score(q, k))
    with torch.no_grad():  # and it is U h_i, nothing else (no bias)
        torch.testing.assert_close(Uh, k @ score.U.weight.T)


def test_attention_reads_masked_softmax_through_the_module_global():
    from unittest import mock

    q = torch.randn(1, 2, 4)
    fake = mock.Mock(side_effect=lambda s, m=None: torch.full_like(s, 0.5))
    with mock.patch.object(A, "masked_softmax", fake):
        context, alpha = attention(q, q, q)
        assert fake.call_count == 1 and bool((alpha == 0.5).all())
        scaled_dot_product_attention(q, q, q)
        MultiHeadAttention(4, 2)(q, q, q)
    assert fake.call_count == 3


def test_multi_head_attention_calls_the_module_global_scaled_dot_product_attention():
    from unittest import mock

    x = torch.randn(1, 3, 4)
    with mock.patch.object(
        A, "scaled_dot_product_attention", side_effect=scaled_dot_product_attention
    ) as spy:
        MultiHeadAttention(4, 2)(x, x, x, causal_mask(3))
    (((Q, K, V, mask), _),) = spy.call_args_list
    assert Q.shape == K.shape == V.shape == (1, 2, 3, 2) and mask.shape == (3, 3)


# --------------------------------------------------------------------------- equations first
SHOWN_ON_SLIDES = [  # what the deck shows with lecture.show_source: the equation only
    dot_score,
    scaled_dot_score,
    GeneralScore.forward,
    AdditiveScore.forward,
    masked_softmax,
    attention,
    scaled_dot_product_attention,
    MultiHeadAttention.forward,
    positional_encoding,
    causal_mask,
]


def _body(fn) -> str:
    """The statements of ``fn``'s source, its docstring left out."""
    node = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    body = node.body[1:] if isinstance(node.body[0], ast.Expr) else node.body
    return "\n".join(ast.unparse(stmt) for stmt in body)


@pytest.mark.parametrize("fn", SHOWN_ON_SLIDES, ids=lambda fn: fn.__qualname__)
def test_the_functions_on_the_slides_are_their_equations(fn):
    code = _body(fn)
    for noise in ("raise", "check", "isinstance", "dropout", ".to(", "dtype ="):
        assert noise not in code, f"{fn.__qualname__} holds {noise!r}:\n{code}"
    assert len(code.splitlines()) <= 10, code  # the body is its equation, a few lines


def _public_functions() -> dict[str, object]:
    """Every function of attnlab.attention's public names, and every method of its classes."""
    found = {}
    for name in A.__all__:
        value = getattr(A, name)
        if isinstance(value, type):
            found.update(
                {f"{name}.{k}": v for k, v in vars(value).items() if inspect.isfunction(v)}
            )
        elif callable(value):
            found[name] = value
    return found


@pytest.mark.parametrize("name", sorted(_public_functions()))
def test_every_public_function_is_the_plain_function_written_in_the_file(name):
    fn = _public_functions()[name]
    assert inspect.isfunction(fn) and not hasattr(fn, "__wrapped__"), f"{name} is wrapped"
    assert fn.__code__.co_filename == A.__file__, f"{name} runs code from another file"
    assert fn.__qualname__ == name, f"{name} is {fn.__qualname__} under another name"
    source = inspect.getsource(fn)  # what `attention??` shows: the definition itself
    assert source.lstrip().startswith("def ") and f"def {name.split('.')[-1]}(" in source


def test_the_equations_check_nothing_and_the_boundary_checks_once(monkeypatch):
    from attnlab.guard import inputs

    calls = []
    real = inputs._validate_dtypes
    monkeypatch.setattr(
        inputs, "_validate_dtypes", lambda *a, **k: (calls.append(a), real(*a, **k))
    )
    x = torch.randn(1, 5, 8)
    mha = MultiHeadAttention(8, 2)
    mha(x, x, x, causal_mask(5))
    attention(x, x, x, GeneralScore(8, 8))
    masked_softmax(torch.randn(3, 4))
    assert calls == []  # the equations trust their callers
    validated(mha)(x, x, x, causal_mask(5))
    assert len(calls) == 1  # once at the boundary, not again in sdpa or masked_softmax
    calls.clear()
    validated(attention)(x, x, x, GeneralScore(8, 8))  # and the score's inputs for it
    assert len(calls) == 2
    with pytest.raises(TypeError, match="no input check"):
        validated(lambda q, k: q)  # only the library's own equations have a check


def test_a_score_from_outside_must_return_scores_of_the_right_shape():
    q, k = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    at_the_boundary = validated(attention)
    with pytest.raises(ValueError, match=r"\(2, 3, 5\); got shape \(\)") as excinfo:
        at_the_boundary(q, k, k, lambda s, h: s.sum())  # a number, not (B, m, n)
    assert "\n" not in str(excinfo.value)
    with pytest.raises(ValueError, match="got ndarray"):
        at_the_boundary(q, k, k, lambda s, h: (s @ h.mT).numpy())
    with pytest.raises(ValueError, match="got shape"):  # bound arguments change nothing
        at_the_boundary(q, k, k, functools.partial(lambda s, h, c: c * s.sum(), c=2.0))
    with pytest.raises(ValueError, match="NaN"):
        at_the_boundary(q, k, k, lambda s, h: (s @ h.mT) * float("nan"))
    context, alpha = at_the_boundary(q, k, k, lambda s, h: -(s @ h.mT))  # a fine one runs
    torch.testing.assert_close(alpha, torch.softmax(-(q @ k.mT), -1))


def test_one_table_from_score_names_to_scores(monkeypatch):
    # Each name builds the score of its formula, written here from the module's own weights.
    formulas = {
        "dot": lambda m, s, h: s @ h.mT,
        "scaled_dot": lambda m, s, h: s @ h.mT / math.sqrt(4),
        "general": lambda m, s, h: s @ m.W_a @ h.mT,
        "additive": lambda m, s, h: (
            torch.tanh((s @ m.W.weight.T)[:, :, None] + (h @ m.U.weight.T)[:, None]) @ m.v.weight[0]
        ),
    }
    assert set(formulas) == set(SCORES)  # a new score needs its formula here
    g = torch.Generator().manual_seed(0)
    s, h = torch.randn(2, 3, 4, generator=g), torch.randn(2, 5, 4, generator=g)
    for name, formula in formulas.items():
        score = make_score(name, 4, 4, 3)
        assert isinstance(score, torch.nn.Module)
        torch.testing.assert_close(score(s, h), formula(score, s, h))  # (B, m, n) = (2, 3, 5)
    assert make_score("additive", 4, 4, 3).v.weight.shape == (1, 3)  # d_attn as given
    q = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0]])  # (m=n=2, d=4)
    # q q^T = [[1, 0], [0, 4]]; scaled by sqrt(4) = 2: [[1/2, 0], [0, 2]]
    dot = [[E / (E + 1), 1 / (E + 1)], [1 / (1 + E**4), E**4 / (1 + E**4)]]
    half, e2 = math.exp(0.5), math.exp(2.0)
    scaled = [[half / (half + 1), 1 / (half + 1)], [1 / (1 + e2), e2 / (1 + e2)]]
    close(validated(attention)(q, q, q, "dot")[1], dot)
    close(validated(attention)(q, q, q, "scaled_dot")[1], scaled)
    monkeypatch.setitem(SCORES, "dot", SCORES["scaled_dot"])  # names go through the table
    close(validated(attention)(q, q, q, "dot")[1], scaled)


def test_the_stated_speed_targets_are_the_benchmarks():
    """README.md and docs/architecture.md state benchmarks/attention.py's TARGETS."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    tree = ast.parse((root / "benchmarks" / "attention.py").read_text(encoding="utf-8"))
    targets = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "TARGETS"
    )
    (small, small_ratio), (large, large_ratio) = sorted(targets.items())
    stated = (
        rf"within {small_ratio:g}x of\s+torch's fused kernel at n = {small}"
        rf"\s+and\s+(within\s+)?{large_ratio:g}x at n = {large}"
    )
    for doc in ("README.md", "docs/architecture.md"):
        text = (root / doc).read_text(encoding="utf-8")
        assert re.search(stated, text), f"{doc} does not state the targets {targets}"
