"""Tests of attnlab.checks: each check accepts correct answers and names each mistake.

For every exercise we feed the reference, a correct answer written the way a student would
(without attnlab), and deliberately wrong answers, and assert the exact failure category and
the words the student reads.  Then: solutions mode raises, student mode never does, and the
exercises notebook is wired to the checks.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from attnlab import checks
from attnlab.checks import CATEGORIES, ENV_VAR, EXERCISES, CheckResult, harness, inside_models
from attnlab.checks.inside_models import reference_model

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "07_attention_exercises.ipynb"
NEG_INF = float("-inf")


@pytest.fixture(autouse=True)
def student_mode(monkeypatch):
    """Every test starts in the student's mode (the switch off)."""
    monkeypatch.setattr(harness, "SOLUTIONS", False)


def run_check(name: str, fn) -> CheckResult:
    return getattr(checks, f"check_{name}")(fn)


# --------------------------------------------------------------------------- correct answers
# Written as a student would, without attnlab, to show the checks accept any right answer.
def dot_ok(s, h):
    return torch.einsum("bmd,bnd->bmn", s, h)


def general_ok(s, h, W_a):
    return torch.einsum("bmd,de,bne->bmn", s, W_a, h)


def additive_ok(s, h, W, U, v):
    Ws = s @ W.T  # (B, m, d_a)
    Uh = h @ U.T  # (B, n, d_a)
    return torch.tanh(Ws[:, :, None, :] + Uh[:, None, :, :]) @ v


def softmax_ok(scores, mask=None):
    if mask is not None:
        scores = scores.masked_fill(~mask, NEG_INF)
    return torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)


def decode_ok(s_prev, h, y_prev, score, cell):
    alpha = softmax_ok(score(s_prev.unsqueeze(1), h)).squeeze(1)  # (B, n)
    c_t = (alpha.unsqueeze(-1) * h).sum(dim=1)  # (B, d_h)
    s_t = cell(torch.cat([y_prev, c_t], dim=-1), s_prev)
    return s_t, c_t, alpha


def sdpa_ok(Q, K, V, mask=None):
    weights = softmax_ok(Q @ K.transpose(-2, -1) / math.sqrt(K.shape[-1]), mask)
    return weights @ V, weights


def split_heads(x, h):
    B, T, d = x.shape
    return x.view(B, T, h, d // h).transpose(1, 2)  # (B, h, T, d_k)


def mha_ok(query, key, value, W_q, W_k, W_v, W_o, num_heads, mask=None):
    Q, K, V = (split_heads(W(x), num_heads) for W, x in ((W_q, query), (W_k, key), (W_v, value)))
    if mask is not None and mask.dim() == 3:
        mask = mask.unsqueeze(1)  # (B, 1, 1, n): the same for every head
    heads, weights = sdpa_ok(Q, K, V, mask)  # (B, h, m, d_k)
    B, h, m, d_k = heads.shape
    return W_o(heads.transpose(1, 2).reshape(B, m, h * d_k)), weights


def pe_ok(n, d):
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    freq = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # 1 / 10000^(2i/d)
    pe = torch.zeros(n, d)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq)
    return pe


def block_ok(x, self_attn, ln_1, ln_2, W_1, W_2):
    x = x + self_attn(ln_1(x))  # pre-LN: x + Sublayer(LayerNorm(x))
    return x + W_2(torch.relu(W_1(ln_2(x))))  # FFN(z) = W_2 ReLU(W_1 z)


CORRECT = {
    "dot_score": dot_ok,
    "general_score": general_ok,
    "additive_score": additive_ok,
    "masked_softmax": softmax_ok,
    "decode_step": decode_ok,
    "scaled_dot_product_attention": sdpa_ok,
    "multi_head_attention": mha_ok,
    "positional_encoding": pe_ok,
    "encoder_block": block_ok,
}


@pytest.mark.parametrize("name", EXERCISES)
def test_the_reference_passes_and_is_the_equation(name):
    """The check compares with the library's own function, so passing it alone proves only the
    harness; on the very inputs the check gave it, the reference must also agree with the
    answer written above without attnlab: a wrong equation in the library fails here."""
    reference, given = checks.reference(name), []

    def recorded(*args, **kwargs):
        given.append(([_kept(a) for a in args], {k: _kept(v) for k, v in kwargs.items()}))
        return reference(*args, **kwargs)

    result = run_check(name, recorded)
    assert result.ok and result.category == "ok", result.message
    assert result.message.startswith(f"✓ {name}: correct. ") and str(result) == result.message
    assert given, "the check never called the function"
    with torch.no_grad():
        for args, kwargs in given:
            ours, independent = reference(*args, **kwargs), CORRECT[name](*args, **kwargs)
            torch.testing.assert_close(ours, independent, atol=1e-5, rtol=1e-4)


def _kept(x):
    """A copy of what the check passed, as it was when passed."""
    return x.clone() if isinstance(x, torch.Tensor) else x


@pytest.mark.parametrize("name", EXERCISES)
def test_a_students_correct_answer_passes(name):
    result = run_check(name, CORRECT[name])
    assert result.ok, result.message


@pytest.mark.parametrize("name", EXERCISES)
def test_correct_answer_that_scribbles_on_its_inputs_still_passes(name):
    def scribbler(*args):
        out = CORRECT[name](*args)
        for a in args:
            if isinstance(a, torch.Tensor) and a.dtype.is_floating_point:
                a.fill_(123.0)  # the check must compare against untouched inputs
        return out

    assert run_check(name, scribbler).ok


# --------------------------------------------------------------------------- wrong answers
def block_post_ln(x, self_attn, ln_1, ln_2, W_1, W_2):
    x = ln_1(x + self_attn(x))  # LayerNorm(x + Sublayer(x)): the 2017 paper's order
    return ln_2(x + W_2(torch.relu(W_1(x))))


def block_no_residual(x, self_attn, ln_1, ln_2, W_1, W_2):
    x = self_attn(ln_1(x))
    return W_2(torch.relu(W_1(ln_2(x))))


def block_no_ffn_residual(x, self_attn, ln_1, ln_2, W_1, W_2):
    x = x + self_attn(ln_1(x))
    return W_2(torch.relu(W_1(ln_2(x))))


