r"""The word models' examples: English -> French and English -> German.

:func:`word_examples` turns a corpus (:func:`attnlab.text.corpus.load_corpus`) into what the
one training loop (:func:`attnlab.training.loop.fit`) trains on: a fresh model whose word
vocabularies come from the train split, the training pairs as padded tensors, and the dev
split's chrF (sacrebleu, :mod:`attnlab.training.evaluate`) as the held-out score;
:func:`test_scores` is what the model's card reports of the test split, beside two baselines.
The recipes are in :mod:`attnlab.training.config` (``default_configs(kind, "en-fr")``).

Vocabularies come from the train split only: English words seen at least
``src_min_count`` times (rarer ones are read as ``<unk>``, so the model learns what an
unknown word is), target words seen at least ``tgt_min_count`` times.

Unknown words (``copy_unknown``, the attention models; Luong et al. 2015): each target
word is aligned to the English word it translates (:func:`align_targets`: the same word, or
the word-by-word dictionary's translation of it), and a target word aligned to a word the
model reads as ``<unk>`` is learned as ``<unk>`` (:func:`encode_word_pairs`), and so is one
whose English word word dropout made ``<unk>``
(:func:`attnlab.training.batches.copy_targets`).  The model keeps the dictionary's entries
for the English words it cannot read (``model.unk_lexicon``, on its card), and
:func:`attnlab.decode.copy_unknown` writes, in place of each ``<unk>``, the entry of the
source word the decoder's attention weighs most, or that word itself.
"""

from __future__ import annotations

import torch

from attnlab.decode import source_row
from attnlab.models.base import Seq2SeqModel
from attnlab.models.registry import build_model
from attnlab.text.compounds import CompoundSplitter
from attnlab.text.vocab import JOINER, Vocab, tokenize
from attnlab.training.batches import Examples, padded_pairs
from attnlab.training.config import TrainConfig
from attnlab.training.evaluate import (
    Dictionary,
    copy_baseline,
    exact_match,
    score,
    translate_all,
    vocab_counts,
)

__all__ = [
    "align_targets",
    "baselines",
    "build_vocabs",
    "dev_chrf",
    "encode_word_pairs",
    "lexicon_pairs",
    "segmented",
    "test_scores",
    "unk_lexicon",
    "word_examples",
]


def build_vocabs(pairs: list[tuple[str, str]], cfg: TrainConfig) -> tuple[Vocab, Vocab]:
    """Word vocabularies of the training pairs (most frequent first, ties alphabetical)."""

    def vocab(texts: list[str], least: int) -> Vocab:
        counts = vocab_counts(texts)
        words = sorted((w for w, c in counts.items() if c >= least), key=lambda w: (-counts[w], w))
        return Vocab(words, level="word")

    src = vocab([en for en, _ in pairs], cfg.src_min_count)
    return src, vocab([t for _, t in pairs], cfg.tgt_min_count)


def align_targets(pairs: list[tuple[str, str]], table: dict[str, str]) -> list[list[int]]:
    """For each target word y_j of each pair, the position i of the English word x_i it
    translates: x_i == y_j, or table[x_i] == y_j (a word-by-word dictionary); the first such
    i not yet taken by an earlier y (else the first such), -1 when there is none."""
    out = []
    for en, tgt in pairs:
        xs, taken, row = tokenize(en), set(), []
        for y in tokenize(tgt):
            hits = [i for i, x in enumerate(xs) if y in (x, table.get(x))]
            i = next((i for i in hits if i not in taken), hits[0] if hits else -1)
            taken.add(i)
            row.append(i)
        out.append(row)
    return out


def encode_word_pairs(
    pairs: list[tuple[str, str]],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    align: list[list[int]] | None = None,
) -> dict:
    """Padded ids like :func:`attnlab.training.batches.encode_pairs`, unknown words as <unk>:
    src (N, n) = x_1..x_n <eos>, src_len (N,), tgt_in (N, T) = <sos> y.., tgt_out = y.. <eos>.

    ``align`` (:func:`align_targets`): a target word aligned to an English word outside
    ``src_vocab`` (read as <unk>) becomes <unk> too, so the model learns to write <unk>
    where it must look a word up or copy it; and ``align`` (N, T) is returned, padded with -1.
    """
    srcs = [source_row(src_vocab, en) for en, _ in pairs]
    tgts = [tgt_vocab.encode(t, unknown="unk") for _, t in pairs]
    if align is None:
        return padded_pairs(srcs, tgts, src_vocab, tgt_vocab)
    for k, (x, a) in enumerate(zip(srcs, align, strict=True)):
        unread = [i >= 0 and x[i] == src_vocab.unk for i in a]  # y_j's English word is <unk>
        tgts[k] = [tgt_vocab.unk if u else y for y, u in zip(tgts[k], unread, strict=True)]
    data = padded_pairs(srcs, tgts, src_vocab, tgt_vocab)
    data["align"] = torch.full(data["tgt_out"].shape, -1, dtype=torch.long)  # (N, T)
    for k, a in enumerate(align):
        data["align"][k, : len(a)] = torch.tensor(a, dtype=torch.long)
    return data


