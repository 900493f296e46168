"""Benchmark: the real-language corpus and its word models.

Prints the corpus build time (median of 3, from the catalog wheels), then for each shipped
word model: its training time and steps (read from its card: `make train` measured them on
two threads; wall-clock seconds, and the CPU seconds of both threads), its test-split
BLEU and chrF (sacrebleu, signatures printed) beside the two baselines, its load time
(median of 5, target <= 200 ms), the size of its weights, and the time to translate one
phrase (median of 20, greedy, target <= 50 ms).

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

LOAD_TARGET_MS, TRANSLATE_TARGET_MS = 200.0, 50.0
PHRASES = {"fr": "Default cell type", "de": "Close all tabs"}


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    torch.set_num_threads(1)
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
    head += f" {'load ms':>8}"
    print(f"{head} {'MB':>5} {'translate ms':>13}")
    for name, lang in MODELS.items():
        load_ms = median_ms(lambda name=name: attnlab.load(name), 5)
        model = attnlab.load(name)
        card = model.card
        test = corpus.load_corpus(lang)["test"]
        s = score(translate_all(model, [en for en, _ in test]), [t for _, t in test])
        phrase = PHRASES[lang]
        model.translate(phrase)  # warm
        tr_ms = median_ms(lambda model=model, phrase=phrase: model.translate(phrase), 20)
        mb = weights_path(name).stat().st_size / 1e6
        flags = ("" if load_ms <= LOAD_TARGET_MS else " load>200ms") + (
            "" if tr_ms <= TRANSLATE_TARGET_MS else " translate>50ms"
        )
        print(
            f"{name:<18} {card['train_cpu_seconds']:>11.0f} {card['train_seconds']:>7.0f} "
            f"{card['steps']:>6} {s['bleu']:>6.1f} "
            f"{s['chrf']:>6.1f} {load_ms:>8.0f} {mb:>5.1f} {tr_ms:>13.1f}{flags}"
        )
        print(f"  {phrase!r} -> {model.translate(phrase)!r}")
    print(f"targets: load <= {LOAD_TARGET_MS:.0f} ms, translate <= {TRANSLATE_TARGET_MS:.0f} ms")


if __name__ == "__main__":
    main()