def block_relu_after_W_2(x, self_attn, ln_1, ln_2, W_1, W_2):
    x = x + self_attn(ln_1(x))
    return x + torch.relu(W_2(W_1(ln_2(x))))


def block_relu_on_sum(x, self_attn, ln_1, ln_2, W_1, W_2):
    x = x + self_attn(ln_1(x))
    return torch.relu(x + W_2(W_1(ln_2(x))))


def block_one_layer_norm(x, self_attn, ln_1, ln_2, W_1, W_2):
    return block_ok(x, self_attn, ln_1, ln_1, W_1, W_2)


def raises_not_implemented(*args):
    # YOUR CODE HERE
    raise NotImplementedError


def raises_value_error(*args):
    raise ValueError("shapes (3, 4) and (5, 4) do not fit")


def naive_exp_softmax(scores, mask=None):
    e = torch.exp(scores)  # no max subtraction: exp(300) = inf
    if mask is not None:
        e = e * mask
    return e / e.sum(dim=-1, keepdim=True).clamp_min(1e-30)


def decode_unnormalised(s_prev, h, y_prev, score, cell):
    alpha = torch.exp(score(s_prev.unsqueeze(1), h)).squeeze(1)  # forgot to divide by the sum
    c_t = torch.einsum("bn,bnd->bd", alpha, h)
    return cell(torch.cat([y_prev, c_t], -1), s_prev), c_t, alpha


def decode_uniform(s_prev, h, y_prev, score, cell):
    alpha = torch.full(h.shape[:2], 1.0 / h.shape[1])  # ignores the score
    c_t = h.mean(dim=1)
    return cell(torch.cat([y_prev, c_t], -1), s_prev), c_t, alpha


def decode_swapped_concat(s_prev, h, y_prev, score, cell):
    _, c_t, alpha = decode_ok(s_prev, h, y_prev, score, cell)
    return cell(torch.cat([c_t, y_prev], dim=-1), s_prev), c_t, alpha


def decode_no_hidden(s_prev, h, y_prev, score, cell):
    _, c_t, alpha = decode_ok(s_prev, h, y_prev, score, cell)
    return cell(torch.cat([y_prev, c_t], dim=-1)), c_t, alpha  # starts from zeros


def decode_wrong_context(s_prev, h, y_prev, score, cell):
    s_t, c_t, alpha = decode_ok(s_prev, h, y_prev, score, cell)
    return s_t, h[:, -1], alpha  # c_t = the last encoder state


def sdpa_unscaled(Q, K, V, mask=None):
    weights = softmax_ok(Q @ K.transpose(-2, -1), mask)  # forgot / sqrt(d_k)
    return weights @ V, weights


def sdpa_over_d_k(Q, K, V, mask=None):
    weights = softmax_ok(Q @ K.transpose(-2, -1) / K.shape[-1], mask)
    return weights @ V, weights


def sdpa_no_mask(Q, K, V, mask=None):
    return sdpa_ok(Q, K, V, None)


def sdpa_columns(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(K.shape[-1])
    weights = torch.softmax(scores, dim=-2)  # over the queries
    return weights @ V, weights


def sdpa_wrong_output(Q, K, V, mask=None):
    output, weights = sdpa_ok(Q, K, V, mask)
    return output + 0.05, weights


def mha_split_wrong(query, key, value, W_q, W_k, W_v, W_o, num_heads, mask=None):
    def split(x):  # (B, T, d) straight to (B, h, T, d_k): mixes positions into heads
        B, T, d = x.shape
        return x.reshape(B, num_heads, T, d // num_heads)

    Q, K, V = split(W_q(query)), split(W_k(key)), split(W_v(value))
    mask = mask.unsqueeze(1) if mask is not None and mask.dim() == 3 else mask
    heads, weights = sdpa_ok(Q, K, V, mask)
    B, h, m, d_k = heads.shape
    return W_o(heads.transpose(1, 2).reshape(B, m, h * d_k)), weights


def mha_concat_wrong(query, key, value, W_q, W_k, W_v, W_o, num_heads, mask=None):
    _, weights = mha_ok(query, key, value, W_q, W_k, W_v, W_o, num_heads, mask)
    V = split_heads(W_v(value), num_heads)
    heads = weights @ V  # (B, h, m, d_k)
    return W_o(heads.reshape(query.shape)), weights  # no transpose back before the reshape


def mha_no_output_projection(query, key, value, W_q, W_k, W_v, W_o, num_heads, mask=None):
    return mha_ok(query, key, value, W_q, W_k, W_v, torch.nn.Identity(), num_heads, mask)


def mha_scaled_by_d_model(query, key, value, W_q, W_k, W_v, W_o, num_heads, mask=None):
    Q, K, V = (split_heads(W(x), num_heads) for W, x in ((W_q, query), (W_k, key), (W_v, value)))
    mask = mask.unsqueeze(1) if mask is not None and mask.dim() == 3 else mask
    weights = softmax_ok(Q @ K.transpose(-2, -1) / math.sqrt(query.shape[-1]), mask)
    heads = weights @ V
    B, h, m, d_k = heads.shape
    return W_o(heads.transpose(1, 2).reshape(B, m, h * d_k)), weights


def mha_mask_not_broadcast(query, key, value, W_q, W_k, W_v, W_o, num_heads, mask=None):
    Q, K, V = (split_heads(W(x), num_heads) for W, x in ((W_q, query), (W_k, key), (W_v, value)))
    heads, weights = sdpa_ok(Q, K, V, mask)  # a (B, 1, n) mask meets (B, h, m, n) scores
    B, h, m, d_k = heads.shape
    return W_o(heads.transpose(1, 2).reshape(B, m, h * d_k)), weights


def pe_swapped(n, d):
    pe = pe_ok(n, d)
    return torch.stack([pe[:, 1::2], pe[:, 0::2]], dim=-1).flatten(-2)  # cos first


def pe_halves(n, d):
    pe = pe_ok(n, d)
    return torch.cat([pe[:, 0::2], pe[:, 1::2]], dim=-1)


def pe_column_frequency(n, d):
    pos = torch.arange(n, dtype=torch.float32)[:, None]
    angle = pos / 10000.0 ** (torch.arange(d) / d)  # column j's own frequency j/d
    pe = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, 1::2])
    return pe


