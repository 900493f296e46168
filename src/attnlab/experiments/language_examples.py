"""The held-out examples the deck draws of the word models, each found by a rule (not picked
by hand) among the corpus's **test** strings, stored with its tokens and weights:

* :func:`word_order_example`: RNNSearch (EN->FR) translating a test string right (its output
  equals the reference, word for word) while its alpha crosses: an output word attends to a
  source word further *left* than the previous output word did (Bahdanau's Fig. 3, the
  noun-adjective swap "default cell type" -> "type de cellule par défaut").
* :func:`verb_final_example`: the EN->DE Transformer writing the verb last where English has
  it first ("close all tabs" -> "alle tabs schließen"), and its cross-attention at that step.
* :func:`rare_words`: the EN->DE Transformer writing a compound in parts ("datenträger@@
  details") and looking rare words up where alpha points: counted over the test split, with
  the shortest string it translates right that holds a compound in parts.

Each is stored as :func:`decoded_example` makes it.
"""

from __future__ import annotations

import numpy as np

from attnlab.decode import decode
from attnlab.text.corpus import load_corpus
from attnlab.text.vocab import JOINER, tokenize
from attnlab.training.checkpoints import load

__all__ = [
    "decoded_example",
    "rare_words",
    "same_words",
    "verb_final_example",
    "word_order_example",
]


def _argmax_path(alpha: np.ndarray) -> list[int]:
    """alpha (T, n) -> the source position each output step attends to most."""
    return [int(i) for i in alpha.argmax(axis=1)]


def _crosses(path: list[int]) -> bool:
    """True when some later output step attends further left than an earlier one."""
    return any(b < a for a, b in zip(path, path[1:], strict=False))


def same_words(a: str, b: str) -> bool:
    """The two texts are the same words (tokens), whatever their spacing and case."""
    return tokenize(a) == tokenize(b)


def decoded_example(model, en: str, ref: str, layer: int = 0, head: int = 0) -> dict:
    """A held-out test string decoded, as the deck draws it: the texts, the tokens and the
    alpha (T, n) of one layer and head."""
    d = decode(model, en)
    alpha = d.alpha[layer, head]  # (T, n)
    return {
        "source": en,
        "reference": ref,
        "output": d.text,
        "source_tokens": d.source_tokens,
        "output_tokens": d.output_tokens,
        "alpha": np.round(alpha, 4).tolist(),
        "split": "test",
        "held_out": True,
    }


def _words(text: str) -> int:
    return sum(t[0].isalpha() for t in tokenize(text))


def word_order_example(model=None, pairs=None) -> dict:
    """Bahdanau's Fig. 3 on a held-out string: among the test strings of 3 to 8 words that
    RNNSearch translates exactly right (word for word) while its alpha crosses (a later
    output word looks further left than an earlier one: a word-order swap) and every English
    token is some step's strongest weight, the one whose alpha is the most decided (highest
    mean of each step's largest weight)."""
    model = model or load("rnnsearch-en-fr")
    pairs = pairs if pairs is not None else load_corpus("fr")["test"]
    found = []
    for en, ref in pairs:
        if not 3 <= _words(en) <= 8:
            continue
        d = decode(model, en)
        real = d.alpha[0, 0][:, :-1]  # (T, n - 1): without the source <eos>
        path = _argmax_path(real)
        covered = len(set(path)) == real.shape[1]
        if same_words(d.text, ref) and _crosses(path) and covered:
            found.append((float(real.max(axis=1).mean()), en, ref))
    if not found:
        raise LookupError("no test string is translated right with crossing alpha")
    _, en, ref = max(found, key=lambda f: (f[0], f[1]))
    example = decoded_example(model, en, ref)
    example["candidates"] = len(found)
    return example


def _is_verb_final(en: str, de: str, output: str) -> bool:
    """The output is the reference word for word, and its last word is an infinitive
    (-en/-ern/-eln): the German verb at the end."""
    words = [w for w in tokenize(output) if w.isalpha()]
    return same_words(output, de) and len(words) >= 2 and words[-1].endswith(("en", "ern", "eln"))


def verb_final_example(model=None, pairs=None) -> dict:
    """A German verb moving to the end: among the test strings of 3 or more English words
    that the EN->DE Transformer translates exactly right, ending in the verb, those where a
    cross-attention head of the last layer looks hardest at the first English word (the
    English verb) while writing the German verb; the one with the largest such weight."""
    model = model or load("transformer-en-de")
    pairs = pairs if pairs is not None else load_corpus("de")["test"]
    found = []
    for en, ref in pairs:
        if _words(en) < 3:
            continue
        d = decode(model, en)
        if not _is_verb_final(en, ref, d.text):
            continue
        t = max(i for i, w in enumerate(d.output_tokens) if w.isalpha())  # the verb's step
        last = d.alpha[-1, :, t]  # (h, n)
        heads = [h for h in range(last.shape[0]) if int(last[h].argmax()) == 0]
        if heads:
            best = max(heads, key=lambda h: last[h, 0])
            found.append((float(last[best, 0]), en, ref, best, t))
    if not found:
        raise LookupError("no verb-final test string found")
    _, en, ref, head, t = max(found, key=lambda f: (f[0], f[1]))
    layer = model.config.num_layers - 1
    example = decoded_example(model, en, ref, layer=layer, head=head)
    example.update(layer=layer, head=head, verb_step=t, candidates=len(found))
    d = decode(model, en)
    example["cross_all"] = np.round(d.alpha, 4).tolist()  # (L, h, T, n)
    return example


def rare_words(model=None, pairs=None) -> dict:
    """How the EN->DE Transformer writes words it could not learn whole, over the test split:
    compounds written in parts (an output token ending in "@@", :mod:`attnlab.text.compounds`)
    and <unk> written, then looked up where alpha points (``Decoding.copied``).  Counts each
    (and how often the word it gave is in the reference), and keeps as the example the
    shortest string of two or more English words translated right word for word whose
    output holds a compound in parts (a part of letters only: not a hyphen's cut)."""
    model = model or load("transformer-en-de")
    pairs = pairs if pairs is not None else load_corpus("de")["test"]
    compounds = looked_up = looked_up_right = 0
    found = []
    for en, ref in pairs:
        d = decode(model, en)
        parts = any(t.endswith(JOINER) for t in d.output_tokens)
        compounds += parts
        ref_words = set(tokenize(ref))
        for token, copied in zip(d.output_tokens, d.copied, strict=True):
            looked_up += copied
            looked_up_right += copied and token in ref_words
        compound = any(t.endswith(JOINER) and t[: -len(JOINER)].isalpha() for t in d.output_tokens)
        if compound and _words(en) >= 2 and same_words(d.text, ref):
            found.append((len(tokenize(en)), en, ref))
    if not found:
        raise LookupError("no test string is translated right with a compound in parts")
    _, en, ref = min(found)
    layer = model.config.num_layers - 1
    example = decoded_example(model, en, ref, layer=layer)
    example.update(layer=layer, candidates=len(found))
    return {
        "example": example,
        "strings": len(pairs),
        "compound_outputs": compounds,
        "looked_up": looked_up,
        "looked_up_in_reference": looked_up_right,
    }
