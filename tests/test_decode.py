"""attnlab.decode: one Decoding per text, steps() == translate(), special tokens, limits."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
import torch

import attnlab
from attnlab import attention
from attnlab.decode import (
    MAX_BEAM,
    Decoding,
    RepeatRule,
    Step,
    allowed_tokens,
    beam_search,
    decode,
    decode_batch,
    greedy,
    source_batch,
    steps,
)
from attnlab.guard import parts
from attnlab.models.base import Seq2SeqModel, StepOutput
from attnlab.text.vocab import SPECIALS, InvalidInput, Vocab

TEXTS = ["3 May 1979", "Thursday, 03 May 1979", "1979/05/03", "december 31, 2099", " 1.1.1900 "]
NAMES = ["rnnenc-dates", "rnnsearch-dates", "transformer-dates"]
ISO = ["1979-05-03", "1979-05-03", "1979-05-03", "2099-12-31", None]  # " 1.1.1900 ": unsure


@pytest.fixture(scope="module")
def models():
    return {name: attnlab.load(name) for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_steps_joined_equal_translate(models, name):
    model = models[name]
    vocab = model.tgt_vocab
    for text, iso in zip(TEXTS, ISO, strict=True):
        got = list(steps(model, text))
        joined = "".join(s.token for s in got)
        assert joined == model.translate(text)
        assert iso is None or joined == iso, (text, joined)  # every model reads these right
        # Greedy: each token is the most probable after the ones before it, by the model's
        # teacher-forced forward (the training pass, not decode's step loop), and so is <eos>.
        src = model.encode_source(text)  # (1, n)
        tgt_in = torch.tensor([[vocab.sos, *(vocab.stoi[s.token] for s in got)]])  # (1, T + 1)
        with torch.no_grad():
            logits = model.eval()(src, torch.tensor([src.shape[1]]), tgt_in)[0]  # (T + 1, V)
        p = torch.softmax(logits.masked_fill(~allowed_tokens(vocab), float("-inf")), -1)
        assert p.argmax(-1).tolist() == [*tgt_in[0, 1:].tolist(), vocab.eos], (text, joined)
        np.testing.assert_allclose([s.prob for s in got], p.max(-1).values[:-1], rtol=1e-4)
        assert [s.t for s in got] == list(range(len(got)))
        assert all(isinstance(s, Step) and 0.0 < s.prob <= 1.0 for s in got)


@pytest.mark.parametrize("name", NAMES)
def test_decoding_has_one_shape_for_every_model(models, name):
    model = models[name]
    text = "Thursday, 03 May 1979"
    d = decode(model, text)
    n, T = len(d.source_tokens), len(d.output_tokens)
    assert isinstance(d, Decoding) and d.source_tokens == model.source_tokens(text)
    assert d.source_tokens[-1] == "<eos>" and "<eos>" not in d.output_tokens
    L, h = (
        (model.config.num_layers, model.config.num_heads) if name == "transformer-dates" else (1, 1)
    )
    assert d.alpha.shape == (L, h, T, n) and d.probs.shape == (T,)
    np.testing.assert_allclose(d.alpha.sum(-1), 1.0, atol=1e-5)
    if model.kind == "rnnsearch":
        assert d.context.shape == (T, 2 * model.config.enc_hidden)
    else:
        assert d.context is None
    if model.kind == "rnnencdec":  # all its decoder sees is the final state
        assert (d.alpha[..., -1] == 1.0).all()
    for s in steps(model, text):
        assert s.alpha.shape == (L, h, n)
        np.testing.assert_array_equal(s.alpha, d.alpha[:, :, s.t])


@pytest.mark.parametrize("name", ["rnnsearch-dates", "transformer-dates"])
def test_decoding_agrees_with_the_step_by_step_decoder(models, name):
    """probs, alpha and c_t of the one teacher-forced pass equal model.step's, step by step."""
    model = models[name]
    d = decode(model, "3 May 1979")
    src = model.encode_source("3 May 1979")
    state = model.start(src, torch.tensor([src.shape[1]]))
    y = torch.tensor([model.tgt_vocab.sos])
    with torch.no_grad():
        for t, token in enumerate(d.output_tokens):
            out = model.step(state, y)
            allowed = allowed_tokens(model.tgt_vocab)  # no <pad>, <sos>, <unk>
            p = torch.softmax(out.logits[0].masked_fill(~allowed, -torch.inf), -1)
            tok = model.tgt_vocab.stoi[token]
            assert int(p.argmax()) == tok and abs(float(p[tok]) - d.probs[t]) < 1e-5
            np.testing.assert_allclose(out.alpha[0].numpy(), d.alpha[:, :, t], atol=1e-5)
            if out.context is not None:
                np.testing.assert_allclose(out.context[0].numpy(), d.context[t], atol=1e-5)
            state, y = out.state, torch.tensor([tok])


