"""attnlab.decode: steps() agrees with translate(), alpha sums to 1, beam search."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnlab
from attnlab.data import InvalidInput, Vocab
from attnlab.decode import Seq2SeqModel, Step, StepOutput, beam_search, greedy, steps

TEXTS = ["3 May 1979", "Thursday, 03 May 1979", "1979/05/03", "december 31, 2099", " 1.1.1900 "]
NAMES = ["rnnenc-dates", "rnnsearch-dates", "transformer-dates"]


@pytest.fixture(scope="module")
def models():
    return {name: attnlab.load(name) for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_steps_joined_equal_translate(models, name):
    model = models[name]
    for text in TEXTS:
        got = list(steps(model, text))
        assert "".join(s.token for s in got) == model.translate(text)
        assert [s.t for s in got] == list(range(len(got)))
        assert all(isinstance(s, Step) and 0.0 < s.prob <= 1.0 for s in got)


@pytest.mark.parametrize("name", NAMES)
def test_alpha_shapes_and_sums(models, name):
    model = models[name]
    text = "Thursday, 03 May 1979"
    n = len(model.source_tokens(text))
    for s in steps(model, text):
        assert isinstance(s.alpha, np.ndarray)
        np.testing.assert_allclose(s.alpha.sum(-1), 1.0, atol=1e-5)
        if model.kind == "rnnsearch":
            assert s.alpha.shape == (n,)
            assert s.context.shape == (2 * model.config.enc_hidden,)
        elif model.kind == "transformer":
            assert s.alpha.shape == (model.config.num_layers, model.config.num_heads, n)
            assert s.context is None
        else:
            assert s.alpha.shape == (n,) and s.alpha[-1] == 1.0 and s.context is None


def test_step_probabilities_are_the_models(models):
    """prob is p(y_t | y_<t, x): the softmax of the logits at that step."""
    model = models["rnnsearch-dates"]
    got = list(steps(model, "3 May 1979"))
    src = model.encode_source("3 May 1979")
    state = model.start(src, torch.tensor([src.shape[1]]))
    y = torch.tensor([model.tgt_vocab.sos])
    with torch.no_grad():
        for s in got:
            out = model.step(state, y)
            p = torch.softmax(out.logits[0], -1)
            tok = model.tgt_vocab.stoi[s.token]
            assert abs(float(p[tok]) - s.prob) < 1e-6 and int(p.argmax()) == tok
            np.testing.assert_allclose(out.alpha[0].numpy(), s.alpha, atol=1e-6)
            state, y = out.state, torch.tensor([tok])


def test_bad_text_raises_before_any_step(models):
    for text in ["", "😀", "x" * 10_000]:
        with pytest.raises(InvalidInput):
            steps(models["rnnsearch-dates"], text)


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


def test_beam_rejects_a_bad_width(models):
    src = models["rnnsearch-dates"].encode_source("3 May 1979")
    for k in (0, -1, 1.5, True):
        with pytest.raises(ValueError):
            beam_search(models["rnnsearch-dates"], src, k)


class TableModel(Seq2SeqModel):
    """A fake model whose next-token probabilities are a fixed table of prefixes.

    p(a) = 0.6, p(b) = 0.4 first; after "a": p(a) = 0.55, p(b) = 0.45 (then <eos>); after
    "b": <eos> with 0.99.  Greedy writes "aa" (0.6 * 0.55 = 0.33); the best is "b" (0.396).
    """

    kind = "table"

    def __init__(self):
        super().__init__(Vocab("ab"), Vocab("ab"), max_src_len=5, max_tgt_len=4)

    def start(self, src, src_len):
        return {"prefix": torch.zeros(src.shape[0], 0, dtype=torch.long)}

    def step(self, state, y_prev):
        prefix = torch.cat([state["prefix"], y_prev[:, None]], dim=1)
        a, b, eos = self.tgt_vocab.stoi["a"], self.tgt_vocab.stoi["b"], self.tgt_vocab.eos
        probs = torch.full((prefix.shape[0], len(self.tgt_vocab)), 1e-6)
        for i, row in enumerate(prefix.tolist()):
            text = self.tgt_vocab.decode(row[1:])
            table = {"": {a: 0.6, b: 0.4}, "a": {a: 0.55, b: 0.45}, "b": {eos: 0.99}}
            for tok, p in table.get(text, {eos: 1.0}).items():
                probs[i, tok] = p
        alpha = torch.ones(prefix.shape[0], state["prefix"].shape[1] + 1)
        return StepOutput(
            probs.log(), alpha / alpha.sum(-1, keepdim=True), None, {"prefix": prefix}
        )


def test_beam_search_finds_what_greedy_misses():
    model = TableModel()
    assert model.translate("ab") == "aa"
    assert model.translate("ab", beam=1) == "aa"
    assert model.translate("ab", beam=2) == "b"
    assert model.translate("ab", beam=5) == "b"
    assert [s.token for s in steps(model, "ab", beam=2)] == ["b"]
    assert [round(s.prob, 3) for s in steps(model, "ab")] == [0.6, 0.55]
