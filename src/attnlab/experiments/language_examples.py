"""The held-out examples the deck draws of the word models, each found by a rule (not picked
by hand) among the corpus's **test** strings, stored with its tokens and weights:

* :func:`word_order_example`: RNNSearch (EN->FR) translating a test string right (its output
  equals the reference, word for word) while its alpha crosses: an output word attends to a
  source word further *left* than the previous output word did (Bahdanau's Fig. 3: the
  adjective behind the noun, "available images" -> "images disponibles").
* :func:`verb_final_example`: the EN->DE Transformer writing the verb last where English has
  it first ("close all tabs" -> "alle tabs schließen"), and its cross-attention at that step.
* :func:`beam_against_greedy`: how many held-out strings beam search gets right that greedy
  decoding gets wrong, and the other way round.
* :func:`rare_words`: the EN->DE Transformer writing words it could not learn whole in
  several subword pieces ("Daten" "##träger"): counted over the test split, with the shortest
  string it translates right that holds a word of letters written in pieces.

The models read and write subword pieces (:mod:`attnlab.text.subwords`); the rules speak of
words, so each reads alpha per word (summed over a source word's pieces, averaged over an
output word's: :func:`attnlab.text.subwords.per_word`).  Each example is stored as
:func:`decoded_example` makes it: pieces and alpha, and the same per word.
"""

from __future__ import annotations

import numpy as np

from attnlab.decode import decode
from attnlab.text.corpus import load_corpus
from attnlab.text.subwords import per_word, word_spans
from attnlab.text.vocab import tokenize
from attnlab.training.checkpoints import load

__all__ = [
    "beam_against_greedy",
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
    """The two texts are the same words (tokens) in the same case, whatever their spacing."""
    return tokenize(a, lower=False) == tokenize(b, lower=False)


def _per_word(d, layer: int, head: int) -> tuple[list[str], list[str], np.ndarray]:
    """(output words, source words, alpha (words out, words in)) of one layer and head; the
    source's <eos> is a word of its own."""
    return per_word(d.alpha[layer, head], d.output_tokens, d.source_tokens)


def decoded_example(model, en: str, ref: str, layer: int = 0, head: int = 0) -> dict:
    """A held-out test string decoded, as the deck draws it: the texts, the pieces and the
    alpha (T, n) of one layer and head, and the same per word."""
    d = decode(model, en)
    alpha = d.alpha[layer, head]  # (T, n)
    out_words, src_words, alpha_words = _per_word(d, layer, head)
    return {
        "source": en,
        "reference": ref,
        "output": d.text,
        "source_tokens": d.source_tokens,
        "output_tokens": d.output_tokens,
        "alpha": np.round(alpha, 4).tolist(),
        "source_words": src_words,
        "output_words": out_words,
        "alpha_words": np.round(alpha_words, 4).tolist(),
        "split": "test",
        "held_out": True,
    }


def _words(text: str) -> int:
    return sum(t[0].isalpha() for t in tokenize(text))


def word_order_example(model=None, pairs=None) -> dict:
    """Bahdanau's Fig. 3 on a held-out string: among the test strings of 4 to 12 words and no
    placeholders that RNNSearch translates exactly right (word for word) while its alpha
    crosses (a later output word looks further left than an earlier one: a word-order swap),
    the longest, and among those the one whose alpha is the most decided (highest mean of
    each output word's largest weight)."""
    model = model or load("rnnsearch-en-fr")
    pairs = pairs if pairs is not None else load_corpus("fr")["test"]
    found = []
    for en, ref in pairs:
        if not 4 <= _words(en) <= 12 or "{" in en:
            continue
        d = decode(model, en)
        real = _per_word(d, 0, 0)[2][:, :-1]  # (words out, words in): without the <eos>
        if same_words(d.text, ref) and _crosses(_argmax_path(real)):
            found.append((_words(en), float(real.max(axis=1).mean()), en, ref))
    if not found:
        raise LookupError("no test string is translated right with crossing alpha")
    *_, en, ref = max(found)
    example = decoded_example(model, en, ref)
    example["candidates"] = len(found)
    return example


def beam_against_greedy(model=None, pairs=None, beam: int = 4) -> dict:
    """Greedy decoding against beam search of width ``beam`` on ``pairs`` (default: the EN->FR
    Transformer on the held-out packages): the strings each gets exactly right (word for word)
    where the other does not."""
    model = model or load("transformer-en-fr")
    pairs = pairs if pairs is not None else load_corpus("fr")["unseen"]
    beam_only = greedy_only = both = 0
    for en, ref in pairs:
        g = same_words(decode(model, en).text, ref)
        b = same_words(decode(model, en, beam=beam).text, ref)
        beam_only, greedy_only, both = beam_only + (b > g), greedy_only + (g > b), both + (g and b)
    return {"beam": beam, "strings": len(pairs), "beam_only": beam_only,
            "greedy_only": greedy_only, "both": both}  # fmt: skip


def _is_verb_final(en: str, de: str, output: str) -> bool:
    """The output is the reference word for word, and its last word is an infinitive
    (-en/-ern/-eln): the German verb at the end."""
    words = [w for w in tokenize(output) if w.isalpha()]
    return same_words(output, de) and len(words) >= 2 and words[-1].endswith(("en", "ern", "eln"))


def _last_letter_word(words: list[str]) -> int:
    """The position of the last word of letters (the German verb of a verb-final output)."""
    return max(i for i, w in enumerate(words) if w.isalpha())


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
        layer = d.alpha.shape[0] - 1
        views = [_per_word(d, layer, h) for h in range(d.alpha.shape[1])]
        t = _last_letter_word(views[0][0])  # the verb, a word of the output
        last = np.stack([v[2][t] for v in views])  # (h, words in)
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


def _pieced_words(pieces: list[str]) -> list[str]:
    """The words of letters that ``pieces`` spell in two or more pieces."""
    return [w for w, idx in word_spans(pieces) if len(idx) > 1 and w.isalpha()]


def rare_words(model=None, pairs=None) -> dict:
    """How the EN->DE Transformer writes words it could not learn whole, over the test split:
    a word of letters written in two or more subword pieces.  Counts the outputs that hold
    one, the words so written and how many of them are words of the reference, and keeps as
    the example a compound: among the strings of two or more English words translated right
    word for word into one German word written in pieces, the shortest, then the one in the
    fewest pieces."""
    model = model or load("transformer-en-de")
    pairs = pairs if pairs is not None else load_corpus("de")["test"]
    outputs = words = in_reference = 0
    found = []
    for en, ref in pairs:
        d = decode(model, en)
        pieced = _pieced_words(d.output_tokens)
        outputs += bool(pieced)
        words += len(pieced)
        in_reference += sum(w in set(tokenize(ref, lower=False)) for w in pieced)
        spans = [idx for w, idx in word_spans(d.output_tokens) if w.isalpha()]
        compound = len(spans) == 1 and len(spans[0]) > 1  # one German word, in pieces
        if compound and _words(en) >= 2 and same_words(d.text, ref):
            found.append((len(tokenize(en)), len(spans[0]), en, ref))
    if not found:
        raise LookupError("no test string is translated right into one word in pieces")
    *_, en, ref = min(found)
    layer = model.config.num_layers - 1
    example = decoded_example(model, en, ref, layer=layer)
    example.update(layer=layer, candidates=len(found))
    return {
        "example": example,
        "strings": len(pairs),
        "pieced_outputs": outputs,
        "pieced_words": words,
        "pieced_in_reference": in_reference,
    }
