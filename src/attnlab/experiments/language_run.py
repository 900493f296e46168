r"""What the deck shows about the models on real language, measured here once and cached.

    python -m attnlab language        # measure, write results/language.json

:mod:`attnlab.experiments.language` reads the cached file (the deck imports only that one:
reading the results loads no corpus and no model).  :func:`run` recomputes everything, with
the measurements of the modules beside this one; every example comes from the corpus's
**test** split (held out: no English string of it is in the training split):

* :func:`evaluation`: both test splits (in domain, and the held-out packages) scored for
  every model and both baselines (copy, the word-by-word dictionary) by
  :func:`attnlab.training.report.report`: BLEU, chrF, exact match, chrF by length, BLEU
  without placeholders, names kept, repeats, the paired bootstrap against the dictionary;
  :func:`scores`: the in-domain figures the deck's tables show;
* the decoded examples (:mod:`attnlab.experiments.language_examples`): a word-order swap, a
  German verb moved to the end, rare words written in parts or looked up;
* the roles of the encoder's self-attention heads (:mod:`attnlab.experiments.encoder_heads`);
* alpha against occlusion (:mod:`attnlab.experiments.attribution`);
* :func:`attention_by_length`: RNNSearch against RNNEncDec by English length (Fig. 2 on real
  language), with the paired bootstrap in each bucket;
* :func:`table2`: our test BLEU and training minutes beside Vaswani et al.'s Table 2.
"""

from __future__ import annotations

import json
from pathlib import Path

from attnlab.experiments.attribution import alpha_vs_occlusion
from attnlab.experiments.encoder_heads import head_roles
from attnlab.experiments.language import MODELS, RESULTS_FILE, VASWANI_TABLE2
from attnlab.experiments.language_examples import (
    beam_against_greedy,
    rare_words,
    verb_final_example,
    word_order_example,
)
from attnlab.files import write_atomic
from attnlab.models.threads import torch_threads
from attnlab.text.corpus import LANGS, load_corpus
from attnlab.training.checkpoints import load, load_card
from attnlab.training.evaluate import Dictionary, copy_baseline, signatures, translate_all
from attnlab.training.report import bootstrap_by_length, report

__all__ = ["attention_by_length", "evaluation", "run", "scores", "table2"]


# --------------------------------------------------------------------------- scores
def evaluation(directory: Path | str | None = None) -> dict:
    """Both test splits ("test": in domain; "unseen": the held-out packages), every model of
    each language beside the cased dictionary and copying, by
    :func:`attnlab.training.report.report` (the dictionary the paired bootstrap's baseline)."""
    out: dict = {}
    for lang in LANGS:
        corpus = load_corpus(lang)
        dictionary = Dictionary(corpus["train"], cased=True)
        models = {name: load(name, directory) for name, m in MODELS.items() if m == lang}
        for split in ("test", "unseen"):
            src, ref = [en for en, _ in corpus[split]], [t for _, t in corpus[split]]
            systems = {name: translate_all(model, src) for name, model in models.items()}
            systems["dictionary"] = dictionary.translate_all(src)
            systems["copy"] = copy_baseline(src)
            out.setdefault(f"en-{lang}", {})[split] = report(src, ref, systems, "dictionary")
    return out


#: Bahdanau et al.'s Fig. 2 on real language: the model with attention against the one
#: without, on English->French (the language with both RNN models).
LENGTH_PAIR = ("rnnsearch-en-fr", "rnnenc-en-fr")


