"""Shapes through every model, padding, the Transformer's weights, and refusing bad text."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
import torch

from attnlab.attention import SCORES
from attnlab.models.registry import MODEL_KINDS, build_model
from attnlab.models.rnn import RNNConfig, RNNEncDec, RNNSearch
from attnlab.models.transformer import Transformer, TransformerConfig
from attnlab.text.tasks import TASKS
from attnlab.text.vocab import InvalidInput
from attnlab.training.batches import encode_pairs

KINDS = ["rnnencdec", "rnnsearch", "transformer"]
TASK = TASKS["dates"]
BAD = ["", "   ", "3 may 1979 ?", "x" * 10_000, "😀", "3 May 1979" * 4, "\x00"]


@pytest.fixture(scope="module")
def batch():
    pairs = [
        ("3 May 1979", "1979-05-03"),
        ("Thursday, 3 May 1979", "1979-05-03"),
        ("1.1.2000", "2000-01-01"),
    ]
    return encode_pairs(pairs, TASK.src_vocab, TASK.tgt_vocab)


_MODELS: dict = {}


def _model(kind):
    """An untrained model of ``kind`` (built once; the tests only read it)."""
    if kind not in _MODELS:
        torch.manual_seed(0)
        _MODELS[kind] = build_model(kind, TASK.src_vocab, TASK.tgt_vocab).eval()
    return _MODELS[kind]


@pytest.mark.parametrize("kind", KINDS)
def test_forward_gives_logits_for_every_target_position(kind, batch):
    model = _model(kind)
    logits = model(batch["src"], batch["src_len"], batch["tgt_in"])
    B, T = batch["tgt_in"].shape
    assert logits.shape == (B, T, len(TASK.tgt_vocab))
    assert model.kind == kind


@pytest.mark.parametrize("kind", KINDS)
def test_padding_does_not_change_the_result(kind, batch):
    """Each example decoded alone gives the same logits as inside a padded batch."""
    model = _model(kind)
    with torch.no_grad():
        logits = model(batch["src"], batch["src_len"], batch["tgt_in"])
        for i in range(len(batch["src"])):
            n = int(batch["src_len"][i])
            alone = model(
                batch["src"][i : i + 1, :n], batch["src_len"][i : i + 1], batch["tgt_in"][i : i + 1]
            )
            assert torch.allclose(alone[0], logits[i], atol=1e-5)


@pytest.mark.parametrize("kind", KINDS)
def test_one_step_shapes(kind, batch):
    model = _model(kind)
    with torch.no_grad():
        state = model.start(batch["src"], batch["src_len"])
        out = model.step(state, batch["tgt_in"][:, 0])
    B, n = batch["src"].shape
    assert out.logits.shape == (B, len(TASK.tgt_vocab))
    if kind == "transformer":
        cfg = model.config
        assert out.alpha.shape == (B, cfg.num_layers, cfg.num_heads, n)
        assert out.context is None
    else:
        assert out.alpha.shape == (B, 1, 1, n)  # RNN models: one layer, one head
    # Weights sum to 1 over the real source tokens and are 0 on padding.
    assert torch.allclose(out.alpha.sum(-1), torch.ones(out.alpha.shape[:-1]), atol=1e-5)
    for i, length in enumerate(batch["src_len"].tolist()):
        assert float(out.alpha[i, ..., length:].abs().sum()) == 0.0
    if kind == "rnnsearch":
        assert out.context.shape == (B, 2 * model.config.enc_hidden)
        # c_t = sum_i alpha_{t,i} h_i
        expected = torch.einsum("bn,bnd->bd", out.alpha[:, 0, 0], state["h"])
        assert torch.allclose(out.context, expected, atol=1e-5)
    if kind == "rnnencdec":
        last = batch["src_len"] - 1
        assert torch.equal(out.alpha[:, 0, 0].argmax(-1), last) and float(out.alpha.max()) == 1.0


@pytest.mark.parametrize("score", SCORES)
def test_rnnsearch_runs_with_each_of_the_four_scores(score, batch):
    cfg = RNNConfig(enc_hidden=16, dec_hidden=32, attn_hidden=8, score=score)  # dot: d_q == 2H
    model = RNNSearch(TASK.src_vocab, TASK.tgt_vocab, cfg)
    logits = model(batch["src"], batch["src_len"], batch["tgt_in"])
    assert logits.shape[:2] == batch["tgt_in"].shape
    logits.sum().backward()  # every part gets a gradient
    assert all(p.grad is not None for p in model.parameters())


def test_dot_score_needs_matching_sizes():
    with pytest.raises(ValueError, match="d_q"):
        RNNSearch(
            TASK.src_vocab, TASK.tgt_vocab, RNNConfig(enc_hidden=16, dec_hidden=16, score="dot")
        )


def test_transformer_returns_every_weight():
    model = _model("transformer")
    w = model.attention_weights("3 May 1979")
    L, h = model.config.num_layers, model.config.num_heads
    n = len(model.source_tokens("3 May 1979"))
    T = len(w["output_tokens"])
    assert w["encoder_self"].shape == (L, h, n, n)
    assert w["decoder_self"].shape == (L, h, T, T)
    assert w["cross"].shape == (L, h, T, n)
    for key in ("encoder_self", "decoder_self", "cross"):
        np.testing.assert_allclose(w[key].sum(-1), 1.0, atol=1e-5)
    # Masked self-attention: output t never looks at a later output.
    assert np.all(np.triu(w["decoder_self"], k=1) == 0)


def test_encoder_qk_gives_the_encoder_self_attention():
    model = _model("transformer")
    w = model.attention_weights("30 September 2000")["encoder_self"]
    for layer in range(model.config.num_layers):
        for head in (0, model.config.num_heads - 1):
            Q, K = model.encoder_qk("30 September 2000", layer, head)
            d_k = model.config.d_model // model.config.num_heads
            n = len(model.source_tokens("30 September 2000"))
            assert Q.shape == K.shape == (n, d_k)
            scores = Q @ K.T / np.sqrt(d_k)  # softmax(Q K^T / sqrt(d_k))
            alpha = np.exp(scores - scores.max(-1, keepdims=True))
            alpha /= alpha.sum(-1, keepdims=True)
            np.testing.assert_allclose(alpha, w[layer, head], atol=1e-5)
    with pytest.raises(ValueError):
        model.encoder_qk("3 May 1979", layer=5, head=0)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("text", BAD)
def test_bad_text_raises_a_one_line_invalid_input(kind, text):
    model = _model(kind)
    for call in (model.translate, model.source_tokens):
        with pytest.raises(InvalidInput) as err:
            call(text)
        msg = str(err.value)
        assert msg and "\n" not in msg and len(msg) < 120


def test_too_long_and_unknown_messages_say_why():
    model = _model("rnnsearch")
    with pytest.raises(InvalidInput, match="at most 32"):
        model.translate("1" * 33)
    with pytest.raises(InvalidInput, match="'Q'"):  # named as typed, before lower-casing
        model.translate("3 MAY 1979 Q")


def test_source_tokens_are_what_the_encoder_reads():
    model = _model("rnnsearch")
    assert model.source_tokens("  3  MAY 1979 ") == [*"3 may 1979", "<eos>"]
    src = model.encode_source("  3  MAY 1979 ")
    assert [model.src_vocab.itos[i] for i in src[0].tolist()] == model.source_tokens("3 may 1979")


def test_models_accept_their_own_sizes():
    d, d_ff, L, max_tgt = 16, 32, 1, 5
    config = TransformerConfig(d_model=d, num_heads=2, num_layers=L, d_ff=d_ff, max_tgt_len=max_tgt)
    t = Transformer(TASK.src_vocab, TASK.tgt_vocab, config)
    V_src, V_tgt = len(TASK.src_vocab), len(TASK.tgt_vocab)
    mha = 4 * (d * d + d)  # W^Q, W^K, W^V, W^O with biases
    ffn = (d * d_ff + d_ff) + (d_ff * d + d)
    ln = 2 * d
    encoder_layer, decoder_layer = 2 * ln + mha + ffn, 3 * ln + 2 * mha + ffn
    by_hand = (V_src + V_tgt) * d + L * (encoder_layer + decoder_layer) + 2 * ln + d * V_tgt + V_tgt
    assert t.num_parameters() == by_hand  # every size of the config is used, none other
    t.train()  # decoding switches to eval mode and back
    text = t.translate("3 may 1979")
    assert t.training, "translate() left the model in eval mode"
    assert len(text) <= max_tgt  # at most max_tgt_len characters written
    assert t.eval().translate("3 may 1979") == text


@torch.no_grad()
def test_transformer_forward_returns_logits_and_keeps_every_weight(batch):
    model = _model("transformer")
    logits = model(batch["src"], batch["src_len"], batch["tgt_in"])
    w = model.kept_weights()  # what the attentions kept from that pass
    B, n = batch["src"].shape
    T = batch["tgt_in"].shape[1]
    L, h = model.config.num_layers, model.config.num_heads
    assert isinstance(logits, torch.Tensor) and logits.shape == (B, T, len(model.tgt_vocab))
    assert w["encoder_self"].shape == (B, L, h, n, n)
    assert w["decoder_self"].shape == (B, L, h, T, T)
    assert w["cross"].shape == (B, L, h, T, n)
    torch.testing.assert_close(w["cross"][:, -1], model.decoder_layers[-1].cross_attn.alpha)
    # padded source positions get no attention
    for i, length in enumerate(batch["src_len"].tolist()):
        assert float(w["cross"][i, ..., length:].abs().sum()) == 0.0
    model(batch["src"][:1], batch["src_len"][:1], batch["tgt_in"][:1])  # a second pass:
    assert model.kept_weights()["cross"].shape[0] == 1  # the weights are those of the last one


def test_kept_weights_before_any_pass_is_a_one_line_error():
    with pytest.raises(ValueError, match="no weights kept yet"):
        build_model("transformer", TASK.src_vocab, TASK.tgt_vocab).kept_weights()


# --------------------------------------------------------------------------- the registry
def test_each_kind_builds_its_own_class_with_the_config_given():
    expected = {
        "rnnencdec": (RNNEncDec, RNNConfig),
        "rnnsearch": (RNNSearch, RNNConfig),
        "transformer": (Transformer, TransformerConfig),
    }
    assert list(MODEL_KINDS) == KINDS == list(expected)
    src, tgt = TASK.src_vocab, TASK.tgt_vocab
    for name, (model_class, config_class) in expected.items():
        config = config_class(max_src_len=9, max_tgt_len=7)  # not the defaults
        model = build_model(name, src, tgt, config)
        assert type(model) is model_class and model.kind == name, name
        assert model.config == config and (model.max_src_len, model.max_tgt_len) == (9, 7)
        assert (model.src_vocab.itos, model.tgt_vocab.itos) == (src.itos, tgt.itos)


def test_build_model_takes_a_config_as_a_dict():
    model = build_model("rnnsearch", TASK.src_vocab, TASK.tgt_vocab, {"score": "general"})
    assert model.config.score == "general"


@pytest.mark.parametrize(
    "kind, config",
    [
        ("rnnenc", None),  # a checkpoint file name is not a kind
        ("RNNSearch", None),
        ("rnnsearch", TransformerConfig()),
        ("transformer", {"no_such_field": 1}),
    ],
)
def test_build_model_refuses_what_it_cannot_build(kind, config):
    with pytest.raises(ValueError):
        build_model(kind, TASK.src_vocab, TASK.tgt_vocab, config)


def test_rnnsearch_precomputes_U_h_once_per_source(batch):
    """The additive score's U h_i is in the state after start(), and not recomputed per step."""
    model = _model("rnnsearch")
    with torch.no_grad():
        state = model.start(batch["src"], batch["src_len"])
        torch.testing.assert_close(state["Uh"], model.score.U(state["h"]))
        with mock.patch.object(model.score.U, "forward", side_effect=AssertionError("U h again")):
            for t in range(3):
                out = model.step(state, batch["tgt_in"][:, t])
                state = out.state


