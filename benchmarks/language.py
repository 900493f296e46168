"""Benchmark: the real-language corpus and its word models.

Prints the corpus build time (median of 3, from the catalog wheels), then for each shipped
word model: its training time and steps (read from its card: `make train` measured them on
two threads; wall-clock seconds, and the CPU seconds of both threads), its test-split
BLEU and chrF (sacrebleu, signatures printed) beside the two baselines, and the size of its
weights.  Then the times, min / median of several runs on one torch thread: loading each
model (``attnlab.load``; the first load of the process, which pays the lazy imports, printed
apart; target <= 200 ms), and translating a 10-word phrase, the first 10-word English
sentence of the test split (``model.translate``, greedy: the search and the one read-back;
target <= 30 ms), a Transformer with its KV cache and without it (``kv_cache = False``: the
decoder re-run on the whole prefix at every step).

Run:  OMP_NUM_THREADS=1 .venv/bin/python benchmarks/language.py   (or ``make bench``)
"""

from __future__ import annotations

import statistics
import time

import torch

import attnlab
from attnlab.experiments.language import MODELS
from attnlab.text import corpus
from attnlab.training.checkpoints import weights_path
from attnlab.training.evaluate import Dictionary, copy_baseline, score, translate_all

LOAD_TARGET_MS, TRANSLATE_TARGET_MS = 200.0, 30.0
LOAD_RUNS, TRANSLATE_RUNS = 7, 20
PHRASE_WORDS = 10


def times_ms(fn, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return times


def median_ms(fn, repeat: int) -> float:
    return statistics.median(times_ms(fn, repeat))


def min_median(times: list[float]) -> str:
    return f"{min(times):5.1f} / {statistics.median(times):5.1f}"


def ten_word_phrase(lang: str) -> str:
    """The first English sentence of the test split with exactly PHRASE_WORDS words."""
    return next(en for en, _ in corpus.load_corpus(lang)["test"] if len(en.split()) == PHRASE_WORDS)


def translate_times(model, phrase: str, cached: bool | None = None) -> list[float]:
    """Times of ``model.translate(phrase)``; ``cached``: a Transformer's ``kv_cache`` for the
    runs (None: the model as it is, an RNN)."""
    before = getattr(model, "kv_cache", None)
    if cached is not None:
        model.kv_cache = cached
    try:
        model.translate(phrase)  # warm
        return times_ms(lambda: model.translate(phrase), TRANSLATE_RUNS)
    finally:
        if cached is not None:
            model.kv_cache = before


def timings() -> None:
    """Load and translation times of every word model, min / median in ms, one thread."""
    print(f"\ntimes in ms, min / median ({LOAD_RUNS} loads, {TRANSLATE_RUNS} translations):")
    print(
        f"{'model':<18} {'first load':>10} {'load':>13} {'translate, cache':>17} {'no cache':>13}"
    )
    for name, lang in MODELS.items():
        start = time.perf_counter()
        model = attnlab.load(name)
        first_ms = (time.perf_counter() - start) * 1000
        load = times_ms(lambda name=name: attnlab.load(name), LOAD_RUNS)
        phrase = ten_word_phrase(lang)
        has_cache = hasattr(model, "kv_cache")  # an RNN carries its state: no cache to switch
        cached = translate_times(model, phrase, True if has_cache else None)
        without = min_median(translate_times(model, phrase, False)) if has_cache else "-"
        load_ms, translate_ms = statistics.median(load), statistics.median(cached)
        flags = ("" if load_ms <= LOAD_TARGET_MS else f" load>{LOAD_TARGET_MS:.0f}ms") + (
            "" if translate_ms <= TRANSLATE_TARGET_MS else f" translate>{TRANSLATE_TARGET_MS:.0f}ms"
        )
        print(
            f"{name:<18} {first_ms:>10.1f} {min_median(load):>13} {min_median(cached):>17} "
            f"{without:>13}{flags}"
        )
        print(f"  {phrase!r} -> {model.translate(phrase)!r}")
    print(
        f"targets: load <= {LOAD_TARGET_MS:.0f} ms, a {PHRASE_WORDS}-word phrase translated in "
        f"<= {TRANSLATE_TARGET_MS:.0f} ms"
    )


def main() -> None:
    torch.set_num_threads(1)
    timings()  # first: the first load of the process is the one a user waits for
    build_ms = median_ms(lambda: [corpus.build(lang) for lang in corpus.LANGS], 3)
    print(f"corpus build (EN->FR and EN->DE, from the wheels): {build_ms / 1000:.2f} s")
    for lang in corpus.LANGS:
        splits = corpus.load_corpus(lang)
        counts = {s: len(v) for s, v in splits.items()}
        src, ref = [en for en, _ in splits["test"]], [t for _, t in splits["test"]]
        copy = score(copy_baseline(src), ref)
        dictionary = score(Dictionary(splits["train"]).translate_all(src), ref)
        print(f"EN->{lang.upper()} {counts}")
        print(f"  baseline copy:       BLEU {copy['bleu']:5.1f}  chrF {copy['chrf']:5.1f}")
        print(
            f"  baseline dictionary: BLEU {dictionary['bleu']:5.1f}  chrF {dictionary['chrf']:5.1f}"
        )
    print(f"signatures: BLEU {copy['bleu_signature']}\n            chrF {copy['chrf_signature']}")
    head = f"{'model':<18} {'train cpu s':>11} {'(wall)':>7} {'steps':>6} {'BLEU':>6} {'chrF':>6}"
    print(f"{head} {'MB':>5}")
    for name, lang in MODELS.items():
        model = attnlab.load(name)
        card = model.card
        test = corpus.load_corpus(lang)["test"]
        s = score(translate_all(model, [en for en, _ in test]), [t for _, t in test])
        mb = weights_path(name).stat().st_size / 1e6
        print(
            f"{name:<18} {card['train_cpu_seconds']:>11.0f} {card['train_seconds']:>7.0f} "
            f"{card['steps']:>6} {s['bleu']:>6.1f} {s['chrf']:>6.1f} {mb:>5.1f}"
        )


if __name__ == "__main__":
    main()
