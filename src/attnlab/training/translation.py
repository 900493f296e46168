r"""The real-language models' examples: English -> French and English -> German.

:func:`word_examples` turns a corpus (:func:`attnlab.text.corpus.load_corpus`) into what the
one training loop (:func:`attnlab.training.loop.fit`) trains on: a fresh model reading and
writing one subword vocabulary (:func:`subword_vocab`, learned from the train split only),
the training pairs as padded tensors (:func:`attnlab.training.batches.encode_pairs`), and the chrF of the first dev pairs
(sacrebleu, :mod:`attnlab.training.evaluate`) as the held-out score; :func:`test_scores` is
what the model's card reports of the test split, beside two baselines.  The recipes are in
:mod:`attnlab.training.config` (``default_configs(kind, "en-fr")``).

Nothing is unknown to a subword model (byte fallback), so there is no ``<unk>`` to copy or
look up, and a German compound is written in pieces like any rare word: the word models
that came before needed both (a dictionary lookup for ``<unk>``, a compound splitter), and
the subword models, without them, score better on the held-out packages (README).
"""

from __future__ import annotations

from attnlab.models.base import Seq2SeqModel
from attnlab.models.registry import build_model
from attnlab.text.subwords import train_subwords
from attnlab.text.vocab import Vocab
from attnlab.training.batches import Examples, encode_pairs
from attnlab.training.config import TrainConfig
from attnlab.training.evaluate import Dictionary, copy_baseline, exact_match, score, translate_all

__all__ = [
    "baselines",
    "dev_chrf",
    "subword_vocab",
    "test_scores",
    "word_examples",
]


def baselines(corpus: dict) -> dict:
    """Test-split BLEU/chrF of copying the source and of the word-by-word dictionary
    (learned from the training split with the words as written: scores are cased)."""
    src, ref = [en for en, _ in corpus["test"]], [t for _, t in corpus["test"]]
    dictionary = Dictionary(corpus["train"], cased=True)
    return {
        "copy": score(copy_baseline(src), ref),
        "dictionary": score(dictionary.translate_all(src), ref),
    }


def subword_vocab(pairs: list[tuple[str, str]], size: int) -> Vocab:
    """One subword vocabulary of ``size`` pieces for both sides, learned from the English
    and the translations of ``pairs`` (joint BPE, Sennrich et al. 2016: a name or a number
    is cut into the same pieces on both sides, so it can be copied piece by piece)."""
    return Vocab.subwords(train_subwords([t for pair in pairs for t in pair], size))


def word_examples(kind: str, cfg: TrainConfig, model_config: object, corpus: dict) -> Examples:
    """The untrained model (one vocabulary of ``cfg.subwords`` pieces), the encoded training
    pairs of ``corpus["train"]`` and the chrF of the first ``cfg.n_valid`` dev pairs."""
    if cfg.subwords < 1:
        raise ValueError("a real-language recipe needs subwords >= 1 (pieces per vocabulary)")
    vocab = subword_vocab(corpus["train"], cfg.subwords)
    model = build_model(kind, vocab, vocab, model_config)
    data = encode_pairs(corpus["train"], vocab, vocab)
    dev = corpus["dev"][: cfg.n_valid]  # the first n_valid dev pairs, measured in training
    return Examples(model, data, lambda m: dev_chrf(m, dev), "dev_chrf")


def dev_chrf(model: Seq2SeqModel, dev: list[tuple[str, str]]) -> float:
    """chrF of the model's greedy translations of ``dev``."""
    model.eval()
    return score(translate_all(model, [en for en, _ in dev]), [t for _, t in dev])["chrf"]


def test_scores(model: Seq2SeqModel, corpus: dict) -> dict:
    """What a real-language model's card reports: test BLEU and chrF with their signatures,
    the exact match (whole output right, cased), the baselines, the corpus counts."""
    src, ref = [en for en, _ in corpus["test"]], [t for _, t in corpus["test"]]
    outputs = translate_all(model, src)
    test = score(outputs, ref)
    return {
        "tokens": model.src_vocab.level,
        "corpus": {split: len(pairs) for split, pairs in corpus.items()},
        "heldout_accuracy": round(
            exact_match([o.split() for o in outputs], [r.split() for r in ref]), 4
        ),
        "test_bleu": test["bleu"],
        "test_chrf": test["chrf"],
        "test_examples": test["n"],
        "bleu_signature": test["bleu_signature"],
        "chrf_signature": test["chrf_signature"],
        "baselines": {k: {m: v[m] for m in ("bleu", "chrf")} for k, v in baselines(corpus).items()},
        "weights_dtype": "float16",
    }
