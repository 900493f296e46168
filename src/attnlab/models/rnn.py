r"""RNN sequence-to-sequence models: without attention (RNNEncDec) and with it (RNNSearch).

* :class:`RNNEncDec` (Sutskever et al. 2014; Cho et al. 2014): a GRU reads the source
  x_1..x_n; its final state c = h_n, one fixed-length vector, is all the decoder sees:
  s_0 = tanh(W_s c) and s_t = GRU(s_{t-1}, [y_{t-1}; c]).
* :class:`RNNSearch` (Bahdanau et al. 2015): a bidirectional GRU gives one annotation per
  source position, h_i = [forward h_i; backward h_i]; at each output step the decoder
  attends to all of them:

      e_{t,i} = score(s_{t-1}, h_i)            (additive by default: v^T tanh(W s + U h_i))
      alpha_{t,i} = softmax_i(e_{t,i})
      c_t = sum_i alpha_{t,i} h_i
      s_t = GRU(s_{t-1}, [y_{t-1}; c_t])
      p(y_t | y_<t, x) = softmax(W_o [s_t; c_t; y_{t-1}])

Both read the source with an <eos> appended and are trained with teacher forcing.
Shapes: B batch, n source length, T target length, E embedding, H hidden.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from attnlab.attention import AdditiveScore, attention, make_score, mask_scores, padding_mask
from attnlab.models.base import Seq2SeqModel, State, StepOutput
from attnlab.text.vocab import Vocab

__all__ = ["RNNConfig", "RNNEncDec", "RNNSearch", "decode_step"]


@dataclass
class RNNConfig:
    """Sizes of an RNN seq2seq model (both kinds read the fields they need)."""

    emb: int = 32  # E: size of a character embedding
    enc_hidden: int = 64  # H_enc: GRU state per direction (RNNSearch: h_i has 2 H_enc)
    dec_hidden: int = 64  # H_dec: decoder state s_t
    score: str = "additive"  # RNNSearch: "dot", "scaled_dot", "general" or "additive"
    attn_hidden: int = 64  # RNNSearch's additive score: width of v^T tanh(W s + U h)
    max_src_len: int = 32  # characters read (before <eos>)
    max_tgt_len: int = 12  # characters written (before <eos>)
    dropout: float = 0.0  # while training: on the source embeddings and on W_o's input


def _encode(gru: nn.GRU, x: Tensor, src_len: Tensor) -> tuple[Tensor, Tensor]:
    """Run ``gru`` over padded x (B, n, E), ignoring padding: outputs (B, n, D*H), h_n."""
    packed = pack_padded_sequence(x, src_len.cpu(), batch_first=True, enforce_sorted=False)
    out, h_n = gru(packed)
    out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
    return out, h_n  # (B, n, D*H), (D, B, H)


def decode_step(
    s_prev: Tensor,
    h: Tensor,
    y_prev: Tensor,
    score: Callable,
    cell: nn.GRUCell,
) -> tuple[Tensor, Tensor, Tensor]:
    r"""One decoding step with attention (Bahdanau et al.): the exercise's function, and the
    model's.

    s_prev (B, S) = s_{t-1}, h (B, n, 2H) = h_1..h_n, y_prev (B, E) = the embedded y_{t-1},
    score(queries (B, m, S), keys (B, n, 2H)) -> (B, m, n), cell a GRUCell
    -> s_t (B, S), c_t (B, 2H), alpha_t (B, n).
    """
    # alpha_{t,i} = softmax_i(score(s_{t-1}, h_i)),  c_t = sum_i alpha_{t,i} h_i
    c, alpha = attention(s_prev[:, None, :], h, h, score)  # (B, 1, 2H), (B, 1, n)
    c, alpha = c[:, 0], alpha[:, 0]  # c_t: (B, 2H), alpha_t: (B, n)
    s = cell(torch.cat([y_prev, c], dim=-1), s_prev)  # s_t = f(s_{t-1}, y_{t-1}, c_t)
    return s, c, alpha


class _RecurrentSeq2Seq(Seq2SeqModel):
    """An RNN decoder is trained the way it decodes: one step after another."""

    def forward(self, src: Tensor, src_len: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher forcing: src (B, n), tgt_in (B, T) = <sos> y_1..y_{T-1} -> logits (B, T, V)."""
        state = self.start(src, src_len)
        logits = []
        for t in range(tgt_in.shape[1]):
            so = self.step(state, tgt_in[:, t])
            state = so.state
            logits.append(so.logits)
        return torch.stack(logits, dim=1)


