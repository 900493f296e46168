"""Benchmark: seconds each dates model takes to reach 99% held-out exact match.

Trains RNNSearch, the Transformer and RNNEncDec on dates with the shipped recipes
(``attnlab.training.config.default_configs``), each stopping as soon as 99% of the 1000 held-out dates
are right (RNNEncDec gets a budget of 3000 steps instead of its fixed 200), and prints the
seconds (wall clock, the held-out measurements included), the steps, and the ratio
RNNEncDec / RNNSearch.  Then the load time and size of every shipped checkpoint.

Targets (2 cores): RNNSearch <= 15 s, Transformer <= 60 s; every checkpoint <= 1 MB and
loads in <= 0.3 s.  Other processes on the machine slow training down: compare the steps,
which do not depend on the load.

Run:  .venv/bin/python benchmarks/training.py   (or ``make bench``)
"""

from __future__ import annotations

import statistics
import time
from dataclasses import replace

import torch

import attnlab
from attnlab.models import catalogue
from attnlab.training.checkpoints import CHECKPOINT_DIR, weights_path
from attnlab.training.config import default_configs
from attnlab.training.loop import fit

TARGETS = {"rnnsearch": 15.0, "transformer": 60.0}


def time_to_99(kind: str) -> tuple[float | None, int, float]:
    cfg = replace(default_configs(kind, "dates")[1], target=0.99)
    if kind == "rnnencdec":
        cfg = replace(cfg, max_steps=3000)
    _, h = fit(kind, "dates", config=cfg, progress=False)
    seconds = h["seconds"][-1] if h["reached"] else None
    return seconds, h["steps"], h["accuracy"][-1]


def main() -> None:
    print(
        f"torch {torch.__version__}, threads per run: {default_configs('rnnsearch', 'dates')[1].threads}"
    )
    print(f"{'model':<12} {'seconds to 99%':>15} {'steps':>6} {'held-out':>9} {'target':>8}")
    results = {}
    for kind in ("rnnsearch", "transformer", "rnnencdec"):
        seconds, steps, acc = time_to_99(kind)
        results[kind] = seconds
        shown = f"{seconds:.1f}" if seconds is not None else "not reached"
        target = f"<= {TARGETS[kind]:.0f} s" if kind in TARGETS else ""
        ok = (
            ""
            if kind not in TARGETS
            else (" ok" if seconds and seconds <= TARGETS[kind] else " MISSED")
        )
        print(f"{kind:<12} {shown:>15} {steps:>6} {acc:>9.3f} {target:>8}{ok}")
    if results["rnnencdec"] and results["rnnsearch"]:
        print(f"ratio RNNEncDec / RNNSearch: {results['rnnencdec'] / results['rnnsearch']:.1f}x")
    else:
        print("ratio RNNEncDec / RNNSearch: RNNEncDec did not reach 99% in 3000 steps")

    print(f"\n{'checkpoint':<20} {'KB':>6} {'load ms (median of 5)':>22}")
    for name in catalogue.names():
        if not (CHECKPOINT_DIR / f"{name}.json").exists():
            print(f"{name:<20} missing")
            continue
        times = []
        for _ in range(5):
            start = time.perf_counter()
            attnlab.load(name)
            times.append(time.perf_counter() - start)
        ms = statistics.median(times) * 1000
        size = weights_path(name).stat().st_size
        flag = "ok" if ms <= 300 and size <= 1_000_000 else "MISSED"
        print(f"{name:<20} {size / 1000:>6.0f} {ms:>22.1f} {flag}")


if __name__ == "__main__":
    main()