# --------------------------------------------------------------------------- names that say what
@torch.no_grad()
def test_the_transformer_is_its_encoder_stack_then_its_decoder_stack(batch):
    model = _model("transformer")
    memory, src_mask = model.run_encoder(batch["src"], batch["src_len"])
    assert memory.shape == (*batch["src"].shape, model.config.d_model)
    logits = model.run_decoder(batch["tgt_in"], memory, src_mask)
    torch.testing.assert_close(logits, model(batch["src"], batch["src_len"], batch["tgt_in"]))
    # one meaning of `decode`: decoding a text (attnlab.decode.decode), no method beside it
    assert not hasattr(model, "decode") and not hasattr(model, "encode")


# --------------------------------------------------------------------------- threads
def test_torch_threads_sets_the_count_inside_and_restores_it_after_an_error():
    from attnlab.models.threads import torch_threads

    before = torch.get_num_threads()
    target = 2 if before == 1 else 1
    with pytest.raises(RuntimeError, match="inside"), torch_threads(target):
        assert torch.get_num_threads() == target
        raise RuntimeError("inside")
    assert torch.get_num_threads() == before


def test_only_the_one_context_manager_sets_torch_threads():
    """Every thread setting in the package goes through attnlab.models.threads."""
    from pathlib import Path

    package = Path(__file__).resolve().parents[1] / "src" / "attnlab"
    setters = sorted(
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if "set_num_threads(" in path.read_text(encoding="utf-8")
    )
    # guard/ also puts back a thread count that a student's code changed, and says so
    assert "models/threads.py" in setters
    assert [s for s in setters if s != "models/threads.py" and not s.startswith("guard/")] == []
