"""Benchmark: how fast the deck's widgets feel in the RISE slideshow, and how large the export is.

Prints, for each widget of notebooks/07_attention.ipynb, the milliseconds from releasing a
slider (mouse) to its new picture on screen in the RISE slideshow at 1280x720 (median over the
moves of all its sliders, and per slider), against the target: median <= 100 ms, printed as
met / NOT met (timing never fails the run).  The clock starts at the drag's last mouse move
(the handle reaches its final spot; the button is released right after) and stops when the
widget's new picture is decoded and drawn (requestAnimationFrame), the last change if the
widget redraws more than once.

The figures are measured by the browser tests (tests/e2e/test_slideshow.py moves every slider
of every widget several times and writes artifacts/slider_latency.json).  This script reads that
file; with --run, or when the file has no entry for the deck, it runs that test first (about
two minutes: JupyterLab, Chromium, the deck run in a kernel).  It also prints the size of the
offline export from artifacts/export_size.json when the offline browser test has written it.

Run:  .venv/bin/python benchmarks/slider_latency.py [--run]   (or ``make bench``)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LATENCY_JSON = ROOT / "artifacts" / "slider_latency.json"
EXPORT_SIZE_JSON = ROOT / "artifacts" / "export_size.json"
DECK = "07_attention"
TARGET_MS = 100.0


def read(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def measure() -> int:
    """Run the slideshow browser test of the deck, which writes the latency file."""
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "tests/e2e/test_slideshow.py",
        "-k",
        f"test_slideshow_runs and {DECK}",
    ]
    print("measuring:", " ".join(cmd[2:]), flush=True)
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"))
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode:
        print(f"the browser test failed (figures below may be partial):\n{done.stdout[-2000:]}")
    return done.returncode


def verdict(ms: float | None) -> str:
    if ms is None:
        return "no measurement"
    return "met" if ms <= TARGET_MS else f"NOT met (over by {ms - TARGET_MS:.0f} ms)"


def print_latency(entry: dict) -> None:
    print(f"slider latency in the RISE slideshow (measured {entry['measured_at']}):")
    print(f"  {entry['what']}; target: median <= {TARGET_MS:.0f} ms")
    for widget, figures in entry["widgets"].items():  # in the order of the slides
        median = figures["median_ms"]
        shown = f"{median:7.1f} ms" if median is not None else "      -   "
        print(f"  {widget[:40]:40s} {shown}   {verdict(median)}")
        for label, slider in figures["sliders"].items():
            moves = ", ".join(f"{m:.0f}" for m in slider["moves_ms"])
            problem = f"   ({slider['problem']})" if slider["problem"] else ""
            print(f"      {label[:30]:30s} moves: {moves or '-'} ms{problem}")


def print_size(sizes: dict) -> None:
    mb = 1024 * 1024
    size = sizes.get(DECK)
    if size:
        print(
            f"offline export (make html): {size['html_bytes'] / mb:.1f} MiB "
            f"{DECK}.slides.html, {size['folder_bytes'] / mb:.1f} MiB with lib/"
        )
    else:
        print("offline export size: not measured yet (pytest tests/e2e/test_offline_html.py)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="store_true", help="measure again (the browser test)")
    args = parser.parse_args(argv)
    if args.run or DECK not in read(LATENCY_JSON):
        measure()
    entry = read(LATENCY_JSON).get(DECK)
    if entry:
        print_latency(entry)
    else:
        print(f"no slider latency measured ({LATENCY_JSON} has no {DECK} entry)")
    print_size(read(EXPORT_SIZE_JSON))
    return 0


if __name__ == "__main__":
    sys.exit(main())