@pytest.mark.parametrize("name", NAMES)
def test_the_text_is_checked_once(models, name):
    model = models[name]
    with (
        mock.patch.object(
            type(model), "prepare", autospec=True, side_effect=Seq2SeqModel.prepare
        ) as prep,
        mock.patch.object(Vocab, "encode", autospec=True, side_effect=Vocab.encode) as enc,
    ):
        decode(model, " 3 MAY 1979 ")
    assert prep.call_count == 1 and enc.call_count == 0


def test_bad_text_raises_before_any_step(models):
    for text in ["", "😀", "x" * 10_000, None, 42]:
        with pytest.raises(InvalidInput):
            steps(models["rnnsearch-dates"], text)
        with pytest.raises(InvalidInput):
            decode(models["rnnsearch-dates"], text)


@pytest.mark.parametrize("name", NAMES)
def test_beam_of_width_one_is_greedy(models, name):
    model = models[name]
    for text in TEXTS[:3]:
        assert model.translate(text, beam=1) == model.translate(text)
        src = model.encode_source(text)
        assert beam_search(model, src, 1) == greedy(model, src)[0]


@pytest.mark.parametrize("name", NAMES)
def test_steps_follow_the_beam(models, name):
    model = models[name]
    for text in TEXTS[:2]:
        got = steps(model, text, beam=3)
        assert "".join(s.token for s in got) == model.translate(text, beam=3)


@pytest.mark.parametrize("k", [0, -1, 1.5, True, "3", MAX_BEAM + 1, 10**6])
def test_beam_width_is_bounded(models, k):
    model = models["rnnsearch-dates"]
    src = model.encode_source("3 May 1979")
    for call in (
        lambda: beam_search(model, src, k),
        lambda: model.translate("3 May 1979", beam=k),
        lambda: steps(model, "3 May 1979", beam=k),
        lambda: decode(model, "3 May 1979", beam=k),
    ):
        with pytest.raises(ValueError, match=f"1 to {MAX_BEAM}"):
            call()


def test_the_widest_beam_runs(models):
    model = models["rnnsearch-dates"]
    assert model.translate("3 May 1979", beam=MAX_BEAM) == "1979-05-03"


# --------------------------------------------------------------------------- batches
def test_a_source_batch_ends_each_text_in_eos_and_counts_it():
    vocab = attnlab.load("rnnsearch-dates").src_vocab
    texts = ["3 may 1979", "1.1.1900", "5"]
    src, src_len = source_batch(vocab, texts, length=14)
    assert src.shape == (3, 14) and src_len.tolist() == [11, 9, 2]
    for row, n, text in zip(src.tolist(), src_len.tolist(), texts, strict=True):
        assert [vocab.itos[i] for i in row[: n - 1]] == list(text)  # the text, as read
        assert row[n - 1] == vocab.eos and set(row[n:]) <= {vocab.pad}  # <eos>, then padding
    assert source_batch(vocab, texts)[0].shape == (3, 11)  # the longest source, by default
    assert source_batch(vocab, ["x5"])[0].tolist() == [[vocab.unk, vocab.stoi["5"], vocab.eos]]


@pytest.mark.parametrize("name", NAMES)
def test_a_batch_decodes_each_text_as_decode_does(models, name):
    """Padding the shorter texts changes nothing: each row of one padded batch is the text's
    own decoding (its outputs, probabilities, alpha over its own positions, c_t)."""
    model = models[name]
    prepared = [model.prepare(text) for text in TEXTS]
    batch = decode_batch(model, prepared, length=40)  # every text padded, the longest too
    assert batch.src.shape[1] == 40
    for b, text in enumerate(TEXTS):
        alone, row = decode(model, text), batch.decoding(model, b)
        assert row.text == alone.text == batch.text(model, b)
        assert row.source_tokens == alone.source_tokens and row.alpha.shape == alone.alpha.shape
        np.testing.assert_allclose(row.probs, alone.probs, atol=1e-5)
        np.testing.assert_allclose(row.alpha, alone.alpha, atol=1e-5)
        if alone.context is not None:
            np.testing.assert_allclose(row.context, alone.context, atol=1e-5)
        assert (batch.alpha[b, ..., int(batch.src_len[b]) :] == 0).all()  # no weight on <pad>


