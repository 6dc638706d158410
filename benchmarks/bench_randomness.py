"""The exact samplers against the randomness limit of the machine (issue 45), measured in one run.

Run: ``python benchmarks/bench_randomness.py [N] [--rounds R]`` (default N = 4 * 10^6 values per
run, R = 5 interleaved rounds). For Laplace noise (scale 0.78) and Gaussian noise (sigma 1.3),
with every core (one thread each), per round:

* the bytes of randomness the exact sampler reads per value (counted through its
  ``random_bytes`` argument);
* the randomness limit of a source: its rate on every core (each thread reading the sampler's
  bytes for N / cores values in 1 MiB calls) divided by those bytes per value, the most values a
  second a sampler reading that much could give. Two sources: ``os.urandom`` (the kernel's
  generator, the samplers' source when issue 45 was filed) and OpenSSL's ``RAND_bytes`` (their
  source since: :func:`pufferfish.noise.randomness.secure_bytes`);
* the exact sampler (:func:`pufferfish.noise.discrete.discrete_laplace` / ``discrete_gaussian``)
  on every core reading ``os.urandom``, and its share of that source's limit: issue 45's measure
  (goal >= 50%, "the rejection loops are the limit, not the randomness");
* the secure noise of a release (:func:`pufferfish.noise.samplers.add_laplace` /
  ``add_gaussian``: grid rounding, OpenSSL's randomness, every core) and its share of OpenSSL's
  limit;
* NumPy's seeded ``Generator.laplace`` / ``normal`` (one thread, insecure): the issue's anchor.

Each figure is printed as min / median / max over the rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from _timing import machine

from pufferfish.noise.discrete import discrete_gaussian, discrete_laplace
from pufferfish.noise.randomness import secure_bytes
from pufferfish.noise.samplers import add_gaussian, add_laplace, exact_grid, gaussian_grid


def bytes_per_value(draw: Callable[..., object], units: int, n: int) -> float:
    read = 0

    def counting(k: int) -> bytes:
        nonlocal read
        read += k
        return os.urandom(k)

    draw(units, n, counting)
    return read / n


def source_rate(source: Callable[[int], bytes], total: int, cores: int) -> float:
    """Bytes a second of ``source`` on ``cores`` threads reading ``total`` bytes in 1 MiB calls."""
    share = total // cores

    def read(_: int) -> None:
        left = share
        while left > 0:
            source(min(left, 2**20))
            left -= 2**20

    t0 = time.perf_counter()
    with ThreadPoolExecutor(cores) as pool:
        list(pool.map(read, range(cores)))
    return cores * share / (time.perf_counter() - t0)


def on_cores(draw: Callable[..., object], units: int, n: int, cores: int) -> float:
    """Values a second of ``draw(units, n / cores, os.urandom)`` on ``cores`` threads."""
    t0 = time.perf_counter()
    with ThreadPoolExecutor(cores) as pool:
        list(pool.map(lambda _: draw(units, n // cores, os.urandom), range(cores)))
    return n / (time.perf_counter() - t0)


def timed(f: Callable[[], object], n: int) -> float:
    t0 = time.perf_counter()
    f()
    return n / (time.perf_counter() - t0)


def spread(values: list[float], unit: str = "", fmt: str = "{:.2f}") -> str:
    v = sorted(values)
    return " / ".join(fmt.format(x) for x in (v[0], statistics.median(v), v[-1])) + unit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", nargs="?", type=float, default=4e6, help="values per run")
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    n, rounds = int(opts.size), opts.rounds
    cores = os.cpu_count() or 1
    print(machine())
    print(f"values per run: {n:,}; {rounds} interleaved rounds; {cores} cores (one thread each);")
    print("figures: min / median / max over the rounds, in millions of values a second")
    x = np.zeros(n)
    gen = np.random.default_rng(0)
    cases = (
        (
            "laplace",
            0.78,
            discrete_laplace,
            exact_grid(0.78)[1],
            add_laplace,
            lambda: gen.laplace(0, 0.78, n),
        ),
        (
            "gaussian",
            1.3,
            discrete_gaussian,
            gaussian_grid(1.3)[1],
            add_gaussian,
            lambda: gen.normal(0, 1.3, n),
        ),
    )
    for noise, scale, draw, units, add, numpy_draw in cases:
        per = bytes_per_value(draw, units, n)
        rows: dict[str, list[float]] = {k: [] for k in ("urandom", "sampler", "openssl", "release", "numpy")}
        for _ in range(rounds):
            rows["urandom"].append(source_rate(os.urandom, int(per * n), cores) / per)
            rows["sampler"].append(on_cores(draw, units, n, cores))
            rows["openssl"].append(source_rate(secure_bytes, int(per * n), cores) / per)
            rows["release"].append(timed(lambda: add(x, scale), n))  # noqa: B023 - called at once
            rows["numpy"].append(timed(numpy_draw, n))
        mega = {k: [v / 1e6 for v in vs] for k, vs in rows.items()}
        share_urandom = [s / u for s, u in zip(rows["sampler"], rows["urandom"], strict=True)]
        share_openssl = [s / u for s, u in zip(rows["release"], rows["openssl"], strict=True)]
        versus_numpy = [s / u for s, u in zip(rows["release"], rows["numpy"], strict=True)]
        print(f"{noise} (scale {scale}): {per:.2f} random bytes a value")
        print(f"  os.urandom limit ({cores} cores)             : {spread(mega['urandom'])}")
        print(f"  exact sampler reading os.urandom ({cores} thr.): {spread(mega['sampler'])}")
        shares = spread(share_urandom, fmt="{:.0%}")
        print(f"    share of the os.urandom limit            : {shares} (goal >= 50%)")
        print(f"  OpenSSL RAND_bytes limit ({cores} cores)     : {spread(mega['openssl'])}")
        print(f"  secure noise of a release (OpenSSL)        : {spread(mega['release'])}")
        print(f"    share of the OpenSSL limit               : {spread(share_openssl, fmt='{:.0%}')}")
        print(f"  NumPy seeded, one thread (insecure)        : {spread(mega['numpy'])}")
        print(f"    secure noise / NumPy                     : {spread(versus_numpy, 'x')}")


if __name__ == "__main__":
    main()
