"""Alpha against occlusion: is the source word alpha weighs most the one an output word depends
on?  :func:`occlusion` replaces each source word by <unk> in turn (teacher-forced, the output
kept fixed) and measures the drop of log p(y_t); :func:`alpha_vs_occlusion` compares its
argmax with alpha's over the test split, for RNNSearch (EN->FR), and keeps the clearest
counter-example.
"""

from __future__ import annotations

import numpy as np
import torch

from attnlab.decode import decode, read_back, source_lengths
from attnlab.experiments.language_examples import decoded_example, same_words
from attnlab.text.corpus import load_corpus
from attnlab.text.vocab import UNK, tokenize
from attnlab.training.checkpoints import load

__all__ = ["alpha_vs_occlusion", "occlusion"]


def _log_probs(model, src: torch.Tensor, ids: list[int]) -> np.ndarray:
    """log p(y_t | y_<t, x) of the output ``ids`` (teacher forced): (T,)."""
    with torch.no_grad():
        logits, _, _ = read_back(model, src, source_lengths(src, model.src_vocab.pad), [ids])
    logp = torch.log_softmax(logits[0, : len(ids)], dim=-1)
    return logp[torch.arange(len(ids)), ids].numpy()


def occlusion(model, text: str) -> dict:
    """For each output step t and source word i: the drop of log p(y_t) when word i is
    replaced by <unk> (the output kept fixed): (T, n - 1), and alpha (T, n)."""
    d = decode(model, text)
    src = model.source_ids(model.prepare(text))
    v = model.tgt_vocab
    ids = [v.stoi[w] for w in d.output_tokens]
    base = _log_probs(model, src, ids)
    drops = []
    for i in range(src.shape[1] - 1):
        masked = src.clone()
        masked[0, i] = model.src_vocab.unk
        drops.append(base - _log_probs(model, masked, ids))
    return {"decoding": d, "drop": np.stack(drops, axis=1), "alpha": d.alpha[0, 0]}


def alpha_vs_occlusion(model=None, pairs=None) -> dict:
    """How often alpha's argmax is the word whose occlusion hurts most, over the test split
    (and how often two picks at random would agree: ``chance``), and the clearest counter-example: a step whose output is a word of the reference, where
    alpha's favourite word barely matters (its occlusion costs < 0.1 nats) while another
    word's costs the most (> 1 nat); outputs equal to the reference first, then the largest
    lead of alpha's favourite over the word that matters.  Words read as <unk> are left out
    of the example (occluding them changes nothing)."""
    model = model or load("rnnsearch-en-fr")
    pairs = pairs if pairs is not None else load_corpus("fr")["test"]
    agree = total = 0
    chance = 0.0  # the agreement of two uniform random picks: 1/n per step
    best = None
    for en, ref in pairs:
        if len(tokenize(en)) < 2:
            continue
        o = occlusion(model, en)
        alpha = o["alpha"][:, :-1]  # (T, n - 1) without <eos>
        right = same_words(o["decoding"].text, ref)
        for t, word in enumerate(o["decoding"].output_tokens):
            a, k = int(alpha[t].argmax()), int(o["drop"][t].argmax())
            agree, total = agree + (a == k), total + 1
            chance += 1 / alpha.shape[1]
            gap = float(alpha[t, a] - alpha[t, k])  # how much more alpha gives the wrong word
            known = UNK not in (o["decoding"].source_tokens[a], o["decoding"].source_tokens[k])
            clear = known and a != k and o["drop"][t, a] < 0.1 and o["drop"][t, k] > 1.0
            clear = clear and word[0].isalpha() and word in tokenize(ref)  # a real word, right
            if clear and (best is None or (right, gap) > best[:2]):
                best = (right, gap, en, ref, t, a, k)
    result = {
        "agreement": round(agree / max(total, 1), 3),
        "chance": round(chance / max(total, 1), 3),
        "steps": total,
    }
    if best is not None:
        _, _, en, ref, t, a, k = best
        o = occlusion(model, en)
        result["example"] = {
            **decoded_example(model, en, ref),
            "step": t,
            "alpha_argmax": a,
            "occlusion_argmax": k,
            "occlusion": np.round(o["drop"], 3).tolist(),  # (T, n - 1) nats
        }
    return result
