"""Benchmark: attnlab's scaled_dot_product_attention against torch's fused kernel on CPU.

Prints ms per call (median of repeats after a warm-up) of

    ours:  attnlab.attention.scaled_dot_product_attention(Q, K, V, mask)
    torch: torch.nn.functional.scaled_dot_product_attention(Q, K, V, attn_mask=mask)

for batch 1, 4 heads, d_k 64 and n in {16, 128, 512, 2048} queries and keys, without a mask
and with a causal mask (the same boolean tensor, built once, is given to both), their ratio
and the largest absolute difference of the outputs.

Target: ours within 1.5x of torch at n = 512.

Run:  .venv/bin/python benchmarks/attention.py   (or ``make bench``)
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from attnlab.attention import causal_mask, scaled_dot_product_attention

SIZES = (16, 128, 512, 2048)
BATCH, HEADS, D_K = 1, 4, 64
TARGET_N, TARGET_RATIO = 512, 1.5


def ms_per_call(fn: Callable[[], object], budget_s: float = 0.6) -> float:
    """Median wall time of one call in ms: warm up, then time repeats for about budget_s."""
    for _ in range(3):  # warm-up: first calls allocate and pick kernels
        fn()
    t0 = time.perf_counter()
    fn()
    once = time.perf_counter() - t0
    repeats = max(5, min(200, int(budget_s / max(once, 1e-6))))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def row(n: int, causal: bool) -> tuple[float, float, float]:
    """(ours ms, torch ms, max |difference|) at length n, with or without a causal mask."""
    Q, K, V = (torch.randn(BATCH, HEADS, n, D_K) for _ in range(3))  # (B, h, n, d_k)
    mask = causal_mask(n) if causal else None  # (n, n), True where allowed

    def ours():
        return scaled_dot_product_attention(Q, K, V, mask)[0]

    def fused():
        return F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)

    diff = (ours() - fused()).abs().max().item()
    return ms_per_call(ours), ms_per_call(fused), diff


def main() -> None:
    torch.set_num_threads(2)
    torch.manual_seed(0)
    print(
        f"scaled_dot_product_attention, CPU fp32, batch {BATCH}, {HEADS} heads, d_k {D_K}, "
        f"{torch.get_num_threads()} threads, torch {torch.__version__}"
    )
    header = f"{'n':>5} {'mask':>6} {'ours ms':>9} {'torch ms':>9} {'ratio':>6} {'max |diff|':>11}"
    print(header)
    print("-" * len(header))
    ratio_at_target = float("nan")
    with torch.inference_mode():
        for n in SIZES:
            for causal in (False, True):
                t_ours, t_torch, diff = row(n, causal)
                ratio = t_ours / t_torch  # > 1: ours is slower
                label = "causal" if causal else "none"
                print(
                    f"{n:>5} {label:>6} {t_ours:>9.3f} {t_torch:>9.3f} {ratio:>5.2f}x {diff:>11.1e}"
                )
                if n == TARGET_N and not causal:
                    ratio_at_target = ratio
    verdict = "met" if ratio_at_target <= TARGET_RATIO else "NOT met"
    print(
        f"target: ours within {TARGET_RATIO}x of torch at n = {TARGET_N} without a mask: "
        f"{ratio_at_target:.2f}x, {verdict}"
    )


if __name__ == "__main__":
    main()