class RNNEncDec(_RecurrentSeq2Seq):
    """Encoder-decoder without attention: the decoder sees only the final encoder state."""

    kind = "rnnencdec"

    def __init__(self, src_vocab: Vocab, tgt_vocab: Vocab, config: RNNConfig | None = None):
        config = config or RNNConfig(enc_hidden=128, dec_hidden=128)
        super().__init__(src_vocab, tgt_vocab, config.max_src_len, config.max_tgt_len)
        self.config = config
        E, H, S = config.emb, config.enc_hidden, config.dec_hidden
        self.src_emb = nn.Embedding(len(src_vocab), E, padding_idx=src_vocab.pad)
        self.tgt_emb = nn.Embedding(len(tgt_vocab), E, padding_idx=tgt_vocab.pad)
        self.encoder = nn.GRU(E, H, batch_first=True)
        self.init_state = nn.Linear(H, S)  # s_0 = tanh(W_s c)
        self.decoder = nn.GRUCell(E + H, S)  # s_t = GRU(s_{t-1}, [y_{t-1}; c])
        self.out = nn.Linear(S + H + E, len(tgt_vocab))  # logits = W_o [s_t; c; y_{t-1}]
        self.drop = nn.Dropout(config.dropout)  # training only (the real-language models)

    def start(self, src: Tensor, src_len: Tensor) -> State:
        _, h_n = _encode(self.encoder, self.drop(self.src_emb(src)), src_len)  # h_n: (1, B, H)
        c = h_n[0]  # the fixed-length vector: (B, H)
        s = torch.tanh(self.init_state(c))  # s_0: (B, S)
        # All the decoder sees is the final state: a one-hot on the last source position,
        # the same at every step.
        n = int(src_len.max())
        alpha = nn.functional.one_hot(src_len - 1, n).float()[:, None, None, :]  # (B, 1, 1, n)
        return {"s": s, "c": c, "alpha": alpha}

    def step(self, state: State, y_prev: Tensor) -> StepOutput:
        c = state["c"]
        y = self.tgt_emb(y_prev)  # (B, E)
        s = self.decoder(torch.cat([y, c], dim=-1), state["s"])  # s_t: (B, S)
        logits = self.out(self.drop(torch.cat([s, c, y], dim=-1)))  # (B, V)
        return StepOutput(logits, state["alpha"], None, {**state, "s": s})


class RNNSearch(_RecurrentSeq2Seq):
    """Bahdanau et al.'s RNNsearch: a bi-GRU encoder and a GRU decoder with attention."""

    kind = "rnnsearch"

    def __init__(self, src_vocab: Vocab, tgt_vocab: Vocab, config: RNNConfig | None = None):
        config = config or RNNConfig()
        super().__init__(src_vocab, tgt_vocab, config.max_src_len, config.max_tgt_len)
        self.config = config
        E, H, S = config.emb, config.enc_hidden, config.dec_hidden
        self.src_emb = nn.Embedding(len(src_vocab), E, padding_idx=src_vocab.pad)
        self.tgt_emb = nn.Embedding(len(tgt_vocab), E, padding_idx=tgt_vocab.pad)
        self.encoder = nn.GRU(E, H, batch_first=True, bidirectional=True)
        self.init_state = nn.Linear(H, S)  # s_0 = tanh(W_s backward h_1)
        # e_{t,i} = score(s_{t-1}, h_i), with s in R^S and h_i in R^{2H}
        self.score = make_score(config.score, d_q=S, d_k=2 * H, d_attn=config.attn_hidden)
        self.decoder = nn.GRUCell(E + 2 * H, S)  # s_t = GRU(s_{t-1}, [y_{t-1}; c_t])
        self.out = nn.Linear(S + 2 * H + E, len(tgt_vocab))  # W_o [s_t; c_t; y_{t-1}]
        self.drop = nn.Dropout(config.dropout)  # training only (the real-language models)

    def start(self, src: Tensor, src_len: Tensor) -> State:
        h, h_n = _encode(self.encoder, self.drop(self.src_emb(src)), src_len)  # h: (B, n, 2H)
        s = torch.tanh(self.init_state(h_n[1]))  # s_0 from the backward state at x_1: (B, S)
        mask = padding_mask(src_len, src.shape[1])[:, None, :]  # (B, 1, n): True at real tokens
        state = {"s": s, "h": h, "mask": mask}
        if isinstance(self.score, AdditiveScore):
            state["Uh"] = self.score.precompute(h)  # U h_i does not depend on t: once per source
        return state

    # A replaceable part (attnlab.guard.parts): the exercises swap a student's decode_step in here.
    decode_step = staticmethod(decode_step)

    def step(self, state: State, y_prev: Tensor) -> StepOutput:
        y = self.tgt_emb(y_prev)  # y_{t-1}: (B, E)
        s, c, alpha = self.decode_step(state["s"], state["h"], y, self._score(state), self.decoder)
        logits = self.out(self.drop(torch.cat([s, c, y], dim=-1)))  # W_o [s_t; c_t; y_{t-1}]
        return StepOutput(logits, alpha[:, None, None, :], c, {**state, "s": s})

    def _score(self, state: State) -> Callable[[Tensor, Tensor], Tensor]:
        """e_{t,i} = score(s_{t-1}, h_i) for this batch, the padding hidden as masked_softmax
        hides it (:func:`attnlab.attention.mask_scores`): Bahdanau's step takes no mask, and
        whatever softmax it takes gives the padding alpha_{t,i} = 0."""
        score, mask = self.score, state["mask"]  # mask (B, 1, n): True at real source tokens
        if "Uh" in state and isinstance(score, AdditiveScore):
            score = partial(score, Uh=state["Uh"])  # U h_i, computed once per source
        return lambda query, key: mask_scores(score(query, key), mask)  # (B, 1, n)