# (exercise, wrong answer, category, words the message must contain)
WRONG = [
    ("multi_head_attention", raises_not_implemented, "not_implemented", "NotImplementedError"),
    ("multi_head_attention", mha_split_wrong, "mismatch", "mixes positions into the heads"),
    ("multi_head_attention", mha_concat_wrong, "mismatch", "undo the split in reverse order"),
    ("multi_head_attention", mha_no_output_projection, "mismatch", "W_o(concat)"),
    ("multi_head_attention", mha_scaled_by_d_model, "mismatch", "not by sqrt(d_model)"),
    ("multi_head_attention", mha_mask_not_broadcast, "exception", "`mask.unsqueeze(1)`"),
    (
        "multi_head_attention",
        lambda *a: mha_ok(*a)[::-1],
        "wrong_shape",
        "weights has the wrong shape",
    ),
    ("positional_encoding", raises_not_implemented, "not_implemented", "NotImplementedError"),
    ("positional_encoding", pe_swapped, "mismatch", "swapped"),
    ("positional_encoding", pe_halves, "mismatch", "Interleave"),
    ("positional_encoding", pe_column_frequency, "mismatch", "share one frequency"),
    ("positional_encoding", lambda n, d: pe_ok(n + 1, d)[1:], "mismatch", "start at 0"),
    ("positional_encoding", lambda n, d: pe_ok(n, d).T, "wrong_shape", "(n, d)"),
    ("positional_encoding", lambda n, d: pe_ok(n, d).numpy(), "wrong_type", "ndarray"),
    ("dot_score", raises_not_implemented, "not_implemented", "raise NotImplementedError"),
    ("dot_score", raises_value_error, "exception", "ValueError: shapes (3, 4) and (5, 4)"),
    (
        "dot_score",
        lambda s, h: h @ s.transpose(-2, -1),
        "wrong_shape",
        "expected (2, 3, 5), got (2, 5, 3)",
    ),
    ("dot_score", lambda s, h: dot_ok(s, h) * float("nan"), "nan", "NaN"),
    ("dot_score", lambda s, h: dot_ok(s, h).numpy(), "wrong_type", "ndarray"),
    ("dot_score", lambda s, h: dot_ok(s, h) / math.sqrt(s.shape[-1]), "mismatch", "sqrt(d)"),
    ("dot_score", lambda s, h: dot_ok(s, h) + 0.01, "mismatch", "= 0.01 "),
    ("general_score", raises_not_implemented, "not_implemented", "# YOUR CODE HERE"),
    ("general_score", lambda s, h, W: s @ W.T @ h.transpose(-2, -1), "exception", "RuntimeError"),
    ("general_score", lambda s, h, W: 2 * general_ok(s, h, W), "mismatch", "max abs difference"),
    ("general_score", lambda s, h, W: general_ok(s, h, W)[0], "wrong_shape", "(2, 3, 5)"),
    ("additive_score", raises_not_implemented, "not_implemented", "NotImplementedError"),
    (
        "additive_score",
        lambda s, h, W, U, v: (s @ W.T)[:, :, None] + (h @ U.T)[:, None] @ v,
        "exception",
        "RuntimeError",
    ),
    (
        "additive_score",
        lambda s, h, W, U, v: ((s @ W.T)[:, :, None] + (h @ U.T)[:, None]) @ v,
        "mismatch",
        "tanh",
    ),
    (
        "additive_score",
        lambda s, h, W, U, v: additive_ok(s, h, W, U, v).unsqueeze(-1),
        "wrong_shape",
        "got (2, 3, 5, 1)",
    ),
    ("masked_softmax", raises_not_implemented, "not_implemented", "NotImplementedError"),
    ("masked_softmax", lambda x, m=None: torch.softmax(x, -1), "mask", "not exactly 0"),
    ("masked_softmax", lambda x, m=None: softmax_ok(x, m if m is None else ~m), "mask", "lowest"),
    (
        "masked_softmax",
        lambda x, m=None: torch.softmax(x if m is None else x.masked_fill(~m, NEG_INF), -1),
        "nan",
        "all masked",
    ),
    (
        "masked_softmax",
        lambda x, m=None: softmax_ok(x, m).transpose(-2, -1),
        "wrong_shape",
        "got (2, 5, 3)",
    ),
    ("masked_softmax", lambda x, m=None: torch.softmax(x, -2), "not_normalised", "dim=-1"),
    ("masked_softmax", lambda x, m=None: torch.exp(x), "not_normalised", "sum to 1"),
    (
        "masked_softmax",
        lambda x, m=None: torch.softmax(x, -1) * (1 if m is None else m),
        "not_normalised",
        "before the softmax",
    ),
    ("masked_softmax", naive_exp_softmax, "nan", "row maximum"),
    ("masked_softmax", lambda x, m=None: softmax_ok(x, m) + 1e-3, "not_normalised", "1.005"),
    ("masked_softmax", lambda x, m=None: softmax_ok(x, m)[0], "wrong_shape", "got (3, 5)"),
    ("masked_softmax", lambda x, m=None: softmax_ok(x.tanh(), m), "mismatch", "max abs difference"),
    ("decode_step", raises_not_implemented, "not_implemented", "NotImplementedError"),
    ("decode_step", lambda *a: decode_ok(*a)[:2], "wrong_type", "(s_t, c_t, alpha)"),
    ("decode_step", lambda *a: decode_ok(*a)[::-1], "wrong_shape", "alpha has the wrong shape"),
    (
        "decode_step",
        lambda *a: (*decode_ok(*a)[:2], decode_ok(*a)[2].unsqueeze(1)),
        "wrong_shape",
        "squeeze",
    ),
    ("decode_step", decode_unnormalised, "not_normalised", "sum to 1"),
    ("decode_step", decode_uniform, "mismatch", "alpha differ"),
    ("decode_step", decode_wrong_context, "mismatch", "c_t differ"),
    ("decode_step", decode_swapped_concat, "mismatch", "[y_{t-1}; c_t] in that order"),
    ("decode_step", decode_no_hidden, "mismatch", "hidden state"),
    (
        "decode_step",
        lambda *a: (decode_ok(*a)[0] * float("nan"), *decode_ok(*a)[1:]),
        "nan",
        "s_t holds",
    ),
    ("scaled_dot_product_attention", raises_not_implemented, "not_implemented", "YOUR CODE"),
    ("scaled_dot_product_attention", raises_value_error, "exception", "ValueError"),
    ("scaled_dot_product_attention", sdpa_unscaled, "mismatch", "forgot to divide"),
    ("scaled_dot_product_attention", sdpa_over_d_k, "mismatch", "divided by d_k"),
    ("scaled_dot_product_attention", sdpa_no_mask, "mask", "not exactly 0"),
    ("scaled_dot_product_attention", sdpa_columns, "not_normalised", "dim=-1"),
    ("scaled_dot_product_attention", sdpa_wrong_output, "mismatch", "output differ"),
    ("scaled_dot_product_attention", lambda *a: sdpa_ok(*a)[0], "wrong_type", "(output, weights)"),
    ("scaled_dot_product_attention", lambda *a: sdpa_ok(*a)[::-1], "wrong_shape", "in that order"),
    (
        "scaled_dot_product_attention",
        lambda *a: (sdpa_ok(*a)[0], sdpa_ok(*a)[1].transpose(-2, -1)),
        "wrong_shape",
        "weights has the wrong shape: expected (2, 3, 5), got (2, 5, 3)",
    ),
    (
        "scaled_dot_product_attention",
        lambda *a: (sdpa_ok(*a)[0] / 0.0 * 0.0, sdpa_ok(*a)[1]),
        "nan",
        "output holds",
    ),
    ("encoder_block", raises_not_implemented, "not_implemented", "YOUR CODE"),
    ("encoder_block", block_post_ln, "mismatch", "post-LN"),
    ("encoder_block", block_no_residual, "mismatch", "residual connections are left out"),
    ("encoder_block", block_no_ffn_residual, "mismatch", "around the feed-forward network"),
    ("encoder_block", block_relu_after_W_2, "mismatch", "ReLU is in the wrong place"),
    ("encoder_block", block_relu_on_sum, "mismatch", "on the residual sum"),
    ("encoder_block", block_one_layer_norm, "mismatch", "its own LayerNorm"),
    ("encoder_block", lambda x, *a: block_ok(x, *a)[:, :1], "wrong_shape", "shape of x"),
]