def test_a_batch_reads_back_the_outputs_it_is_given(models):
    """Given outputs, nothing is searched: the read-back scores those outputs."""
    model = models["rnnsearch-dates"]
    texts = [model.prepare(t) for t in TEXTS[:2]]
    given = [[model.tgt_vocab.stoi[c] for c in "2000-01-01"]] * 2
    batch = decode_batch(model, texts, outputs=given)
    assert batch.outputs == given and [batch.text(model, b) for b in (0, 1)] == ["2000-01-01"] * 2
    assert batch.alpha.shape[3] == len("2000-01-01") + 1  # every output step and its <eos>
    unread = decode_batch(model, texts, read=False)
    assert unread.alpha is None and unread.outputs == greedy(model, batch.src, batch.src_len)
    with pytest.raises(ValueError, match="read the batch back first"):
        unread.decoding(model, 0)


# --------------------------------------------------------------------------- fake models
class TableModel(Seq2SeqModel):
    """A fake model whose next-token probabilities are a fixed table of prefixes.

    ``table`` maps the output so far to {token: probability}; anything not in it writes
    <eos>.  Tokens are characters or special-token names.
    """

    kind = "table"

    def __init__(self, table: dict[str, dict[str, float]], max_tgt_len: int = 4):
        super().__init__(Vocab("ab"), Vocab("ab"), max_src_len=5, max_tgt_len=max_tgt_len)
        self.table = table

    def start(self, src, src_len):
        return {"prefix": torch.zeros(src.shape[0], 0, dtype=torch.long)}

    def step(self, state, y_prev):
        prefix = torch.cat([state["prefix"], y_prev[:, None]], dim=1)
        probs = torch.full((prefix.shape[0], len(self.tgt_vocab)), 1e-6)
        for i, row in enumerate(prefix.tolist()):
            seen = "".join(self.tgt_vocab.itos[j] for j in row[1:])
            for tok, p in self.table.get(seen, {"<eos>": 1.0}).items():
                probs[i, self.tgt_vocab.stoi[tok]] = p
        alpha = torch.ones(prefix.shape[0], 1, 1, 3) / 3  # (B, L, h, n) for a 2-letter source
        return StepOutput(probs.log(), alpha, None, {"prefix": prefix})


def test_beam_search_finds_what_greedy_misses():
    # Greedy writes "aa" (0.6 * 0.55 = 0.33); the best is "b" (0.4 * 0.99 = 0.396).
    model = TableModel(
        {"": {"a": 0.6, "b": 0.4}, "a": {"a": 0.55, "b": 0.45}, "b": {"<eos>": 0.99}}
    )
    assert model.translate("ab") == "aa"
    assert model.translate("ab", beam=1) == "aa"
    assert model.translate("ab", beam=2) == "b"
    assert model.translate("ab", beam=5) == "b"
    assert [s.token for s in steps(model, "ab", beam=2)] == ["b"]
    assert [round(s.prob, 3) for s in steps(model, "ab")] == [0.6, 0.55]


@pytest.mark.parametrize("special", ["<sos>", "<pad>", "<unk>"])
def test_special_tokens_are_never_written(special):
    """A model that prefers a special token mid-output: it is masked, never shown."""
    model = TableModel({"": {"a": 0.9}, "a": {special: 0.7, "b": 0.2}, "ab": {"<eos>": 0.9}})
    for beam in (None, 1, 3):
        d = decode(model, "ab", beam)
        assert d.output_tokens == ["a", "b"], beam
        assert "".join(s.token for s in steps(model, "ab", beam)) == model.translate("ab", beam)
        assert not set(d.output_tokens) & set(SPECIALS)
    # prob is the distribution decoding used: the special token's share is gone.
    assert abs(decode(model, "ab").probs[1] - 0.2 / (0.2 + 4e-6)) < 1e-3


@pytest.mark.parametrize("beam", [None, 1, 3])
def test_outputs_never_exceed_max_tgt_len(beam):
    """A model that never writes <eos> is cut at max_tgt_len (not one token more)."""
    forever = {"a" * i: {"a": 0.9} for i in range(20)}
    model = TableModel(forever, max_tgt_len=4)
    assert decode(model, "ab", beam).text == "aaaa"
    src = model.encode_source("ab")
    assert greedy(model, torch.cat([src, src])) == [[model.tgt_vocab.stoi["a"]] * 4] * 2
    assert len(list(steps(model, "ab", beam))) == 4


@pytest.mark.parametrize("name", NAMES)
def test_shipped_models_respect_max_tgt_len(models, name):
    model = models[name]
    for text in ["1", "9999", "monday, 1 january 2000"]:
        assert len(model.translate(text)) <= model.max_tgt_len


def test_decoding_keeps_the_models_mode(models):
    model = models["rnnsearch-dates"]
    model.train()
    try:
        decode(model, "3 May 1979")
        assert model.training
    finally:
        model.eval()