def segmented(pairs: list[tuple[str, str]], cfg: TrainConfig) -> list[tuple[str, str]]:
    """``pairs`` with each target's compounds split into parts (``cfg.split_compounds``,
    :class:`attnlab.text.compounds.CompoundSplitter` counting these targets' words), else as
    they are."""
    if not cfg.split_compounds:
        return pairs
    splitter = CompoundSplitter.from_texts(t for _, t in pairs)
    return [(en, splitter.segment(t)) for en, t in pairs]


def unk_lexicon(table: dict[str, str], src_vocab: Vocab) -> dict[str, str]:
    """The dictionary's entries for the English words ``src_vocab`` reads as <unk> (words
    seen too rarely in training), sorted: what a model's written <unk> becomes."""
    return {e: table[e] for e in sorted(table) if e not in src_vocab.stoi}


def lexicon_pairs(
    pairs: list[tuple[str, str]], least: int, dictionary: Dictionary | None = None
) -> list[tuple[str, str]]:
    """(English word, its translation) for each word seen >= ``least`` times in ``pairs``
    whose dictionary translation (IBM Model 1, :class:`attnlab.training.evaluate.Dictionary`, learned
    from ``pairs`` unless given) has t(f | e) >= 0.5, sorted; none when ``least`` is 0."""
    if least <= 0:
        return []
    counts, d = vocab_counts([en for en, _ in pairs]), dictionary or Dictionary(pairs)
    return sorted(
        (e, f)
        for e, f in d.table.items()
        if counts[e] >= least and d.prob[e] >= 0.5 and e.isalpha() and not f.endswith(JOINER)
    )


def baselines(corpus: dict) -> dict:
    """Test-split BLEU/chrF of copying the source and of the word-by-word dictionary."""
    src, ref = [en for en, _ in corpus["test"]], [t for _, t in corpus["test"]]
    dictionary = Dictionary(corpus["train"])
    return {
        "copy": score(copy_baseline(src), ref),
        "dictionary": score(dictionary.translate_all(src), ref),
    }


def word_examples(kind: str, cfg: TrainConfig, model_config: object, corpus: dict) -> Examples:
    """The untrained model (its ``unk_lexicon`` set), the encoded training pairs of
    ``corpus["train"]`` (and the dictionary's, ``cfg.lexicon_min``) and the dev chrF."""
    train_pairs = segmented(corpus["train"], cfg)
    dictionary = Dictionary(train_pairs)  # IBM Model 1, learned once: lexicon and alignment
    pairs = train_pairs + lexicon_pairs(train_pairs, cfg.lexicon_min, dictionary)
    src_vocab, tgt_vocab = build_vocabs(train_pairs, cfg)
    model = build_model(kind, src_vocab, tgt_vocab, model_config)
    align = None
    if cfg.copy_unknown:  # learn <unk> for a word it cannot read; look that word up
        align = align_targets(pairs, dictionary.table)
        model.unk_lexicon = unk_lexicon(dictionary.table, src_vocab)
    data = encode_word_pairs(pairs, src_vocab, tgt_vocab, align)
    return Examples(model, data, lambda m: dev_chrf(m, corpus["dev"]), "dev_chrf")


def dev_chrf(model: Seq2SeqModel, dev: list[tuple[str, str]]) -> float:
    """chrF of the model's greedy translations of ``dev``."""
    model.eval()
    return score(translate_all(model, [en for en, _ in dev]), [t for _, t in dev])["chrf"]


def test_scores(model: Seq2SeqModel, corpus: dict) -> dict:
    """What a word model's card reports: test BLEU and chrF with their signatures, the
    exact match (whole output right, token for token), the baselines, the corpus counts."""
    src, ref = [en for en, _ in corpus["test"]], [t for _, t in corpus["test"]]
    outputs = translate_all(model, src)
    test = score(outputs, ref)
    return {
        "tokens": "word",
        "unk_lexicon": model.unk_lexicon,  # rare English word -> its dictionary translation
        "corpus": {split: len(pairs) for split, pairs in corpus.items()},
        "heldout_accuracy": round(
            exact_match([tokenize(o) for o in outputs], [tokenize(r) for r in ref]), 4
        ),
        "test_bleu": test["bleu"],
        "test_chrf": test["chrf"],
        "test_examples": test["n"],
        "bleu_signature": test["bleu_signature"],
        "chrf_signature": test["chrf_signature"],
        "baselines": {k: {m: v[m] for m in ("bleu", "chrf")} for k, v in baselines(corpus).items()},
        "weights_dtype": "float16",
    }
