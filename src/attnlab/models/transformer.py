r"""A tiny Transformer encoder-decoder (Vaswani et al. 2017) built from the attention core.

Every attention here is :class:`attnlab.attention.MultiHeadAttention`
(MultiHead(Q, K, V) = Concat(head_1..head_h) W^O, head_i = softmax(Q W_i^Q (K W_i^K)^T /
sqrt(d_k)) V W_i^V), and positions are :func:`attnlab.attention.positional_encoding`.

Encoder layer:  x <- x + SelfAttn(LN(x));   x <- x + FFN(LN(x))
Decoder layer:  y <- y + MaskedSelfAttn(LN(y));   y <- y + CrossAttn(LN(y), memory);
                y <- y + FFN(LN(y))

Two choices differ from the paper: LayerNorm *before* each sub-layer (pre-LN: trains with a
short warm-up or none, Xiong et al. 2020), and, unless the embeddings are tied to the output
layer, embeddings not multiplied by sqrt(d_model) (untied embeddings start at unit scale, and
at d_model = 64 the factor 8 drowns the positional encoding); tied ones start at std
d_model^-0.5 and are scaled, as in the paper (its section 3.4).  Dropout as in the paper's "residual
dropout" (P_drop): on each sub-layer's output before it is added, and on the sum of the
embeddings and the positional encoding; 0 (no dropout) unless the config says otherwise
(the date models have none, the real-language ones need it: a few thousand sentences).

As in the Annotated Transformer, ``forward`` returns the logits only, and every attention
keeps the weights of its last call (``layer.self_attn.alpha``, ``layer.cross_attn.alpha``):
:meth:`Transformer.kept_weights` stacks them, :meth:`Transformer.attention_weights` reads them
after decoding a text.

Decoding (``start`` / ``step``) keeps a KV cache (:class:`attnlab.attention.KVCache`): at
step t the decoder reads only y_{t-1}, computes this position's K_t, V_t in every masked
self-attention and appends them to the cache, and lets this position's query attend to all
cached K, V; the cross-attentions' K, V of the memory are made once, at ``start``.  Position
t never sees a later one (the causal mask), so this gives the same outputs as re-running the
whole prefix, which ``Transformer.kv_cache = False`` still does (for comparison).
Shapes: B batch, n source length, T target length, d = d_model, h heads, L layers, d_k = d / h.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from attnlab.attention import (
    KVCache,
    MultiHeadAttention,
    causal_mask,
    padding_mask,
    positional_encoding,
)
from attnlab.decode import decode
from attnlab.models.base import Seq2SeqModel, State, StepOutput
from attnlab.text.vocab import EOS, Vocab

__all__ = ["TransformerConfig", "Transformer", "EncoderLayer", "DecoderLayer"]


@dataclass
class TransformerConfig:
    d_model: int = 64  # d: width of every token vector
    num_heads: int = 4  # h: heads per attention (d_k = d / h)
    num_layers: int = 2  # L: encoder layers, and as many decoder layers
    d_ff: int = 256  # hidden width of the position-wise feed-forward network
    max_src_len: int = 32  # characters read (before <eos>)
    max_tgt_len: int = 12  # characters written (before <eos>)
    dropout: float = 0.0  # P_drop: residual dropout while training (the paper: 0.1)
    # One matrix E for both embeddings and the output layer (Vaswani et al. 3.4; one
    # vocabulary for both sides): logits = y E^T, and E's rows multiplied by sqrt(d_model).
    tie_embeddings: bool = False


def _ffn(d: int, d_ff: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d, d_ff), nn.ReLU(), nn.Linear(d_ff, d))  # FFN(x)


class EncoderLayer(nn.Module):
    """x <- x + SelfAttn(LN(x)); x <- x + FFN(LN(x)).  The weights stay on ``self_attn.alpha``."""

    def __init__(self, d: int, h: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.ln1, self.self_attn = nn.LayerNorm(d), MultiHeadAttention(d, h)
        self.ln2, self.ffn = nn.LayerNorm(d), _ffn(d, d_ff)
        self.drop = nn.Dropout(dropout)  # P_drop on each sub-layer's output (training only)

    def forward(self, x: Tensor, src_mask: Tensor) -> Tensor:
        """x (B, n, d), src_mask (B, 1, n) -> x (B, n, d)."""
        z = self.ln1(x)
        x = x + self.drop(self.self_attn(z, z, z, src_mask))  # every token sees every real one
        return x + self.drop(self.ffn(self.ln2(x)))


class DecoderLayer(nn.Module):
    """y <- y + MaskedSelfAttn(LN(y)); y <- y + CrossAttn(LN(y), memory); y <- y + FFN(LN(y)).

    The weights stay on ``self_attn.alpha`` (B, h, T, T) and ``cross_attn.alpha`` (B, h, T, n).
    """

    def __init__(self, d: int, h: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.ln1, self.self_attn = nn.LayerNorm(d), MultiHeadAttention(d, h)
        self.ln2, self.cross_attn = nn.LayerNorm(d), MultiHeadAttention(d, h)
        self.ln3, self.ffn = nn.LayerNorm(d), _ffn(d, d_ff)
        self.drop = nn.Dropout(dropout)  # P_drop on each sub-layer's output (training only)

    def forward(self, y: Tensor, memory: Tensor, src_mask: Tensor) -> Tensor:
        """y (B, T, d), memory (B, n, d), src_mask (B, 1, n) -> y (B, T, d)."""
        z = self.ln1(y)
        y = y + self.drop(self.self_attn(z, z, z, causal_mask(y.shape[1])))  # y_t: y_1..y_t
        z = self.ln2(y)
        y = y + self.drop(self.cross_attn(z, memory, memory, src_mask))  # Q: y, K = V = memory
        return y + self.drop(self.ffn(self.ln3(y)))

    def step(
        self, y_t: Tensor, self_kv: KVCache, memory_kv: KVCache, src_mask: Tensor
    ) -> tuple[Tensor, KVCache]:
        """:meth:`forward` for one new position t, with a KV cache.

        y_t (B, 1, d); self_kv: K_1..K_{t-1}, V_1..V_{t-1} of this layer's self-attention
        (B, h, t - 1, d_k); memory_kv: K, V of the memory (B, h, n, d_k), made at ``start``.
        Returns y_t (B, 1, d) and self_kv with this position's K_t, V_t appended.
        """
        z = self.ln1(y_t)
        new = self.self_attn.keys_values(z, z)  # this position's K_t, V_t: (B, h, 1, d_k)
        self_kv = self_kv.append(new.K, new.V)  # K_1..K_t, V_1..V_t: (B, h, t, d_k)
        sees = causal_mask(self_kv.K.shape[-2])[-1:]  # row t of the causal mask: y_1..y_t (1, t)
        y_t = y_t + self.drop(self.self_attn.attend(z, self_kv, sees))  # q_t over K_1..K_t
        z = self.ln2(y_t)
        y_t = y_t + self.drop(self.cross_attn.attend(z, memory_kv, src_mask))  # q_t over memory
        return y_t + self.drop(self.ffn(self.ln3(y_t))), self_kv


class Transformer(Seq2SeqModel):
    """Encoder-decoder Transformer; ``forward`` gives logits, every attention keeps its weights."""

    kind = "transformer"
    #: Decode with a KV cache; False re-runs the decoder on the whole prefix at every step
    #: (the same outputs, O(t) times the work at step t: kept to compare against).
    kv_cache: bool = True

    def __init__(self, src_vocab: Vocab, tgt_vocab: Vocab, config: TransformerConfig | None = None):
        config = config or TransformerConfig()
        super().__init__(src_vocab, tgt_vocab, config.max_src_len, config.max_tgt_len)
        self.config = config
        d, h, L, d_ff = config.d_model, config.num_heads, config.num_layers, config.d_ff
        self.src_emb = nn.Embedding(len(src_vocab), d, padding_idx=src_vocab.pad)
        self.tgt_emb = nn.Embedding(len(tgt_vocab), d, padding_idx=tgt_vocab.pad)
        p = config.dropout
        self.encoder_layers = nn.ModuleList(EncoderLayer(d, h, d_ff, p) for _ in range(L))
        self.decoder_layers = nn.ModuleList(DecoderLayer(d, h, d_ff, p) for _ in range(L))
        self.drop = nn.Dropout(p)
        self.enc_ln, self.dec_ln = nn.LayerNorm(d), nn.LayerNorm(d)
        self.out = nn.Linear(d, len(tgt_vocab))
        if config.tie_embeddings:
            if src_vocab != tgt_vocab:
                raise ValueError("tied embeddings need one vocabulary for both sides")
            nn.init.normal_(self.src_emb.weight, std=d**-0.5)  # logits y E^T of unit scale
            with torch.no_grad():
                self.src_emb.weight[src_vocab.pad].zero_()  # <pad> embeds to 0
            self.tgt_emb = self.src_emb  # E: one matrix, three uses
            self.out.weight = self.src_emb.weight

    def _embed(self, emb: nn.Embedding, ids: Tensor, first: int = 0) -> Tensor:
        """ids (B, n) at positions first..first + n - 1 -> token + PE[pos]: (B, n, d)
        (tied: sqrt(d) E[ids] + PE, Vaswani et al. 3.4)."""
        n, d = ids.shape[1], self.config.d_model
        x = emb(ids) * d**0.5 if self.config.tie_embeddings else emb(ids)
        return self.drop(x + positional_encoding(first + n, d)[first:])

    # ---------------------------------------------------------------- the two stacks
    def run_encoder(self, src: Tensor, src_len: Tensor) -> tuple[Tensor, Tensor]:
        """The encoder stack: src (B, n) -> memory (B, n, d), src_mask (B, 1, n)."""
        src_mask = padding_mask(src_len, src.shape[1])[:, None, :]  # (B, 1, n)
        x = self._embed(self.src_emb, src)
        for layer in self.encoder_layers:  # each block a replaceable part (attnlab.guard.parts)
            x = layer(x, src_mask)
        return self.enc_ln(x), src_mask

    def run_decoder(self, tgt_in: Tensor, memory: Tensor, src_mask: Tensor) -> Tensor:
        """The decoder stack on the memory: tgt_in (B, T) -> logits (B, T, V)."""
        y = self._embed(self.tgt_emb, tgt_in)
        for layer in self.decoder_layers:
            y = layer(y, memory, src_mask)
        return self.out(self.dec_ln(y))

    def forward(self, src: Tensor, src_len: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher forcing, all T positions at once: src (B, n), tgt_in (B, T) -> (B, T, V)."""
        memory, src_mask = self.run_encoder(src, src_len)
        return self.run_decoder(tgt_in, memory, src_mask)

    def kept_weights(self) -> dict[str, Tensor]:
        """The weights every attention kept from the last forward pass, every layer and head.

        ``encoder_self`` (B, L, h, n, n), ``decoder_self`` (B, L, h, T, T), ``cross``
        (B, L, h, T, n).
        """
        if self.decoder_layers[0].cross_attn.alpha is None:
            raise ValueError("no weights kept yet: run the model (a forward pass or a decoding)")
        return {
            "encoder_self": torch.stack([lay.self_attn.alpha for lay in self.encoder_layers], 1),
            "decoder_self": torch.stack([lay.self_attn.alpha for lay in self.decoder_layers], 1),
            "cross": torch.stack([lay.cross_attn.alpha for lay in self.decoder_layers], 1),
        }

    # ---------------------------------------------------------------- decoding protocol
    def start(self, src: Tensor, src_len: Tensor) -> State:
        """Encode; with ``kv_cache``, also make every decoder layer's cross-attention K, V of
        the memory and an empty self-attention cache (state keys "cross.0.K", "self.0.V"...)."""
        memory, src_mask = self.run_encoder(src, src_len)
        if not self.kv_cache:
            prefix = torch.zeros(src.shape[0], 0, dtype=torch.long)  # y_0..y_{t-1} so far
            return {"memory": memory, "src_mask": src_mask, "prefix": prefix}
        B, h = src.shape[0], self.config.num_heads
        state = {"src_mask": src_mask}
        for i, layer in enumerate(self.decoder_layers):
            cross = layer.cross_attn.keys_values(memory, memory)  # (B, h, n, d_k), once
            none_yet = memory.new_zeros(B, h, 0, layer.self_attn.d_k)  # nothing read: t = 0
            state |= _cache_entries(f"cross.{i}", cross)
            state |= _cache_entries(f"self.{i}", KVCache(none_yet, none_yet))
        return state

    def step(self, state: State, y_prev: Tensor) -> StepOutput:
        """Read y_{t-1} (B,) at position t: logits (B, V), cross-attention (B, L, h, n)."""
        if "prefix" in state:
            return self._step_rereading(state, y_prev)
        t = state["self.0.K"].shape[-2]  # positions already read (0-based position of y_prev)
        y = self._embed(self.tgt_emb, y_prev[:, None], first=t)  # (B, 1, d)
        after = {"src_mask": state["src_mask"]}
        for i, layer in enumerate(self.decoder_layers):
            memory_kv = _cached(state, f"cross.{i}")
            y, self_kv = layer.step(y, _cached(state, f"self.{i}"), memory_kv, state["src_mask"])
            after |= _cache_entries(f"cross.{i}", memory_kv) | _cache_entries(f"self.{i}", self_kv)
        logits = self.out(self.dec_ln(y))[:, 0]  # (B, V)
        alpha = torch.stack([lay.cross_attn.alpha[:, :, -1] for lay in self.decoder_layers], 1)
        return StepOutput(logits, alpha, None, after)  # alpha (B, L, h, n)

    def _step_rereading(self, state: State, y_prev: Tensor) -> StepOutput:
        """No KV cache: the decoder re-reads its whole prefix y_0..y_{t-1} at every step."""
        prefix = torch.cat([state["prefix"], y_prev[:, None]], dim=1)  # (B, t)
        logits = self.run_decoder(prefix, state["memory"], state["src_mask"])  # (B, t, V)
        alpha = torch.stack([lay.cross_attn.alpha[:, :, -1] for lay in self.decoder_layers], 1)
        return StepOutput(logits[:, -1], alpha, None, {**state, "prefix": prefix})  # (B, L, h, n)

    def alignments(
        self, src: Tensor, src_len: Tensor, tgt_in: Tensor
    ) -> tuple[Tensor, Tensor, None]:
        """One teacher-forced pass: logits (B, T, V), cross-attention (B, L, h, T, n), None."""
        logits = self(src, src_len, tgt_in)
        return logits, self.kept_weights()["cross"], None

    # ---------------------------------------------------------------- for the widgets
    def attention_weights(self, text: str) -> dict:
        """Every attention weight for ``text`` and the model's greedy output.

        Returns a dict of numpy arrays: ``encoder_self`` (L, h, n, n), ``decoder_self``
        (L, h, T, T), ``cross`` (L, h, T, n), where T counts the output tokens plus the final
        <eos> step; and the labels ``source_tokens`` (n) and ``output_tokens`` (T).  Read from
        the attentions after :func:`attnlab.decode.decode`, whose last pass reads the whole
        output (the <eos> step included).
        """
        decoding = decode(self, text)
        return {
            **{key: w[0].numpy() for key, w in self.kept_weights().items()},  # drop the batch axis
            "source_tokens": decoding.source_tokens,
            "output_tokens": [*decoding.output_tokens, EOS],
        }

    def encoder_qk(self, text: str, layer: int, head: int) -> tuple[np.ndarray, np.ndarray]:
        """Q and K (each (n_src, d_k), numpy) of encoder self-attention ``layer``, ``head``.

        softmax(Q K^T / sqrt(d_k)) of these equals ``attention_weights(text)["encoder_self"]
        [layer, head]`` (:meth:`encoder_qkv`).
        """
        h = self.config.num_heads
        if not (isinstance(head, int) and 0 <= head < h):
            raise ValueError(f"head must be an int in 0..{h - 1}; got {head!r}")
        Q, K, _ = self.encoder_qkv(text, layer)
        return Q[head].copy(), K[head].copy()

    def encoder_qkv(self, text: str, layer: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Q, K and V of encoder self-attention ``layer``, every head: each (h, n_src, d_k).

        The input z = LN(x) of that attention is caught while :func:`attnlab.decode.decode`
        runs, then projected by the layer's own W^Q, W^K, W^V and split into heads.
        """
        L = self.config.num_layers
        if not (isinstance(layer, int) and 0 <= layer < L):
            raise ValueError(f"layer must be an int in 0..{L - 1}; got {layer!r}")
        attn = self.encoder_layers[layer].self_attn
        inputs = []  # z = LN(x) of each call of that attention: (1, n, d)
        hook = attn.register_forward_pre_hook(lambda _, args: inputs.append(args[0]))
        try:
            decode(self, text)
        finally:
            hook.remove()
        z = inputs[0]  # the first encoder pass of this decoding (the read-back's is the same)
        with torch.no_grad():  # Q = z W^Q, split into heads: (h, n, d_k); K and V alike
            Q, K, V = (attn.split_heads(w(z))[0].numpy() for w in (attn.W_q, attn.W_k, attn.W_v))
        return Q, K, V


def _cached(state: State, name: str) -> KVCache:
    """The KV cache ``name`` ("self.0", "cross.1", ...) of a decoder state."""
    return KVCache(state[f"{name}.K"], state[f"{name}.V"])


def _cache_entries(name: str, cache: KVCache) -> State:
    """A KV cache as decoder-state entries: tensors with the batch first, which beam search
    reorders with the rest of the state (the cache follows its beam)."""
    return {f"{name}.K": cache.K, f"{name}.V": cache.V}
