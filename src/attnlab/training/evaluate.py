r"""Scoring outputs: exact match and token accuracy, a model's held-out scores; for the
real-language corpus, sacrebleu's BLEU and chrF and two baselines.

    >>> from attnlab.training.evaluate import score, copy_baseline, Dictionary
    >>> score(["Fermer tous les onglets"], ["Fermer tous les onglets"])["bleu"]
    100.0

* :func:`exact_match`: the fraction of outputs that are exactly their reference, token for
  token; :func:`token_accuracy`: the fraction of the references' tokens matched at their
  position.
* :func:`evaluate`: both, of a model's greedy outputs on the pairs of a generated task.
* :func:`score`: corpus BLEU and chrF (sacrebleu, lower-cased: our models write lower-case;
  every system is scored the same way), with sacrebleu's signatures.
* :func:`copy_baseline`: the output is the English source itself.
* :class:`Dictionary`: a word-by-word dictionary learned from the training split (IBM Model 1,
  Brown et al. 1993: five EM rounds of t(f | e)), each English word replaced by its most
  probable translation, in the English order; a word it never saw is copied.
* :func:`translate_all`: a model's greedy outputs for many texts at once (batched), a word
  model's ``<unk>`` replaced by the source word its attention weighs most.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from attnlab.decode import decode_batch, translate_batch
from attnlab.models.base import Seq2SeqModel
from attnlab.text.vocab import detokenize, normalise, tokenize

__all__ = [
    "Dictionary",
    "copy_baseline",
    "evaluate",
    "exact_match",
    "score",
    "signatures",
    "token_accuracy",
    "translate_all",
]


def exact_match(outputs: Sequence[Sequence], references: Sequence[Sequence]) -> float:
    """The fraction of ``outputs`` (each a sequence of tokens or ids) exactly equal to their
    reference: the whole output right."""
    right = sum(list(o) == list(r) for o, r in zip(outputs, references, strict=True))
    return right / max(1, len(references))


def token_accuracy(outputs: Sequence[Sequence], references: Sequence[Sequence]) -> float:
    """The right tokens at the right positions, over the references' tokens."""
    pairs = zip(outputs, references, strict=True)
    right = sum(a == b for o, r in pairs for a, b in zip(o, r, strict=False))
    return right / max(1, sum(len(r) for r in references))


def evaluate(
    model: Seq2SeqModel, pairs: Sequence[tuple[str, str]], batch_size: int = 1000
) -> dict[str, float]:
    """Greedy :func:`exact_match` (whole output right) and :func:`token_accuracy` of a model
    of a generated task on ``pairs`` (source, target), decoded ``batch_size`` at a time.

    The sources are read as training reads them (normalised, an unknown character as <unk>,
    any length), not refused as :meth:`Seq2SeqModel.prepare` would refuse typed text.
    """
    texts = [normalise(source, model.src_vocab) for source, _ in pairs]
    outputs: list[list[int]] = []
    for i in range(0, len(texts), batch_size):
        outputs += decode_batch(model, texts[i : i + batch_size], read=False).outputs
    references = [model.tgt_vocab.encode(target) for _, target in pairs]
    return {
        "exact_match": exact_match(outputs, references),
        "token_accuracy": token_accuracy(outputs, references),
    }


def _metrics():
    from sacrebleu.metrics import BLEU, CHRF  # imported when scoring (0.2 s)

    return BLEU(), CHRF()  # sacrebleu's defaults: cased, 13a; chrF nc=6, nw=0


def signatures() -> dict[str, str]:
    """sacrebleu's signatures of the two metrics as :func:`score` computes them."""
    return {k: v for k, v in score(["a"], ["a"]).items() if k.endswith("signature")}


