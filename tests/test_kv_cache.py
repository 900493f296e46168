"""The Transformer's KV cache: decoding with it gives the tokens and the weights of decoding
without it (the decoder re-run on the whole prefix), for every shipped Transformer; and a
cache gone wrong is seen."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from unittest import mock

import pytest
import torch

import attnlab
from attnlab import attention
from attnlab.attention import KVCache, MultiHeadAttention, causal_mask, padding_mask
from attnlab.decode import beam_search, decode, decode_batch, source_batch
from attnlab.guard import parts
from attnlab.models import catalogue
from attnlab.text.padding import teacher_forced_input

NAMES = catalogue.names(kind="transformer")  # transformer-dates and the real-language ones
TEXTS = {
    "dates": ["3 May 1979", "Thursday, 03 May 1979", "1979/05/03", "december 31, 2099", "1.1.1900"],
    "en-fr": [
        "Default cell type",
        "please open the file and close all the other tabs",
        "Close all tabs",
        "save the notebook before you restart the kernel",
        "the kernel is busy",
    ],
}
TEXTS["en-de"] = TEXTS["en-fr"]
ALPHA_TOL = 1e-5  # float32: the cached step multiplies one row where the re-run multiplies t
LOGITS_TOL = 1e-4


@pytest.fixture(scope="module")
def models():
    return {name: attnlab.load(name).eval() for name in NAMES}


def texts_of(name: str) -> list[str]:
    return TEXTS[catalogue.entry(name).task]


@contextmanager
def cache(model, on: bool):
    """Decode with (``on``) or without the KV cache inside the block."""
    before = model.kv_cache
    model.kv_cache = on
    try:
        yield model
    finally:
        model.kv_cache = before


@dataclass
class Trace:
    """What model.step gave at every step of one batch: logits (B, T, V), the cross-attention
    (B, L, h, T, n) and each step's masked self-attention row (one (B, L, h, t) per step)."""

    logits: torch.Tensor
    cross: torch.Tensor
    self_rows: list[torch.Tensor]


def trace(
    model, texts: list[str], outputs: list[list[int]], corrupt: Callable | None = None
) -> Trace:
    """Step the decoder over <sos> + ``outputs`` (the same inputs however it decodes);
    ``corrupt(state) -> state`` is applied to the state between the steps."""
    src, src_len = source_batch(model.src_vocab, texts)
    tgt_in = teacher_forced_input(outputs, model.tgt_vocab)  # (B, T)
    logits, cross, self_rows = [], [], []
    with torch.no_grad():
        state = model.start(src, src_len)
        for t in range(tgt_in.shape[1]):
            out = model.step(state, tgt_in[:, t])
            logits.append(out.logits)  # (B, V)
            cross.append(out.alpha)  # (B, L, h, n)
            rows = [lay.self_attn.alpha[:, :, -1] for lay in model.decoder_layers]  # (B, h, t)
            self_rows.append(torch.stack(rows, 1))  # (B, L, h, t)
            state = out.state if corrupt is None else corrupt(out.state)
    return Trace(torch.stack(logits, 1), torch.stack(cross, 3), self_rows)


def largest_differences(a: Trace, b: Trace) -> tuple[float, float, float]:
    """max |a - b| of the logits, the cross-attention and the self-attention rows."""
    self_diff = max(
        float((x - y).abs().max()) for x, y in zip(a.self_rows, b.self_rows, strict=True)
    )
    return (
        float((a.logits - b.logits).abs().max()),
        float((a.cross - b.cross).abs().max()),
        self_diff,
    )


def cached_and_rereading(model, texts, corrupt=None) -> tuple[Trace, Trace]:
    with cache(model, False):
        outputs = decode_batch(model, texts, read=False).outputs
        rereading = trace(model, texts, outputs)
    with cache(model, True):
        cached = trace(model, texts, outputs, corrupt)
    return cached, rereading


