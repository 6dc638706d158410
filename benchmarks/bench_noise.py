"""Throughput of the Laplace samplers: secure (OpenDP) versus NumPy's insecure Generator.laplace.

Run: ``python benchmarks/bench_noise.py [N]``. Prints the median of 5 runs for each sampler and the
machine it ran on.
"""

from __future__ import annotations

import sys

import numpy as np
from _timing import machine, median_seconds

from pufferfish import add_laplace


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    x = np.arange(n, dtype=np.float64) % 8
    print(machine())
    secure = median_seconds(lambda: add_laplace(x, 0.78))
    insecure = median_seconds(lambda: add_laplace(x, 0.78, rng=1))
    print(f"values per run: {n}")
    print(f"secure (OpenDP)      : {n / secure:>14,.0f} values/s  (median {secure:.3f} s)")
    print(f"insecure (NumPy)     : {n / insecure:>14,.0f} values/s  (median {insecure:.4f} s)")
    print(f"ratio insecure/secure: {secure / insecure:,.0f}x")


if __name__ == "__main__":
    main()
