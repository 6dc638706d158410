"""Throughput of the secure samplers, side by side in one run: the exact vectorised samplers
(:mod:`pufferfish.noise.discrete`, OpenSSL randomness), OpenDP's, and NumPy's insecure generator, for
Laplace and Gaussian noise.

Run: ``python benchmarks/bench_noise.py [N ...] [--scale S]`` (default 10^6 and 10^7; scale 0.78
for Laplace and sigma 1.3 for Gaussian, or S for both: issue 29 measures S = 1e9, where the grid is
``2^-11``, coarser than the release grid). For each N and each noise: the median of 5 runs of the
exact sampler with 1 worker and with every core and of NumPy, and of OpenDP with every core (3 runs
at N <= 10^6, 1 run above: it takes about a minute per 10^7 values); then the ratios to NumPy.
"""

from __future__ import annotations

import os
import sys

import numpy as np
from _timing import machine, median_seconds

from pufferfish.noise.samplers import add_gaussian, add_laplace


def main() -> None:
    args = sys.argv[1:]
    scale: float | None = None
    if "--scale" in args:
        at = args.index("--scale")
        scale = float(args[at + 1])
        del args[at : at + 2]
    sizes = [int(float(a)) for a in args] or [1_000_000, 10_000_000]
    print(machine())
    cores = os.cpu_count() or 1
    for n in sizes:
        x = np.arange(n, dtype=np.float64) % 8
        report(n, x, cores, "laplace", 0.78 if scale is None else scale)
        report(n, x, cores, "gaussian", 1.3 if scale is None else scale)


def report(n: int, x: np.ndarray, cores: int, noise: str, scale: float) -> None:
    """Time the samplers of ``noise`` at ``scale`` on ``x`` and print the figures."""
    add = add_laplace if noise == "laplace" else add_gaussian
    one = median_seconds(lambda: add(x, scale, workers=1))
    every = median_seconds(lambda: add(x, scale))
    opendp = median_seconds(lambda: add(x, scale, sampler="opendp"), 3 if n <= 10**6 else 1)
    insecure = median_seconds(lambda: add(x, scale, rng=1))
    print(f"{noise} noise (scale {scale}), values per run: {n:,}")
    print(f"  exact (ours), 1 worker        : {n / one:>14,.0f} values/s  (median {one:.3f} s)")
    print(f"  exact (ours), {cores} workers       : {n / every:>14,.0f} values/s  (median {every:.3f} s)")
    print(f"  OpenDP, {cores} workers             : {n / opendp:>14,.0f} values/s  ({opendp:.3f} s)")
    print(f"  insecure (NumPy Generator)    : {n / insecure:>14,.0f} values/s  (median {insecure:.4f} s)")
    print(f"  ratio NumPy / exact ({cores} w.)    : {every / insecure:,.1f}x")
    print(f"  ratio NumPy / OpenDP ({cores} w.)   : {opendp / insecure:,.1f}x")
    print(f"  exact over OpenDP             : {opendp / every:,.1f}x")


if __name__ == "__main__":
    main()
