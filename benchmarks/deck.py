"""Benchmark: how long the deck takes to run, as the lecturer and as CI run it, on 2 cores.

Prints the seconds of

    restart-and-run-all: a fresh kernel runs every cell of notebooks/07_attention.ipynb
                         (kernel start included, as Kernel > Restart and Run All),
    nbval:               the pytest --nbval runs of `make notebooks`,

with the slowest cells of the run-all.  Targets: run-all <= 20 s, nbval <= 90 s (printed as
met / NOT met; a failing cell or a failing nbval run is reported, timing never fails the run).

Both run pinned to two CPUs (when the machine has more) with OMP_NUM_THREADS=2.  The deck runs
in a temporary copy of notebooks/ and pics/, so nothing in the repository changes.

Run:  .venv/bin/python benchmarks/deck.py [--repeat N] [--skip-nbval]   (or ``make bench``)
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]
DECK = Path("notebooks/07_attention.ipynb")
RUN_ALL_TARGET_S, NBVAL_TARGET_S = 20.0, 90.0
CORES = 2


def pin_to_two_cores() -> str:
    """Pin this process (and so the kernels and pytest it starts) to two CPUs."""
    os.environ["OMP_NUM_THREADS"] = str(CORES)
    os.environ.pop("MPLBACKEND", None)  # a kernel keeps ipykernel's inline backend
    if not hasattr(os, "sched_setaffinity"):
        return "OMP_NUM_THREADS=2 (CPU pinning unavailable here)"
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, cpus[:CORES])
    return f"CPUs {cpus[:CORES]} of {len(cpus)}, OMP_NUM_THREADS=2"


def cell_seconds(cell) -> float:
    """Wall time of one executed cell, from the timestamps nbclient records."""
    timing = cell.get("metadata", {}).get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not (start and end):
        return 0.0
    parse = datetime.fromisoformat
    return (parse(end.replace("Z", "+00:00")) - parse(start.replace("Z", "+00:00"))).total_seconds()


def run_all(work: Path, deck: Path) -> tuple[float, list[tuple[float, str]]]:
    """Seconds for a fresh kernel to run every cell; and (seconds, first line) per code cell."""
    path = work / deck
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        record_timing=True,
    )
    start = time.perf_counter()
    client.execute()
    total = time.perf_counter() - start
    cells = [
        (cell_seconds(c), c.source.splitlines()[0] if c.source else "")
        for c in nb.cells
        if c.cell_type == "code"
    ]
    return total, cells


# What `make notebooks` runs (keep in step with the Makefile): (extra environment, pytest args).
NBVAL_RUNS = [
    ({}, ["--nbval", "notebooks/07_attention.ipynb", "notebooks/07_attention_exercises.ipynb"]),
    ({"ATTNLAB_SOLUTIONS": "1"}, ["--nbval-lax", "notebooks/07_attention_exercises.ipynb"]),
]


def nbval() -> tuple[float, int]:
    """Seconds of the nbval runs of `make notebooks`, and the first non-zero exit status."""
    seconds, status = 0.0, 0
    for extra_env, args in NBVAL_RUNS:
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
        start = time.perf_counter()
        done = subprocess.run(
            cmd, cwd=ROOT, env=dict(os.environ, **extra_env), capture_output=True, text=True
        )
        seconds += time.perf_counter() - start
        if done.returncode:
            print(" ".join(cmd[3:]), "failed:", done.stdout[-2000:], done.stderr[-2000:], sep="\n")
            status = status or done.returncode
    return seconds, status


def verdict(seconds: float, target: float) -> str:
    return "met" if seconds <= target else f"NOT met (over by {seconds - target:.1f} s)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs of each; the median shows")
    parser.add_argument("--skip-nbval", action="store_true")
    parser.add_argument("--notebook", type=Path, default=DECK, help="relative to the repo root")
    args = parser.parse_args(argv)
    print(f"deck: {args.notebook}; {pin_to_two_cores()}")

    with tempfile.TemporaryDirectory(prefix="attnlab-deck-") as tmp:
        work = Path(tmp)
        for rel in ("notebooks", "pics", args.notebook.parent):
            if (ROOT / rel).exists() and not (work / rel).exists():
                shutil.copytree(ROOT / rel, work / rel)
        try:
            runs = [run_all(work, args.notebook) for _ in range(args.repeat)]
        except CellExecutionError as err:
            plain = re.sub(r"\x1b\[[0-9;]*m", "", str(err))  # no terminal colours
            print(f"the deck failed to run:\n{plain[-3000:]}")
            return 1
    seconds = statistics.median(total for total, _ in runs)
    print(
        f"restart-and-run-all  {seconds:6.1f} s   target <= {RUN_ALL_TARGET_S:.0f} s   "
        f"{verdict(seconds, RUN_ALL_TARGET_S)}"
    )
    cells = runs[len(runs) // 2][1]
    kernel_and_overhead = runs[len(runs) // 2][0] - sum(s for s, _ in cells)
    print(f"  kernel start and overhead {kernel_and_overhead:5.1f} s; slowest cells:")
    for s, first_line in sorted(cells, reverse=True)[:5]:
        print(f"  {s:6.1f} s  {first_line[:70]}")

    if not args.skip_nbval:
        nbval_runs = [nbval() for _ in range(args.repeat)]
        seconds = statistics.median(s for s, _ in nbval_runs)
        failed = any(rc for _, rc in nbval_runs)
        print(
            f"nbval (make notebooks) {seconds:6.1f} s   target <= {NBVAL_TARGET_S:.0f} s   "
            f"{verdict(seconds, NBVAL_TARGET_S)}"
            + ("   (nbval FAILED, see above)" if failed else "")
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