@pytest.mark.parametrize(
    "name, fn, category, words", WRONG, ids=[f"{w[0]}-{w[2]}-{i}" for i, w in enumerate(WRONG)]
)
def test_each_mistake_gets_its_category_and_words(name, fn, category, words):
    result = run_check(name, fn)
    assert not result.ok
    assert result.category == category, result.message
    assert words in result.message
    assert result.message.startswith(f"✗ {name}: {CATEGORIES[category]}. ")
    assert words in result.details and result.details in result.message


def test_an_exception_shows_type_message_and_line_but_no_traceback():
    def dot_score(s, h):
        return s @ h  # (B, m, d) @ (B, n, d): wrong inner sizes

    result = checks.check_dot_score(dot_score)
    assert result.category == "exception"
    assert "RuntimeError" in result.message
    assert "return s @ h" in result.message  # the line of the student's code
    assert "Traceback" not in result.message and "File " not in result.message


def test_a_mismatch_reports_the_max_abs_difference_and_the_hidden_example():
    result = checks.check_general_score(lambda s, h, W: general_ok(s, h, W) + 0.25)
    assert result.category == "mismatch"
    assert "max abs difference |yours - reference| = 0.25 " in result.message
    assert "hidden example 1 of 2" in result.message


def test_the_fully_masked_row_must_be_zeros():
    def uniform_when_empty(scores, mask=None):
        alpha = softmax_ok(scores, mask)
        if mask is not None:
            empty = ~mask.expand_as(scores).any(dim=-1, keepdim=True)
            alpha = torch.where(empty, 1.0 / scores.shape[-1], alpha)
        return alpha

    result = checks.check_masked_softmax(uniform_when_empty)
    assert result.category == "mask" and "one row fully masked" in result.message


# --------------------------------------------------------------------------- modes
def all_wrong_answers():
    odd = [
        None,
        42,
        lambda *a: None,
        lambda *a: "scores",
        lambda *a: (1, 2, 3),
        lambda *a: np.zeros((2, 3, 5)),
        lambda *a: torch.zeros(2, 3, 5, dtype=torch.int64),
        lambda *a: torch.zeros(0),
        lambda *a: 1 / 0,
        lambda *a: {}["key"],
        lambda: 0,  # takes no arguments
    ]
    return [(name, fn) for name, fn, *_ in WRONG] + [(name, fn) for name in EXERCISES for fn in odd]


def test_student_mode_never_raises():
    for name, fn in all_wrong_answers():
        result = run_check(name, fn)
        assert isinstance(result, CheckResult) and not result.ok, (name, result)
        assert result.category in CATEGORIES


def test_solutions_mode_raises_on_a_wrong_function(monkeypatch):
    monkeypatch.setattr(harness, "SOLUTIONS", True)
    for name, fn, category, _ in WRONG:
        with pytest.raises(AssertionError, match=CATEGORIES[category]):
            run_check(name, fn)


@pytest.mark.parametrize("name", EXERCISES)
def test_solutions_mode_passes_and_returns_the_result(monkeypatch, name):
    monkeypatch.setattr(harness, "SOLUTIONS", True)
    assert run_check(name, CORRECT[name]).ok


@pytest.mark.parametrize("value, on", [("1", True), ("true", True), ("0", False), ("", False)])
def test_solutions_mode_reads_the_environment_the_checks_were_imported_in(value, on):
    code = (
        "import os; from attnlab import checks; on = checks.solutions_mode(); "
        f"os.environ[{ENV_VAR!r}] = '1'; import attnlab.checks.harness as h; "
        "print(on, checks.solutions_mode(), h.solutions_mode())"
    )
    env = {**os.environ, ENV_VAR: value}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.stdout.split() == [str(on)] * 3, done.stderr[-2000:]


@pytest.mark.parametrize("name", EXERCISES)
def test_exercise_decorator_swaps_in_the_reference_only_in_solutions_mode(monkeypatch, name):
    def mine(*args):
        raise NotImplementedError

    assert checks.exercise(name)(mine) is mine
    monkeypatch.setattr(harness, "SOLUTIONS", True)
    assert checks.exercise(name)(mine) is checks.reference(name)


def test_unknown_exercise_names_the_exercises():
    with pytest.raises(ValueError, match="dot_score"):
        checks.exercise("dot_scor")


