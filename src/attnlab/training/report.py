r"""The evaluation report of the translation models on one test split: every system (the
models and the baselines) scored the same way, cased, beside the references.

    >>> from attnlab.training.report import report
    >>> r = report(["Close all tabs"], ["Fermer tous les onglets"],
    ...            {"copy": ["Close all tabs"], "model": ["Fermer tous les onglets"]}, "copy")
    >>> r["systems"]["model"]["chrf"], r["systems"]["model"]["exact_match"]
    (100.0, 1.0)

* :func:`report`: everything below, for each system, as plain JSON (scores rounded to two
  decimals, shares to four).
* :func:`corpus_scores`: sacrebleu's defaults, cased: BLEU (13a tokenizer) and chrF
  (nc=6, nw=0), with their signatures; this module imports sacrebleu only, no model code
  (:mod:`attnlab.training.evaluate` loads torch).
* :func:`exact_match`: the whole output equal to its reference, whitespace collapsed, cased.
* :func:`length_bucket`: "1-3", "4-6", "7-10" or "11+" English words (``source.split()``);
  :func:`chrf_by_length`: chrF of each bucket, with its number of sentences.
* :func:`without_placeholders`: a text with its placeholders ``{1}``, ``{2}``, ... taken
  out.  sacrebleu's 13a tokenizer reads ``{1}`` as three tokens, ``{ 1 }``: copying a
  placeholder earns three unigrams, two bigrams and a trigram, which inflates BLEU, so BLEU
  is also given with the placeholders taken out of outputs and references.
* :func:`tokens`, :func:`kept_tokens`, :func:`kept_share`: the share of the source's names,
  numbers and placeholders that the output keeps as they are.
* :func:`repeats_share`: the share of texts that say one word three times or more.
* :func:`paired_bootstrap`: sacrebleu's own paired bootstrap test
  (:class:`sacrebleu.significance.PairedTest`, Koehn 2004) of each system against a
  baseline, seeded: the same numbers on every run.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence

from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest

__all__ = [
    "BUCKETS",
    "PLACEHOLDER",
    "TOKEN",
    "chrf_by_length",
    "bootstrap_by_length",
    "corpus_scores",
    "exact_match",
    "kept_share",
    "kept_tokens",
    "length_bucket",
    "paired_bootstrap",
    "repeats_share",
    "report",
    "tokens",
    "without_placeholders",
]

#: The English length buckets, in words: (name, fewest, most); the last has no upper end.
BUCKETS: tuple[tuple[str, int, int | None], ...] = (
    ("1-3", 1, 3),
    ("4-6", 4, 6),
    ("7-10", 7, 10),
    ("11+", 11, None),
)

#: A placeholder: ``{`` then digits then ``}`` (``{1}``, ``{12}``; not ``{}`` or ``{a}``).
PLACEHOLDER = re.compile(r"\{\d+\}")

#: A token: a placeholder, or a run of letters, digits, ``_``, ``+`` and ``-`` in which a
#: dot may stand only between two such characters.  So ``3.11``, ``file.txt``, ``C++``,
#: ``GPT-4`` and ``e-mail`` are one token each, a full stop or an ellipsis after a word is
#: not part of it (``GitHub.`` is ``GitHub``), and an apostrophe splits (``l'API`` is
#: ``l``, ``API``: French elision keeps the name whole).  A hyphenated compound stays one
#: token (``Python-Skript``), so a name written inside one does not match the bare name.
TOKEN = re.compile(r"\{\d+\}|[\w+-]+(?:\.[\w+-]+)*")

#: A word for :func:`repeats_share`: a run of letters (no digits, no ``_``).
WORD = re.compile(r"[^\W\d_]+")

BOOTSTRAP_SEED = 12345  # sacrebleu's own default seed (SACREBLEU_SEED)
BOOTSTRAP_SAMPLES = 1000  # sacrebleu's default for the paired bootstrap


def _check(texts: Sequence[str], references: Sequence[str], what: str = "sources") -> None:
    if not texts:
        raise ValueError(f"need at least one sentence to score (got no {what})")
    if len(references) != len(texts):
        raise ValueError(
            f"need one reference for each of the {what} (got {len(texts)} {what}, "
            f"{len(references)} references)"
        )


def _check_outputs(outputs: Sequence[str], n: int, name: str | None = None) -> None:
    if len(outputs) != n:
        who = f"system {name!r} has" if name is not None else "got"
        raise ValueError(f"{who} {len(outputs)} outputs for {n} sentences")


def corpus_scores(outputs: Sequence[str], references: Sequence[str]) -> dict:
    """Corpus BLEU and chrF of ``outputs`` against one reference each, sacrebleu's defaults
    (cased; BLEU's 13a tokenizer; chrF nc=6, nw=0), with sacrebleu's signatures."""
    _check(outputs, references, "outputs")
    bleu, chrf = BLEU(), CHRF()
    hyps, refs = list(outputs), [list(references)]
    return {
        "bleu": round(bleu.corpus_score(hyps, refs).score, 2),
        "chrf": round(chrf.corpus_score(hyps, refs).score, 2),
        "bleu_signature": str(bleu.get_signature()),
        "chrf_signature": str(chrf.get_signature()),
    }


def _collapse(text: str) -> str:
    return " ".join(text.split())


def exact_match(outputs: Sequence[str], references: Sequence[str]) -> float:
    """The share of outputs equal to their reference once runs of whitespace are one space
    and the ends trimmed; cased (``Fermer`` is not ``fermer``)."""
    _check(outputs, references, "outputs")
    right = sum(_collapse(o) == _collapse(r) for o, r in zip(outputs, references, strict=True))
    return round(right / len(references), 4)


def length_bucket(words: int) -> str:
    """The bucket of an English source of ``words`` words (``len(source.split())``)."""
    if words < 1:
        raise ValueError(f"a source needs at least one word to have a length (got {words})")
    for name, low, high in BUCKETS:
        if words >= low and (high is None or words <= high):
            return name
    raise AssertionError("the buckets cover every length from 1")  # unreachable


def chrf_by_length(
    sources: Sequence[str], references: Sequence[str], outputs: Sequence[str]
) -> dict[str, dict]:
    """Corpus chrF of the sentences of each :data:`BUCKETS` bucket of the English length,
    with ``n``, their number; a bucket with no sentence has chrF None."""
    _check(sources, references)
    _check_outputs(outputs, len(sources))
    found: dict[str, tuple[list[str], list[str]]] = {name: ([], []) for name, _, _ in BUCKETS}
    for source, reference, output in zip(sources, references, outputs, strict=True):
        hyps, refs = found[length_bucket(len(source.split()))]
        hyps.append(output)
        refs.append(reference)
    return {
        name: {
            "chrf": round(CHRF().corpus_score(hyps, [refs]).score, 2) if refs else None,
            "n": len(refs),
        }
        for name, (hyps, refs) in found.items()
    }


def bootstrap_by_length(
    sources: Sequence[str],
    references: Sequence[str],
    systems: Mapping[str, Sequence[str]],
    baseline: str,
) -> dict[str, dict]:
    """:func:`paired_bootstrap` inside each :data:`BUCKETS` bucket of the English length:
    ``{bucket: {"n": ..., "systems": {name: {"bleu": {...}, "chrf": {...}}}}}``, each score
    with sacrebleu's 95% interval (``ci``) and its p-value against ``baseline``; a bucket with
    no sentence is left out.  Bahdanau et al.'s Fig. 2 asks this of a model with attention
    against one without: does the gap grow with the length?"""
    _check(sources, references)
    for name, outputs in systems.items():
        _check_outputs(outputs, len(sources), name)
    rows: dict[str, list[int]] = {name: [] for name, _, _ in BUCKETS}
    for i, source in enumerate(sources):
        rows[length_bucket(len(source.split()))].append(i)
    out = {}
    for bucket, picked in rows.items():
        if not picked:
            continue
        refs = [references[i] for i in picked]
        chosen = {name: [outputs[i] for i in picked] for name, outputs in systems.items()}
        test = paired_bootstrap(refs, chosen, baseline)
        out[bucket] = {"n": len(picked), "systems": test["systems"]}
    return out


def without_placeholders(text: str) -> str:
    """``text`` with every placeholder ``{k}`` taken out and whitespace collapsed
    (``"Ouvrez {1} maintenant"`` -> ``"Ouvrez maintenant"``); a placeholder stuck to a word
    leaves a space, so no two words are glued together."""
    return _collapse(PLACEHOLDER.sub(" ", text))


def tokens(text: str) -> list[str]:
    """The :data:`TOKEN` tokens of ``text``, in order."""
    return TOKEN.findall(text)


def _is_name_number_or_placeholder(token: str, first: bool) -> bool:
    if PLACEHOLDER.fullmatch(token) or any(c.isdigit() for c in token):
        return True
    letters = [c for c in token if c.isalpha()]
    if not any(c.isupper() for c in letters):
        return False
    shouted = len(letters) >= 2 and all(c.isupper() for c in letters)  # API, URL, HTML
    inner = any(c.isupper() for c in token[1:])  # JupyterLab, iPython, GitHub
    return not first or shouted or inner


def kept_tokens(source: str, reference: str) -> Counter:
    """The tokens of ``source`` a translation should keep as they are, with how many times:
    each placeholder, each token holding a digit, and each name (an upper-case letter, not
    the first token; or all upper case with two letters or more; or an upper-case letter
    after its first character) that the reference has too, as many times as both have it
    (so a capitalised word the reference translates, a German noun, does not count)."""
    ref = Counter(tokens(reference))
    wanted = Counter(
        t for i, t in enumerate(tokens(source)) if _is_name_number_or_placeholder(t, i == 0)
    )
    return Counter({t: min(k, ref[t]) for t, k in wanted.items() if ref[t]})


def kept_share(sources: Sequence[str], references: Sequence[str], outputs: Sequence[str]) -> dict:
    """Of all :func:`kept_tokens` (``n``, counted with their repeats), the share each output
    has among its own tokens (a token wanted twice and written once counts once); the share
    is None when no source has such a token."""
    _check(sources, references)
    _check_outputs(outputs, len(sources))
    wanted = kept = 0
    for source, reference, output in zip(sources, references, outputs, strict=True):
        have = Counter(tokens(output))
        for token, k in kept_tokens(source, reference).items():
            wanted += k
            kept += min(k, have[token])
    return {"share": round(kept / wanted, 4) if wanted else None, "n": wanted}


def _repeats(text: str) -> bool:
    counts = Counter(w.casefold() for w in WORD.findall(text))
    return bool(counts) and max(counts.values()) >= 3


def repeats_share(texts: Sequence[str]) -> float:
    """The share of ``texts`` in which one word (letters only, case ignored) occurs three
    times or more, anywhere in the text: the stutter of a decoder that loops, to be read
    against the references' own share (long French sentences say "de" three times)."""
    if not texts:
        raise ValueError("need at least one text to count repeats in")
    return round(sum(_repeats(t) for t in texts) / len(texts), 4)


def paired_bootstrap(
    references: Sequence[str],
    systems: Mapping[str, Sequence[str]],
    baseline: str,
    n_samples: int = BOOTSTRAP_SAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> dict:
    """sacrebleu's paired bootstrap test (``PairedTest``, test_type "bs") of every system
    against ``baseline``, on BLEU and chrF (sacrebleu's defaults, cased).

    Returns ``{"signatures": {"bleu": ..., "chrf": ...}, "systems": {name: {"bleu": {...},
    "chrf": {...}}}}``, each metric of a system as sacrebleu computes it: ``score`` (on the
    whole split), ``mean`` of the ``n_samples`` resamples, ``ci`` (half the width of the 95%
    interval: sacrebleu prints mean ± ci), ``p_value`` (None for the baseline).  Every system
    is resampled with the same indices, drawn from ``seed``.  sacrebleu reads its seed from
    the environment (``SACREBLEU_SEED``) only; it is set to ``seed`` for the test and put back
    after, so the numbers do not depend on the caller's environment.  sacrebleu's p-value is
    (1 + resamples whose centred difference is strictly greater than the real one) /
    (n_samples + 1): a system identical to the baseline gets 1 / (n_samples + 1), not 1.
    """
    if baseline not in systems:
        raise ValueError(f"unknown baseline {baseline!r} (systems: {', '.join(systems)})")
    if not references:
        raise ValueError("need at least one reference for the bootstrap")
    if seed < 1 or n_samples < 1:  # sacrebleu reads a seed of 0 as "no seed"
        raise ValueError(f"need a seed and n_samples of at least 1 (got {seed}, {n_samples})")
    for name, outputs in systems.items():
        _check_outputs(outputs, len(references), name)
    named = [(baseline, list(systems[baseline]))]
    named += [(name, list(out)) for name, out in systems.items() if name != baseline]
    metrics = {"bleu": BLEU(), "chrf": CHRF()}
    before = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(seed)
    try:
        test = PairedTest(
            named, metrics, references=[list(references)], test_type="bs", n_samples=n_samples
        )
        signatures, results = test()
    finally:
        if before is None:
            del os.environ["SACREBLEU_SEED"]
        else:
            os.environ["SACREBLEU_SEED"] = before
    # sacrebleu keys both by the score's own name ("BLEU", "chrF2"), in the metrics' order
    keys = dict(zip(metrics, [k for k in results if k != "System"], strict=True))
    out: dict[str, dict] = {name: {} for name, _ in named}
    for ours, theirs in keys.items():
        for name, result in zip(results["System"], results[theirs], strict=True):
            p = result.p_value
            out[name][ours] = {
                "score": round(float(result.score), 2),
                "mean": round(float(result.mean), 2),
                "ci": round(float(result.ci), 2),
                "p_value": None if p is None else round(float(p), 4),
            }
    return {
        "signatures": {ours: str(signatures[theirs]) for ours, theirs in keys.items()},
        "systems": out,
    }


def report(
    sources: Sequence[str],
    references: Sequence[str],
    systems: Mapping[str, Sequence[str]],
    baseline: str,
) -> dict:
    """The evaluation of every system on one test split (``sources`` in English, one
    reference each, ``systems`` by name: the models' and the baselines' outputs), each
    against ``baseline`` (a name in ``systems``) by :func:`paired_bootstrap`.

    Plain JSON: ``n``, ``baseline``, ``references`` (their :func:`repeats_share`),
    ``bootstrap_signatures`` and, for each system, ``bleu``, ``chrf`` and their signatures
    (:func:`corpus_scores`), ``exact_match``, ``chrf_by_length``,
    ``bleu_without_placeholders``, ``kept`` (:func:`kept_share`), ``repeats`` and
    ``bootstrap``.
    """
    _check(sources, references)
    if not systems:
        raise ValueError("need at least one system to report on")
    if baseline not in systems:
        raise ValueError(f"unknown baseline {baseline!r} (systems: {', '.join(systems)})")
    for name, outputs in systems.items():
        _check_outputs(outputs, len(sources), name)
    for i, source in enumerate(sources):
        if not source.split():
            raise ValueError(f"source {i} has no words")
    bare_refs = [without_placeholders(r) for r in references]
    tests = paired_bootstrap(references, systems, baseline)
    rows = {}
    for name, outputs in systems.items():
        bare = corpus_scores([without_placeholders(o) for o in outputs], bare_refs)
        rows[name] = {
            **corpus_scores(outputs, references),
            "exact_match": exact_match(outputs, references),
            "chrf_by_length": chrf_by_length(sources, references, outputs),
            "bleu_without_placeholders": bare["bleu"],
            "kept": kept_share(sources, references, outputs),
            "repeats": repeats_share(outputs),
            "bootstrap": tests["systems"][name],
        }
    return {
        "n": len(sources),
        "baseline": baseline,
        "references": {"repeats": repeats_share(references)},
        "bootstrap_signatures": tests["signatures"],
        "systems": rows,
    }