def score(hypotheses: Sequence[str], references: Sequence[str]) -> dict:
    """Corpus BLEU and chrF of ``hypotheses`` against one reference each (cased)."""
    if len(hypotheses) != len(references) or not references:
        raise ValueError(
            f"need as many hypotheses as references (got {len(hypotheses)}, "
            f"{len(references)}), at least one"
        )
    bleu, chrf = _metrics()
    refs = [list(references)]
    b, c = bleu.corpus_score(list(hypotheses), refs), chrf.corpus_score(list(hypotheses), refs)
    return {
        "bleu": round(b.score, 2),
        "chrf": round(c.score, 2),
        "n": len(references),
        "bleu_signature": str(bleu.get_signature()),
        "chrf_signature": str(chrf.get_signature()),
    }


def copy_baseline(sources: Sequence[str]) -> list[str]:
    """The first baseline: 'translate' by copying the English."""
    return list(sources)


class Dictionary:
    """A word-by-word dictionary learned from parallel text by IBM Model 1.

    t(f | e) starts uniform and is re-estimated ``rounds`` times by EM over every pair
    (each target word f is explained by the English words e of its pair, NULL included):
    count(f, e) += t(f|e) / sum_e' t(f|e').  Each English word then translates to
    argmax_f t(f | e).
    """

    def __init__(self, pairs: Sequence[tuple[str, str]], rounds: int = 5, cased: bool = False):
        self.cased = cased  # learned on the words as written ("Datei"), else lower-cased
        data = [([None, *tokenize(en, not cased)], tokenize(tgt, not cased)) for en, tgt in pairs]
        t: dict = defaultdict(lambda: 1.0)  # t(f | e), uniform at first
        for _ in range(rounds):
            count: dict = defaultdict(float)
            total: dict = defaultdict(float)
            for es, fs in data:
                for f in fs:
                    z = sum(t[(f, e)] for e in es)
                    for e in es:
                        c = t[(f, e)] / z
                        count[(f, e)] += c
                        total[e] += c
            t = defaultdict(float, {(f, e): c / total[e] for (f, e), c in count.items()})
        best: dict[str, tuple[float, str]] = {}
        for (f, e), p in t.items():
            if e is not None and p > best.get(e, (0.0, ""))[0]:
                best[e] = (p, f)
        self.table = {e: f for e, (_, f) in best.items()}
        self.prob = {e: p for e, (p, _) in best.items()}  # t(table[e] | e)
        # cased: a word seen only otherwise written ("Save" at the start, "save" inside)
        self.folded = {e.lower(): f for e, f in sorted(self.table.items(), key=lambda x: x[0])}

    def __len__(self) -> int:
        return len(self.table)

    def translate(self, text: str) -> str:
        """Each word replaced by its dictionary entry (unknown words copied), same order;
        cased: a word not seen as written is looked up lower-cased."""
        if not self.cased:
            return detokenize([self.table.get(w, w) for w in tokenize(text)])
        words = tokenize(text, lower=False)
        return detokenize([self.table.get(w, self.folded.get(w.lower(), w)) for w in words])

    def translate_all(self, texts: Sequence[str]) -> list[str]:
        return [self.translate(x) for x in texts]


def translate_all(model: Seq2SeqModel, texts: Sequence[str], batch_size: int = 32) -> list[str]:
    """Greedy translations of ``texts``, batched (:func:`attnlab.decode.translate_batch`: the
    outputs of ``model.translate``); each
    text read as :meth:`Seq2SeqModel.prepare` would, a text the model refuses gives "".

    A batch decodes until its longest output ends, and the Transformer reads its whole prefix
    again at every step: in a big batch most rows wait for the slowest, so small batches are
    faster (the outputs do not depend on the batch size).
    """
    out: list[str] = [""] * len(texts)
    readable = []
    for i, text in enumerate(texts):
        try:
            readable.append((i, model.prepare(text)))
        except ValueError:
            continue
    for k in range(0, len(readable), batch_size):
        chunk = readable[k : k + batch_size]
        for (i, _), text in zip(chunk, translate_batch(model, [p for _, p in chunk]), strict=True):
            out[i] = text
    return out


def vocab_counts(texts: Sequence[str]) -> Counter:
    """How often each token occurs in ``texts``."""
    return Counter(tok for text in texts for tok in tokenize(text))