def test_checks_leave_the_global_random_state_alone():
    torch.manual_seed(5)
    before = torch.get_rng_state()
    for name in EXERCISES:
        run_check(name, lambda *a: torch.randn(3))  # even a function that draws numbers
        run_check(name, checks.reference(name))
    assert torch.equal(before, torch.get_rng_state())


# --------------------------------------------------------------------------- display
def test_html_shows_a_tick_or_a_cross_and_escapes_the_message():
    ok = checks.check_dot_score(dot_ok)._repr_html_()
    assert "✓ dot_score: correct" in ok

    def evil(s, h):
        raise ValueError("<script>alert(1)</script>")

    bad = checks.check_dot_score(evil)._repr_html_()
    assert "✗ dot_score: raised an exception" in bad
    assert "<script>" not in bad and "&lt;script&gt;" in bad


def test_summary_lists_the_latest_result_of_every_exercise():
    for name in EXERCISES:
        run_check(name, raises_not_implemented)
    checks.check_dot_score(dot_ok)
    summary = checks.summary()
    assert summary.done == 1
    text = str(summary)
    assert text.startswith(f"1 of {len(EXERCISES)} exercises correct")
    assert "✓ dot_score: correct" in text and "✗ decode_step: not implemented yet" in text
    assert "✓ dot_score: correct" in summary._repr_html_()


# --------------------------------------------------------------------------- the notebook
def notebook_cells():
    import nbformat

    return nbformat.read(NOTEBOOK, as_version=4).cells


def test_notebook_has_a_blank_exercise_and_a_check_for_every_exercise():
    cells = notebook_cells()
    code = [c.source for c in cells if c.cell_type == "code"]
    for name in EXERCISES:
        (body,) = [src for src in code if f'@exercise("{name}")' in src]
        assert "# YOUR CODE HERE" in body and "raise NotImplementedError" in body
        assert f"def {name}(" in body
        assert any(f"checks.check_{name}({name})" in src for src in code)
    assert cells[0].cell_type == "markdown" and cells[0].source.startswith("# ")
    assert all("slide_type" in c.metadata.get("slideshow", {}) for c in cells)


def test_notebook_runs_each_function_a_model_uses_inside_it_and_checks_every_answer():
    code = [c.source for c in notebook_cells() if c.cell_type == "code"]
    for name in checks.IN_MODEL:
        assert f'checks.in_model("{name}", {name})' in code
    for question in checks.QUESTIONS:
        (check,) = [src for src in code if src.startswith(f'checks.check_answer("{question}", ')]
        variable = check.split(", ")[1].rstrip(")")
        assert f"{variable} = ...  # " in code[code.index(check) - 1]  # the answer, blank


# Lines of a solution that a hint must not hand over (it may name the tools).
SOLUTION_LINES = (
    "s @ h.transpose(-2, -1)",
    "s @ W_a",
    "torch.tanh(",
    "masked_fill(~mask",
    "torch.cat([y_prev, c_t]",
    "/ math.sqrt(",
    ".transpose(1, 2).reshape",
    "torch.sin(",
)


def test_hints_guide_without_handing_over_a_solution_line():
    hints = [c.source for c in notebook_cells() if c.source.startswith("*Hint")]
    assert len(hints) == len(EXERCISES)
    for hint in hints:
        assert not [line for line in SOLUTION_LINES if line in hint], hint


