"""What the encoder's self-attention heads of a word Transformer look at, over the test split:
:func:`head_roles` counts, per layer and head, where each query's strongest weight falls
(the previous token, the token itself, the next, the first, the final <eos>, or elsewhere)
beside the same fractions by chance.
"""

from __future__ import annotations

import numpy as np
import torch

from attnlab.text.corpus import load_corpus
from attnlab.training.checkpoints import load

__all__ = ["ROLES", "head_roles"]

ROLES = ("previous", "self", "next", "first", "eos", "other")


def _role(i: int, j, n: int):
    """The role of key j (array) for query i in a source of n tokens (<eos> last)."""
    cases = [j == i - 1, j == i, (j == i + 1) & (j != n - 1), j == 0, j == n - 1]
    return np.select(cases, list(range(len(cases))), len(cases))


def _summary(frac: np.ndarray, chance: np.ndarray) -> str:
    """The role a head prefers most over chance, e.g. "previous 41% (chance 11%)"."""
    r = int(np.argmax(frac[:-1] / np.maximum(chance[:-1], 1e-9)))  # "other" excluded
    return f"{ROLES[r]} {frac[r]:.0%} (chance {chance[r]:.0%})"


def head_roles(model=None, pairs=None) -> dict:
    """Per encoder layer and head: the fraction of (string, query position) where the
    strongest self-attention weight falls on the previous token, itself, the next token,
    the first token, the final <eos>, or elsewhere (queries: the real tokens, <eos>
    excluded; the first matching role counts).  ``chance``: the same fractions if the
    strongest weight fell on a key drawn uniformly."""
    model = model or load("transformer-en-de")
    lang = "de" if model.card and model.card.get("task") == "en-de" else "fr"
    pairs = pairs if pairs is not None else load_corpus(lang)["test"]
    L, h = model.config.num_layers, model.config.num_heads
    counts, chance = np.zeros((L, h, len(ROLES))), np.zeros(len(ROLES))
    for en, _ in pairs:
        src = model.source_ids(model.prepare(en))  # (1, n)
        n = src.shape[1]
        with torch.no_grad():
            model.run_encoder(src, torch.tensor([n]))  # each attention keeps its weights
        w = torch.stack([lay.self_attn.alpha for lay in model.encoder_layers], 1)[0].numpy()
        for i in range(n - 1):  # query i (not the <eos>)
            role = _role(i, w[:, :, i].argmax(axis=-1), n)  # (L, h): role of the top key
            counts += np.eye(len(ROLES))[role]
            chance += np.bincount(_role(i, np.arange(n), n), minlength=len(ROLES)) / n
    frac = counts / counts.sum(axis=-1, keepdims=True)
    return {
        "model": model.card["name"] if model.card else model.kind,
        "roles": list(ROLES),
        "strings": len(pairs),
        "fractions": np.round(frac, 3).tolist(),  # (L, h, roles)
        "chance": np.round(chance / chance.sum(), 3).tolist(),  # (roles,)
        "summary": [
            [_summary(frac[lay, hd], chance / chance.sum()) for hd in range(h)] for lay in range(L)
        ],
    }
