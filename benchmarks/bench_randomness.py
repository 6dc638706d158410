"""The exact samplers against the randomness limit of the machine (issue 45), measured in one run.

Run: ``python benchmarks/bench_randomness.py [N] [--rounds R]`` (default N = 4 * 10^6 values per
run, R = 5 interleaved rounds). For Laplace noise (scale 0.78) and Gaussian noise (sigma 1.3),
with every core:

* the bytes of OS randomness the exact sampler reads per value (counted through its
  ``random_bytes`` argument);
* the randomness limit: ``os.urandom``'s rate on every core (one thread per core, each reading
  the sampler's bytes for N / cores values in 1 MiB calls) divided by those bytes per value, the
  most values a second a sampler reading that much could give;
* the sampler's own rate (:func:`pufferfish.noise.samplers.add_laplace` / ``add_gaussian``) and
  its share of the limit, per round, min / median / max. Issue 45's goal: a share >= 50%.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from _timing import machine

from pufferfish.noise.discrete import discrete_gaussian, discrete_laplace
from pufferfish.noise.samplers import add_gaussian, add_laplace, exact_grid, gaussian_grid


def bytes_per_value(noise: str, scale: float, n: int) -> float:
    read = 0

    def counting(k: int) -> bytes:
        nonlocal read
        read += k
        return os.urandom(k)

    if noise == "laplace":
        discrete_laplace(exact_grid(scale)[1], n, counting)
    else:
        discrete_gaussian(gaussian_grid(scale)[1], n, counting)
    return read / n


def urandom_rate(total: int, cores: int) -> float:
    """Bytes a second of ``os.urandom`` on ``cores`` threads reading ``total`` bytes in 1 MiB calls."""
    share = total // cores

    def read(_: int) -> None:
        left = share
        while left > 0:
            os.urandom(min(left, 2**20))
            left -= 2**20

    t0 = time.perf_counter()
    with ThreadPoolExecutor(cores) as pool:
        list(pool.map(read, range(cores)))
    return cores * share / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", nargs="?", type=float, default=4e6, help="values per run")
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    n, rounds = int(opts.size), opts.rounds
    cores = os.cpu_count() or 1
    print(machine())
    print(f"values per run: {n:,}; {rounds} interleaved rounds; {cores} cores (one thread each)")
    x = np.zeros(n)
    for noise, scale, add in (("laplace", 0.78, add_laplace), ("gaussian", 1.3, add_gaussian)):
        per = bytes_per_value(noise, scale, n)
        limits, rates = [], []
        for _ in range(rounds):
            limits.append(urandom_rate(int(per * n), cores) / per)
            t0 = time.perf_counter()
            add(x, scale)
            rates.append(n / (time.perf_counter() - t0))
        shares = sorted(r / lim for r, lim in zip(rates, limits, strict=True))
        print(f"{noise} (scale {scale}): {per:.2f} random bytes a value")
        limit, rate = statistics.median(limits) / 1e6, statistics.median(rates) / 1e6
        print(f"  randomness limit ({cores} cores): {limit:8.2f} M values/s (median)")
        print(f"  exact sampler ({cores} workers) : {rate:8.2f} M values/s (median)")
        print(
            f"  share of the limit            : {shares[0]:.0%} / {statistics.median(shares):.0%} / "
            f"{shares[-1]:.0%} (min / median / max; goal >= 50%)"
        )


if __name__ == "__main__":
    main()