# --------------------------------------------------------------------------- late binding
def test_a_patched_masked_softmax_runs_inside_every_model(models):
    """attention() and MultiHeadAttention read masked_softmax through the module global."""
    for name in ("rnnsearch-dates", "transformer-dates"):
        real = attention.masked_softmax
        with mock.patch.object(attention, "masked_softmax", side_effect=real) as spy:
            assert models[name].translate("3 May 1979") == "1979-05-03"
        assert spy.call_count > 0, name


def test_a_patched_scaled_dot_product_attention_runs_inside_the_transformer(models):
    real = attention.scaled_dot_product_attention
    with mock.patch.object(attention, "scaled_dot_product_attention", side_effect=real) as spy:
        models["transformer-dates"].translate("3 May 1979")
    assert spy.call_count > 0


def test_a_plain_function_can_replace_the_score(models):
    """parts.swapped puts any (query, keys) -> scores in; leaving it puts the module back."""
    model = models["rnnsearch-dates"]
    module, before = model.score, decode(model, "3 May 1979")
    calls = []

    def uniform(query, keys):  # every source position equally: alpha = 1/n
        calls.append((tuple(query.shape), tuple(keys.shape)))
        return torch.zeros(*query.shape[:-1], keys.shape[-2])

    with parts.swapped(model, "score", uniform):
        d = decode(model, "3 May 1979")
        n = len(d.source_tokens)
        np.testing.assert_allclose(d.alpha, 1.0 / n, atol=1e-6)
        assert calls and calls[0] == (
            (1, 1, model.config.dec_hidden),
            (1, n, 2 * model.config.enc_hidden),
        )
    assert model.score is module and "score.v.weight" in model.state_dict()
    np.testing.assert_array_equal(decode(model, "3 May 1979").alpha, before.alpha)


def test_precomputed_U_h_gives_the_same_decoding(models):
    """RNNSearch computes U h_i once per source; the plain score gives the same result."""
    model = models["rnnsearch-dates"]
    assert isinstance(model.score, attention.AdditiveScore)
    fast = decode(model, "Thursday, 03 May 1979")
    module = model.score
    with parts.swapped(model, "score", lambda q, k: module(q, k)):  # no precompute
        slow = decode(model, "Thursday, 03 May 1979")
    assert slow.text == fast.text
    np.testing.assert_allclose(slow.alpha, fast.alpha, atol=1e-6)
    np.testing.assert_allclose(slow.context, fast.context, atol=1e-6)


def test_transformer_alpha_is_the_cross_attention_of_one_pass(models):
    model = models["transformer-dates"]
    d, w = decode(model, "Thursday, 03 May 1979"), model.attention_weights("Thursday, 03 May 1979")
    assert w["output_tokens"] == [*d.output_tokens, "<eos>"]
    assert w["source_tokens"] == d.source_tokens
    np.testing.assert_allclose(d.alpha, w["cross"][:, :, :-1], atol=1e-6)


def test_an_empty_output_is_a_decoding_with_no_steps():
    model = TableModel({"": {"<eos>": 0.9}})
    for beam in (None, 2):
        d = decode(model, "ab", beam)
        assert d.text == "" and d.alpha.shape == (1, 1, 0, 3) and d.probs.shape == (0,)
        assert list(steps(model, "ab", beam)) == []


# --------------------------------------------------------------------------- the repeat rule
@pytest.mark.parametrize("beam", [None, 3])
def test_a_subword_decoder_writes_no_word_a_third_time(beam):
    """A decoder that would stutter ('alle alle alle ...') is stopped at the second time,
    whatever the case ('Alle' is the same word); then it writes the next best word."""
    model = attnlab.load("transformer-en-de")
    V = model.tgt_vocab
    prefer = {"▁alle": 5.0, "▁Alle": 4.0, "▁die": 3.0, "<eos>": 2.0}

    def stutter(state, y_prev):
        logits = torch.full((len(y_prev), len(V)), -10.0)
        for piece, score in prefer.items():
            logits[:, V.stoi[piece]] = score
        n = state["src_mask"].shape[-1]
        return StepOutput(logits, torch.full((len(y_prev), 2, 4, n), 1 / n), None, state)

    with mock.patch.object(model, "step", stutter):
        assert model.translate("Delete all", beam=beam) == "alle alle die die"


def test_the_repeat_rule_leaves_character_models_alone():
    # dates repeat digits by nature: "1999-09-09" writes '9' five times
    model = attnlab.load("rnnsearch-dates")
    assert model.translate("9 September 1999") == "1999-09-09"
    assert not RepeatRule(model.tgt_vocab).banned(torch.full((1, len(model.tgt_vocab)), 9)).any()