def test_notebook_is_committed_with_student_mode_outputs():
    cells = notebook_cells()
    outputs = [o for c in cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    checks_shown = [
        o.data["text/html"] for o in outputs if "text/html" in o.get("data", {}) and "✗" in str(o)
    ]
    assert sum("not implemented yet" in html for html in checks_shown) >= len(EXERCISES)


def test_the_student_version_shows_no_answer_before_the_question_is_answered():
    cells = notebook_cells()
    measuring = [c for c in cells if c.source.startswith("if checks.answered(")]
    assert len(measuring) == 3  # padding_zeros, variance_qk, dilated_path
    for cell in measuring:
        text = "".join(o.text for o in cell.outputs if o.output_type == "stream")
        assert text == "Answer the question above first, then run this cell again.\n"
        assert all(o.output_type == "stream" for o in cell.outputs)
    (experiment,) = [c for c in cells if "fit(model" in c.source]
    assert "experiment" in experiment.metadata["tags"] and not experiment.outputs  # theirs to run
    shown = [o for c in cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in shown if "is right" in str(o)]


def test_every_question_has_a_debrief_after_it():
    cells = notebook_cells()
    asks = [i for i, c in enumerate(cells) if c.source.startswith('checks.check_answer("')]
    assert len(asks) == len(checks.QUESTIONS)
    for i in asks:
        following = cells[i + 1 : i + 4]
        assert any(
            c.cell_type == "markdown" and c.source.startswith("**Debrief.**") for c in following
        )


@pytest.mark.parametrize("solutions", [False, True])
def test_notebook_cells_run_in_both_modes(monkeypatch, solutions):
    if solutions:
        monkeypatch.setattr(harness, "SOLUTIONS", True)
    namespace: dict = {"__name__": "__notebook__"}
    for cell in notebook_cells():
        # The experiment trains six models (35-75 s): `make notebooks` runs it in both modes.
        if cell.cell_type == "code" and "experiment" not in cell.metadata.get("tags", []):
            exec(compile(cell.source, "<cell>", "exec"), namespace)  # raises if a cell fails
    summary = checks.summary()
    if solutions:
        assert summary.done == len(EXERCISES)
    else:
        assert summary.done == 0
        assert all(r.category == "not_implemented" for _, r in summary.results)


# --------------------------------------------------------------------------- inside the models
def additive_no_tanh(s, h, W, U, v):
    return ((s @ W.T)[:, :, None, :] + (h @ U.T)[:, None, :, :]) @ v


def additive_tanh_after_v(s, h, W, U, v):
    return torch.tanh(additive_no_tanh(s, h, W, U, v))


def softmax_over_queries(scores, mask=None):
    if mask is not None:
        scores = scores.masked_fill(~mask, NEG_INF)
    return torch.nan_to_num(torch.softmax(scores, dim=-2))


def softmax_nan_when_all_masked(scores, mask=None):
    return torch.softmax(scores if mask is None else scores.masked_fill(~mask, NEG_INF), -1)


# (exercise, wrong answer, category, words the message must contain)
IN_MODEL_WRONG = [
    ("dot_score", lambda s, h: dot_ok(s, h) / math.sqrt(s.shape[-1]), "translation", "sqrt(d)"),
    ("dot_score", lambda s, h: torch.softmax(dot_ok(s, h), -1), "translation", "comes later"),
    (
        "general_score",
        lambda s, h, W: torch.softmax(general_ok(s, h, W), -1),
        "translation",
        "comes later",
    ),
    ("general_score", lambda s, h, W: general_ok(s, h, W) / 4, "alpha", "max abs"),
    ("general_score", lambda s, h, W: dot_ok(s @ W, h).mT, "wrong_shape", "h.transpose(-2, -1)"),
    ("additive_score", additive_no_tanh, "translation", "You left out the tanh"),
    ("additive_score", additive_tanh_after_v, "translation", "tanh after v"),
    ("masked_softmax", softmax_over_queries, "translation", "`dim=-1`"),
    ("masked_softmax", lambda x, m=None: torch.softmax(x, -1), "translation", "not exactly 0"),
    ("masked_softmax", softmax_nan_when_all_masked, "nan", "no query in these models"),
    ("masked_softmax", naive_exp_softmax, "nan", "row maximum"),
    ("decode_step", decode_swapped_concat, "translation", "[y_{t-1}; c_t] in that order"),
    ("decode_step", decode_no_hidden, "translation", "hidden state"),
    ("decode_step", decode_uniform, "translation", "alpha differ"),
    ("scaled_dot_product_attention", sdpa_unscaled, "translation", "forgot to divide"),
    ("scaled_dot_product_attention", sdpa_columns, "translation", "`dim=-1`"),
    ("scaled_dot_product_attention", sdpa_no_mask, "translation", "not exactly 0"),
    ("encoder_block", block_post_ln, "translation", "post-LN"),
    ("encoder_block", block_no_residual, "translation", "residual connections are left out"),
    ("encoder_block", block_relu_after_W_2, "translation", "ReLU is in the wrong place"),
]


@pytest.mark.parametrize("name", checks.IN_MODEL)
def test_in_model_the_reference_translates_as_the_library(name):
    result = checks.in_model(name, checks.reference(name))
    assert result.ok, result.message
    for model in checks.IN_MODEL[name]:
        n = checks.IN_MODEL_DATES
        assert f"In `{model}` on {n} held-out dates" in result.message
        assert f"{n} of {n} translations identical" in result.message
    assert "First date that differs" not in result.message


@pytest.mark.parametrize(
    "name", ["additive_score", "decode_step", "scaled_dot_product_attention", "encoder_block"]
)
def test_in_model_a_students_correct_answer_gives_the_models_accuracy(name):
    result = checks.in_model(name, CORRECT[name])
    assert result.ok, result.message
    yours, library = re.search(
        r"exact match (\S+)% with your function, (\S+)% with", result.message
    ).groups()
    assert yours == library and float(library) > 95  # the model's own accuracy


@pytest.mark.parametrize(
    "name, fn, category, words",
    IN_MODEL_WRONG,
    ids=[f"{w[0]}-{w[2]}-{i}" for i, w in enumerate(IN_MODEL_WRONG)],
)
def test_in_model_each_mistake_is_named(name, fn, category, words):
    result = checks.in_model(name, fn)
    assert not result.ok
    assert result.category == category, result.message
    assert words in result.message, result.message
    if category == "translation":  # a broken translation shows both outputs of one date
        first = re.search(
            r"First date that differs: '([^']*)' -> yours '([^']*)', the library's '([^']*)'",
            result.message,
        )
        assert first and first.group(2) != first.group(3), result.message


def test_in_model_masked_softmax_runs_in_both_models_or_the_one_named():
    both = checks.in_model("masked_softmax", softmax_ok)
    assert "`rnnsearch-dates`" in both.message and "`transformer-dates`" in both.message
    one = checks.in_model("masked_softmax", softmax_ok, model="transformer-dates")
    assert one.ok and "`rnnsearch-dates`" not in one.message
    with pytest.raises(ValueError, match="rnnsearch-dates, transformer-dates"):
        checks.in_model("masked_softmax", softmax_ok, model="rnnenc-dates")
    with pytest.raises(ValueError, match="in_model runs"):
        checks.in_model("positional_encoding", pe_ok)


def breaks_inside_a_model(name):
    """The reference on the small hidden examples; raises on a model's batch of dates."""

    def fn(*args, **kwargs):
        if args[0].shape[0] == checks.IN_MODEL_DATES:
            raise ZeroDivisionError("boom")
        return checks.reference(name)(*args, **kwargs)

    return fn


def test_in_model_puts_the_library_back_even_after_an_error():
    from attnlab import attention

    softmax, sdpa = attention.masked_softmax, attention.scaled_dot_product_attention
    model = reference_model("rnnsearch-dates").model
    score, step = model.score, model.step

    def breaks_on_the_third_call(*args, calls=[]):  # noqa: B006 - counts calls
        calls.append(1)
        if len(calls) == 3:
            raise ZeroDivisionError("boom")
        return checks.reference("decode_step")(*args)

    result = checks.in_model("decode_step", breaks_on_the_third_call)
    assert result.category == "exception" and "ZeroDivisionError: boom" in result.message
    assert "inside `rnnsearch-dates`" in result.message.lower()
    for name in ("additive_score", "masked_softmax", "scaled_dot_product_attention"):
        result = checks.in_model(name, breaks_inside_a_model(name))  # swapped in, then raises
        assert result.category == "exception" and "ZeroDivisionError: boom" in result.message
        assert "inside `" in result.message.lower(), result.message
    assert attention.masked_softmax is softmax and attention.scaled_dot_product_attention is sdpa
    assert model.score is score and model.step == step
    assert "decode_step" not in vars(model)  # the class's own step again, nothing left over


def test_in_model_refuses_to_pass_a_function_the_model_never_called(monkeypatch):
    from contextlib import nullcontext

    never = nullcontext(inside_models._Student(dot_ok, "rnnsearch-dates"))
    monkeypatch.setattr(inside_models, "_swapped", lambda *a: never)
    result = checks.in_model("additive_score", additive_ok)
    assert not result.ok and "never called your function" in result.message


def test_in_model_stops_at_a_function_that_cannot_run():
    result = checks.in_model("additive_score", raises_not_implemented)
    assert result.category == "not_implemented"
    result = checks.in_model("scaled_dot_product_attention", 42)
    assert result.category == "wrong_type" and "in_model(" in result.message


def test_in_model_raises_in_solutions_mode(monkeypatch):
    monkeypatch.setattr(harness, "SOLUTIONS", True)
    with pytest.raises(AssertionError, match="translations change"):
        checks.in_model("scaled_dot_product_attention", sdpa_unscaled)
    assert checks.in_model("scaled_dot_product_attention", sdpa_ok).ok


# --------------------------------------------------------------------------- one way to swap
def test_the_checks_and_the_decode_stepper_swap_through_one_mechanism(monkeypatch):
    from types import SimpleNamespace

    from attnlab.guard import parts
    from attnlab.models.rnn import RNNSearch
    from attnlab.widgets import DecodeStepper, decode_stepper

    assert "__setattr__" not in vars(RNNSearch)  # no override: a Part stands in for a module
    used = []

    def counting(model, part, make):
        used.append(part)
        return parts.swap(model, part, make)

    spy = SimpleNamespace(swap=counting)  # both modules' `parts`, seen through a spy
    monkeypatch.setattr(inside_models, "parts", spy)
    monkeypatch.setattr(decode_stepper, "parts", spy)
    for name in checks.IN_MODEL:
        assert checks.in_model(name, checks.reference(name)).ok
    widget = DecodeStepper("rnnsearch-dates-dot", score=dot_ok)
    assert widget.translation == "1979-05-03"
    assert used[-1] == "score" and set(used) == set(parts.PARTS)
    model = reference_model("rnnsearch-dates").model
    assert "decode_step" not in vars(model) and type(model.score).__name__ == "AdditiveScore"
    for name in ("_ref_decode_step", "_student_step", "_StudentScore"):
        assert not any(hasattr(module, name) for module in (checks, inside_models))


def test_a_swap_puts_the_library_back_whatever_happens():
    from attnlab import attention
    from attnlab.guard import parts

    model = reference_model("rnnsearch-dates").model
    score, softmax = model.score, attention.masked_softmax
    with pytest.raises(ZeroDivisionError):
        with parts.swap(model, "score", lambda trained: dot_ok):
            assert isinstance(model.score, parts.Part)
            with parts.swap(model, "masked_softmax", lambda lib: softmax_ok):
                assert attention.masked_softmax is softmax_ok
                raise ZeroDivisionError
    assert model.score is score and attention.masked_softmax is softmax
    with pytest.raises(ValueError, match="no decode_step"):
        with parts.swap(reference_model("transformer-dates").model, "decode_step", None):
            pass


# --------------------------------------------------------------------------- questions
def test_questions_accept_the_computed_answer_and_name_typical_wrong_ones():
    from attnlab.experiments.path_lengths import longest_path

    assert checks.check_answer("variance_qk", 64).ok
    assert checks.check_answer("variance_qk", 63.4).ok  # a measured variance is fine
    assert "standard deviation" in checks.check_answer("variance_qk", 8).message
    assert checks.check_answer("dilated_path", longest_path("dilated_cnn", 27, 3)).ok
    wrong = checks.check_answer("dilated_path", longest_path("cnn", 27, 3))
    assert wrong.category == "wrong_answer" and "plain convolutions" in wrong.message
    assert checks.check_answer("variance_qk", ...).category == "not_answered"
    assert checks.check_answer("dilated_path", "3").category == "answer_type"


def test_the_padding_question_is_answered_by_the_models_alpha_in_a_padded_batch():
    tokens, alpha = checks.questions.padded_alpha()  # (T, PAD_TO)
    real = len(reference_model("rnnsearch-dates").model.source_tokens(checks.PAD_DATE))
    assert alpha.shape[1] == checks.PAD_TO == len(tokens) and tokens[real:] == ["<pad>"] * (
        checks.PAD_TO - real
    )
    assert (alpha[:, real:] == 0).all() and (alpha[:, :real] > 0).all()  # padding: exactly 0
    right = checks.PAD_TO - real
    assert checks.QUESTIONS["padding_zeros"].right() == right == 17
    assert checks.check_answer("padding_zeros", right).ok
    for wrong, words in ((real, "real tokens"), (right + 1, "<eos>"), (0, "padding mask")):
        result = checks.check_answer("padding_zeros", wrong)
        assert result.category == "wrong_answer" and words in result.message, result.message


def runs(*accuracies: list[float]) -> list[dict]:
    """One history a seed, as the experiment cell gathers them."""
    return [{"step": [20 * (i + 1) for i in range(len(a))], "accuracy": a} for a in accuracies]


def test_the_experiment_question_follows_the_students_measurement():
    fast, slow = runs([0.0, 0.5, 0.9], [0.0, 0.4, 0.9]), runs([0.0, 0.1, 0.8], [0.0, 0.2, 0.7])
    assert checks.check_answer("faster_score", "dot", dot=fast, additive=slow).ok
    assert not checks.check_answer("faster_score", "dot", dot=slow, additive=fast).ok
    assert checks.check_answer("faster_score", "additive", dot=slow, additive=fast).ok
    tie = runs([0.0, 0.49, 0.91], [0.0, 0.45, 0.9])  # means 0.45 and 0.46: within 0.03
    assert checks.check_answer("faster_score", "additive", dot=fast, additive=tie).ok
    assert checks.check_answer("faster_score", "dot", dot=fast, additive=tie).ok
    apart = runs([0.0, 0.45, 0.85], [0.0, 0.35, 0.85])  # means 0.45 and 0.4167: 0.033 apart
    assert not checks.check_answer("faster_score", "additive", dot=fast, additive=apart).ok
    missing = checks.check_answer("faster_score", "dot")
    assert missing.category == "answer_type" and "additive=..." in missing.message


def test_the_experiment_question_is_judged_over_every_seed_and_checkpoint():
    """Seed 0 alone favours dot, and dot leads at the last checkpoint of every seed; the mean
    over the seeds and checkpoints favours additive: only "additive" is right."""
    dot = runs([0.0, 0.6, 0.9, 0.95], [0.0, 0.1, 0.5, 0.95], [0.0, 0.1, 0.5, 0.95])
    additive = runs([0.0, 0.5, 0.8, 0.9], [0.0, 0.5, 0.8, 0.9], [0.0, 0.5, 0.8, 0.9])
    assert checks.check_answer("faster_score", "dot", dot=dot[:1], additive=additive[:1]).ok
    assert all(d["accuracy"][-1] > a["accuracy"][-1] for d, a in zip(dot, additive, strict=True))
    wrong = checks.check_answer("faster_score", "dot", dot=dot, additive=additive)
    assert wrong.category == "wrong_answer" and "every seed" in wrong.message
    assert checks.check_answer("faster_score", "additive", dot=dot, additive=additive).ok


@pytest.mark.parametrize(
    ("answer", "dot", "additive", "words"),
    [
        ("Dot", runs([0.5]), runs([0.1]), "got 'Dot'"),
        ("both", runs([0.5]), runs([0.1]), "got 'both'"),
        (1, runs([0.5]), runs([0.1]), "got int"),
        ("dot", runs([0.5])[0], runs([0.1]), "one history"),  # one seed's history, not the list
        ("dot", [], runs([0.1]), "an empty list"),
        ("dot", {"accuracy": 0.5}, runs([0.1]), "one history"),
        ("dot", runs([0.5]), [0.1], "`additive[0]` has no `accuracy` list"),
        ("dot", runs([0.5, float("nan")]), runs([0.1, 0.2]), "holds nan"),
        ("dot", runs([0.5, 7]), runs([0.1, 0.2]), "holds 7"),
        (
            "dot",
            runs([0.5], [0.6]),
            runs([0.1]),
            "dot has 2 seeds of 1 checkpoint, additive 1 seed of",
        ),
        ("dot", runs([0.5, 0.6], [0.6]), runs([0.1], [0.2]), "dot has 2 seeds of 1/2 checkpoints"),
    ],
)
def test_the_experiment_question_says_what_is_wrong_with_its_input(answer, dot, additive, words):
    result = checks.check_answer("faster_score", answer, dot=dot, additive=additive)
    assert result.category == "answer_type" and words in result.message, result.message
    assert "\n" not in result.message


def test_the_graded_experiment_question_takes_every_seed():
    dot = runs([0.0, 0.6, 0.9], [0.0, 0.1, 0.5], [0.0, 0.1, 0.5])
    additive = runs([0.0, 0.5, 0.8], [0.0, 0.5, 0.8], [0.0, 0.5, 0.8])
    assert checks.graded("check_answer_faster_score", "additive", dot=dot, additive=additive).ok
    wrong = checks.graded("check_answer_faster_score", "dot", dot=dot, additive=additive)
    assert wrong.category == "wrong_answer"


def test_the_worker_sends_back_one_history_a_seed():
    from attnlab.checks.isolated import measured_experiment

    code = (
        "histories = {'dot': [], 'additive': []}\n"
        "for seed in (0, 1, 2):\n"
        "    for score in histories:\n"
        "        histories[score].append({'step': [20, 40], 'accuracy': [0.1 * seed, 0.5],\n"
        "                                 'config': {'seed': seed}, 'reached': None})\n"
    )
    measured = measured_experiment(("import torch",), code)
    assert [run["accuracy"] for run in measured["dot"]] == [[0.0, 0.5], [0.1, 0.5], [0.2, 0.5]]
    assert measured["additive"][2] == {
        "step": [20.0, 40.0],
        "accuracy": [0.2, 0.5],
        "config": {"seed": 2.0},
        "reached": None,
    }
    assert checks.check_answer("faster_score", "dot", **measured).ok  # a tie: either counts


def test_questions_in_solutions_mode_check_the_computed_answer(monkeypatch):
    monkeypatch.setattr(harness, "SOLUTIONS", True)
    for name in ("variance_qk", "dilated_path", "padding_zeros"):
        assert checks.check_answer(name, ...).ok
    fast, slow = runs([0.0, 0.5, 0.9], [0.0, 0.6, 0.9]), runs([0.0, 0.1, 0.8], [0.0, 0.2, 0.8])
    assert checks.check_answer("faster_score", ..., dot=fast, additive=slow).ok
    assert checks.check_answer("faster_score", ..., dot=slow, additive=fast).ok
    with pytest.raises(AssertionError, match="one history"):  # a wrong shape fails in CI too
        checks.check_answer("faster_score", ..., dot=fast[0], additive=slow)


# --------------------------------------------------------------------------- the one swap
def test_library_in_place_puts_the_library_back_for_the_block_only(monkeypatch):
    from attnlab import attention
    from attnlab.guard.library import library_in_place

    def mine(scores, mask=None):
        return scores

    monkeypatch.setattr(attention, "masked_softmax", mine)
    monkeypatch.setattr(attention.MultiHeadAttention, "added", 1, raising=False)
    with library_in_place() as replaced:
        assert attention.masked_softmax is not mine
        assert attention.masked_softmax.__code__.co_filename == attention.__file__
        assert not hasattr(attention.MultiHeadAttention, "added")  # added by the user: hidden
        assert {"`attention.masked_softmax`", "`attention.MultiHeadAttention.added`"} <= set(
            replaced
        )
    assert attention.masked_softmax is mine and attention.MultiHeadAttention.added == 1


def test_swapped_can_hide_an_attribute_and_puts_back_exactly_what_was_there():
    from types import SimpleNamespace

    from attnlab.guard import parts

    owner = SimpleNamespace(kept=1)
    with parts.swapped(owner, "kept", parts.ABSENT):
        assert not hasattr(owner, "kept")
    assert owner.kept == 1
    with parts.swapped(owner, "new", len):  # not there before: not there after
        assert owner.new is len
    assert not hasattr(owner, "new")


def test_the_library_swaps_a_function_in_one_way():
    """No unittest.mock and no second stand-in module: only guard/parts.py wraps a function
    as an nn.Module outside the models and the attention core."""
    import ast

    import attnlab

    root = Path(attnlab.__file__).parent
    stand_ins, mocks = [], []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        if "unittest" in text and "mock" in text:
            mocks.append(path.relative_to(root).as_posix())
        if path.parts[-2] == "models" or path.name == "attention.py":
            continue  # the models and the equations are modules by design
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and any(
                ast.unparse(base) in ("nn.Module", "torch.nn.Module") for base in node.bases
            ):
                stand_ins.append(f"{path.relative_to(root).as_posix()}:{node.name}")
    assert mocks == []
    assert stand_ins == ["guard/parts.py:Part"]