# --------------------------------------------------------------------------- the same outputs
@pytest.mark.parametrize("name", NAMES)
def test_every_step_gives_the_same_logits_and_weights_with_the_cache(models, name):
    """Step by step over a padded batch: logits, cross-attention (StepOutput.alpha) and the
    masked self-attention's row of the new position agree with the re-run decoder."""
    cached, rereading = cached_and_rereading(models[name], texts_of(name))
    assert cached.cross.shape == rereading.cross.shape
    logits, cross, self_rows = largest_differences(cached, rereading)
    assert logits <= LOGITS_TOL and cross <= ALPHA_TOL and self_rows <= ALPHA_TOL


@pytest.mark.parametrize("name", NAMES)
def test_greedy_batched_and_single_decoding_write_the_same_tokens_with_the_cache(models, name):
    model, texts = models[name], texts_of(name)
    batch, single = {}, {}
    for on in (True, False):
        with cache(model, on):
            batch[on] = decode_batch(model, texts)
            single[on] = [decode(model, text) for text in texts]
    assert batch[True].outputs == batch[False].outputs
    torch.testing.assert_close(batch[True].alpha, batch[False].alpha, atol=ALPHA_TOL, rtol=0)
    for cached, rereading in zip(single[True], single[False], strict=True):
        assert cached.output_tokens == rereading.output_tokens
        assert (abs(cached.alpha - rereading.alpha) <= ALPHA_TOL).all()
    as_one_batch = [batch[True].text(model, b) for b in range(len(texts))]
    assert as_one_batch == [d.text for d in single[True]]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("beam", [2, 5])
def test_beam_search_finds_the_same_outputs_with_the_cache(models, name, beam):
    """The cache is part of the state beam search reorders: each beam keeps its own K, V."""
    model = models[name]
    for text in texts_of(name):
        src, _ = source_batch(model.src_vocab, [model.prepare(text)])
        with cache(model, True):
            cached = beam_search(model, src, beam)
            decoded = decode(model, text, beam)
        with cache(model, False):
            assert cached == beam_search(model, src, beam), text
            again = decode(model, text, beam)
        assert decoded.text == again.text and (abs(decoded.alpha - again.alpha) <= ALPHA_TOL).all()


# --------------------------------------------------------------------------- a wrong cache is seen
def _stale_first_position(state):
    """The cache's first value V_1 replaced by zeros: what a cache that lost a row holds."""
    V = state["self.0.V"].clone()
    V[:, :, 0] = 0.0
    return {**state, "self.0.V": V}


def _rows_swapped(state):
    """The cached K, V of batch row b given to row b + 1: a cache that does not follow its beam."""
    return {
        key: value.roll(1, dims=0) if key.startswith("self.") else value
        for key, value in state.items()
    }


@pytest.mark.parametrize("corrupt", [_stale_first_position, _rows_swapped])
def test_a_corrupted_cache_changes_the_steps(models, corrupt):
    cached, rereading = cached_and_rereading(models["transformer-dates"], TEXTS["dates"], corrupt)
    logits, cross, _ = largest_differences(cached, rereading)
    assert logits > 100 * LOGITS_TOL and cross > 100 * ALPHA_TOL


def test_beam_search_with_a_cache_left_on_the_wrong_beams_finds_other_outputs(models):
    """The beam comparison can fail: beams given another beam's cache write other outputs."""
    model = models["transformer-en-fr"]
    step = model.step

    def step_with_rolled_cache(state, y_prev):
        out = step(state, y_prev)
        out.state = _rows_swapped(out.state)
        return out

    differ = 0
    for text in texts_of("transformer-en-fr"):
        src, _ = source_batch(model.src_vocab, [model.prepare(text)])
        right = beam_search(model, src, 5)
        with mock.patch.object(model, "step", step_with_rolled_cache):
            differ += beam_search(model, src, 5) != right
    assert differ > 0