def attention_by_length(directory: Path | str | None = None) -> dict:
    """BLEU and chrF of RNNSearch and RNNEncDec (EN->FR), and of the word-by-word dictionary,
    in each bucket of the English length, on both test splits, with sacrebleu's paired
    bootstrap (RNNEncDec the baseline): attention's gain by length on real language, beside
    the digit curves, and where the dictionary stands."""
    corpus = load_corpus("fr")
    attention, none = (load(name, directory) for name in LENGTH_PAIR)
    dictionary = Dictionary(corpus["train"], cased=True)
    out: dict = {"systems": list(LENGTH_PAIR), "baseline": LENGTH_PAIR[1], "splits": {}}
    for split in ("test", "unseen"):
        src, ref = [en for en, _ in corpus[split]], [t for _, t in corpus[split]]
        systems = {LENGTH_PAIR[0]: translate_all(attention, src)}
        systems[LENGTH_PAIR[1]] = translate_all(none, src)
        systems["dictionary"] = dictionary.translate_all(src)  # the baseline both must face
        out["splits"][split] = bootstrap_by_length(src, ref, systems, LENGTH_PAIR[1])
    return out


def scores(evaluated: dict, directory: Path | str | None = None) -> dict:
    """In-domain test BLEU/chrF of every model and both baselines, per language, with the
    signatures and what each model's card says of its training (seconds, steps, threads)."""
    out: dict = {"signatures": signatures(), "baselines": {}, "models": {}}
    for lang in LANGS:
        systems = evaluated[f"en-{lang}"]["test"]["systems"]
        out["baselines"][f"en-{lang}"] = {k: _short(systems[k]) for k in ("copy", "dictionary")}
    for name, lang in MODELS.items():
        card = load_card(name, directory)
        s = _short(evaluated[f"en-{lang}"]["test"]["systems"][name])
        s.update(train_seconds=card["train_seconds"], train_cpu_seconds=card["train_cpu_seconds"])
        s.update(steps=card["steps"], pair=f"en-{lang}", exact_match=card["heldout_accuracy"])
        s.update(parameters=card["parameters"], kind=card["kind"], threads=card["train"]["threads"])
        out["models"][name] = s
    return out


def _short(s: dict) -> dict:
    return {k: s[k] for k in ("bleu", "chrf")}


# --------------------------------------------------------------------------- Table 2
def table2(model_scores: dict) -> dict:
    """Our Transformers' test BLEU and training minutes (a 2-core CPU, one thread each) beside
    Vaswani et al.'s Table 2 (BLEU on newstest2014, days on 8 GPUs).  Not comparable
    scores: other test sets, far shorter strings; the compute is the point."""
    ours = {}
    for pair in ("en-de", "en-fr"):
        s = model_scores[f"transformer-{pair}"]
        # the wall-clock time of `make train` on both cores of the machine
        ours[pair] = {"bleu": s["bleu"], "chrf": s["chrf"]}
        ours[pair]["train_minutes"] = round(s["train_seconds"] / 60, 1)
    return {
        "ours": ours,
        "vaswani": VASWANI_TABLE2,
        "hardware": "a 2-core CPU (one thread per model)",
        "note": "different test sets (short interface strings, cased, our test split) "
        "against newstest2014: the scores are not comparable, the compute is the point",
    }


# --------------------------------------------------------------------------- run
def run(directory: Path | str | None = None, out: Path | str | None = None) -> dict:
    """Measure everything above with the checkpoints in ``directory`` (default: shipped) and
    write the results (default: ``results/language.json``, replaced atomically)."""
    with torch_threads(1):
        evaluated = evaluation(directory)
        s = scores(evaluated, directory)
        shipped = lambda name: load(name, directory)  # noqa: E731
        results = {
            "evaluation": evaluated,
            "scores": s,
            "word_order": word_order_example(shipped("rnnsearch-en-fr")),
            "verb_final": verb_final_example(shipped("transformer-en-de")),
            "rare_words": rare_words(shipped("transformer-en-de")),
            "beam_against_greedy": beam_against_greedy(shipped("transformer-en-fr")),
            "head_roles": {
                name: head_roles(shipped(name))
                for name in ("transformer-en-de", "transformer-en-fr")
            },
            "alpha_vs_occlusion": alpha_vs_occlusion(shipped("rnnsearch-en-fr")),
            "attention_by_length": attention_by_length(directory),
            "table2": table2(s["models"]),
        }
    path = Path(out) if out is not None else RESULTS_FILE
    write_atomic(path, json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    return results
