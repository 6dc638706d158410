"""Throughput of the Laplace samplers: secure (OpenDP) versus NumPy's insecure Generator.laplace.

Run: ``python benchmarks/bench_noise.py [N]``. Prints the median of 5 runs of each sampler on N
values (default 10^6): the secure one with 1 worker thread and with every core, NumPy's
``Generator.laplace``, and the ratios, with the machine it ran on.
"""

from __future__ import annotations

import os
import sys

import numpy as np
from _timing import machine, median_seconds

from pufferfish import add_laplace


def main() -> None:
    n = int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000
    x = np.arange(n, dtype=np.float64) % 8
    print(machine())
    cores = os.cpu_count() or 1
    one = median_seconds(lambda: add_laplace(x, 0.78, workers=1))
    every = median_seconds(lambda: add_laplace(x, 0.78))
    insecure = median_seconds(lambda: add_laplace(x, 0.78, rng=1))
    print(f"values per run: {n:,}")
    print(f"secure (OpenDP), 1 worker     : {n / one:>14,.0f} values/s  (median {one:.3f} s)")
    print(f"secure (OpenDP), {cores} workers    : {n / every:>14,.0f} values/s  (median {every:.3f} s)")
    print(f"insecure (NumPy Generator)    : {n / insecure:>14,.0f} values/s  (median {insecure:.4f} s)")
    print(f"speed-up of {cores} workers over 1  : {one / every:.2f}x")
    print(f"ratio insecure / secure ({cores} w.): {every / insecure:,.0f}x")


if __name__ == "__main__":
    main()