# --------------------------------------------------------------------------- what the cache holds
def test_the_cache_grows_by_one_position_a_step_and_the_memory_is_projected_once(models):
    model = models["transformer-dates"]
    src, src_len = source_batch(model.src_vocab, TEXTS["dates"])
    B, n = src.shape
    h, d_k = model.config.num_heads, model.config.d_model // model.config.num_heads
    with torch.no_grad(), ExitStack() as stack:
        state = model.start(src, src_len)
        for layer in model.decoder_layers:  # from here on, projecting the memory is an error
            for W in (layer.cross_attn.W_k, layer.cross_attn.W_v):
                stack.enter_context(
                    mock.patch.object(W, "forward", side_effect=AssertionError("memory again"))
                )
        y = torch.full((B,), model.tgt_vocab.sos)
        for t in range(1, 4):
            out = model.step(state, y)
            state, y = out.state, out.logits.argmax(-1)
            for key, value in state.items():  # the batch first: beam search reorders it
                assert value.shape[0] == B, key
            for i in range(model.config.num_layers):
                assert state[f"self.{i}.K"].shape == state[f"self.{i}.V"].shape == (B, h, t, d_k)
                assert state[f"cross.{i}.K"].shape == (B, h, n, d_k)


def test_a_swapped_attention_runs_in_every_cached_step_with_one_query(models):
    """The exercises swap their scaled_dot_product_attention into the model: with the cache a
    free-decoding step calls it with one query row (m = 1) over the t keys read so far."""
    model = models["transformer-dates"]
    library = attention.scaled_dot_product_attention
    calls = []

    def recording(query, key, value, mask=None):
        calls.append((query.shape[-2], key.shape[-2]))
        return library(query, key, value, mask)

    with parts.swap(model, "scaled_dot_product_attention", lambda original: recording):
        with cache(model, True):
            outputs = decode_batch(model, TEXTS["dates"], read=False).outputs
    with cache(model, False):
        assert outputs == decode_batch(model, TEXTS["dates"], read=False).outputs
    L, n = model.config.num_layers, max(len(model.src_vocab.tokens(x)) + 1 for x in TEXTS["dates"])
    encoder, decoder = calls[:L], calls[L:]
    assert encoder == [(n, n)] * L
    steps = len(decoder) // (2 * L)  # a self- and a cross-attention per layer and step
    expected = [(1, k) for t in range(1, steps + 1) for _ in range(L) for k in (t, n)]
    assert decoder == expected


# --------------------------------------------------------------------------- the attention core
@pytest.mark.parametrize("mask_kind", ["none", "causal", "padding"])
def test_attend_to_projected_keys_values_is_forward(mask_kind):
    """MultiHeadAttention.attend(q, keys_values(k, v), mask) is forward(q, k, v, mask), bit for
    bit, and keeps the same alpha: the cached path runs the same equation."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4).eval()
    B, m, n = 3, 5, 5
    q, kv = torch.randn(B, m, 16), torch.randn(B, n, 16)
    mask = {
        "none": None,
        "causal": causal_mask(n),
        "padding": padding_mask([5, 3, 1], n)[:, None, :],
    }[mask_kind]
    with torch.no_grad():
        whole = mha(q, kv, kv, mask)
        alpha = mha.alpha
        split = mha.attend(q, mha.keys_values(kv, kv), mask)
    assert torch.equal(whole, split) and torch.equal(alpha, mha.alpha)


def test_kv_cache_append_puts_the_new_position_last():
    K, V = torch.randn(2, 4, 3, 8), torch.randn(2, 4, 3, 8)
    K_t, V_t = torch.randn(2, 4, 1, 8), torch.randn(2, 4, 1, 8)
    grown = KVCache(K, V).append(K_t, V_t)
    assert grown.K.shape == grown.V.shape == (2, 4, 4, 8)
    assert torch.equal(grown.K[:, :, :3], K) and torch.equal(grown.K[:, :, 3:], K_t)
    assert torch.equal(grown.V[:, :, :3], V) and torch.equal(grown.V[:, :, 3:], V_t)
