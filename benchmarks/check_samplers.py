"""Large-sample goodness of fit of the exact samplers (issue 45's rewrite), beyond the unit tests.

Run: ``python benchmarks/check_samplers.py [N]`` (default N = 3 * 10^7 draws a case; 19 s
here). Draws from :func:`pufferfish.noise.discrete.discrete_laplace` at small integer scales
(where ``A``, the geometric part, and the sign rejection matter most) and
:func:`pufferfish.noise.discrete.discrete_gaussian` at small sigmas (the fallback to exact
integers included: ``margin=1``), with OpenSSL's randomness, and prints the chi-square p-value
against the exact pmf over ``|z| <= 8 t`` (Laplace) or ``6 s`` (Gaussian), the rest one cell; then
Kolmogorov-Smirnov p-values at the largest scales (``T_MAX``, ``S_MAX``). A sampler off by a
relative ``10^-3`` in one cell's probability fails at these sizes; p-values are uniform under
the null, so one small value among the cases is expected now and then: re-run before reading
much into it.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _timing import machine
from scipy.stats import chisquare, kstest, laplace, norm

from pufferfish.noise.discrete import (
    S_MAX,
    T_MAX,
    discrete_gaussian,
    discrete_laplace,
    gaussian_pmf,
    laplace_pmf,
)


def chi_square(z: np.ndarray, top: int, pmf: np.ndarray) -> float:
    counts = np.bincount(z[np.abs(z) <= top] + top, minlength=2 * top + 1)
    observed = np.append(counts, z.size - counts.sum())
    expected = np.append(pmf, 1 - pmf.sum()) * z.size
    return float(chisquare(observed, expected).pvalue)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", nargs="?", type=float, default=3e7, help="draws a case")
    n = int(parser.parse_args().size)
    print(machine())
    print(f"draws a case: {n:,}")
    t0 = time.perf_counter()
    for t in (1, 2, 3, 5, 17):
        values = np.arange(-8 * t, 8 * t + 1)
        p = chi_square(discrete_laplace(t, n), 8 * t, laplace_pmf(t, values))
        print(f"  discrete Laplace t = {t:>2}: chi-square p = {p:.3g}")
    for s, margin in ((1, 2.0**-32), (2, 2.0**-32), (3, 2.0**-32), (10, 2.0**-32), (3, 1.0)):
        values = np.arange(-6 * s, 6 * s + 1)
        p = chi_square(discrete_gaussian(s, n, margin=margin), 6 * s, gaussian_pmf(s, values))
        print(f"  discrete Gaussian s = {s:>2} (margin {margin:g}): chi-square p = {p:.3g}")
    m = min(n, 4_000_000)
    z = discrete_laplace(T_MAX, m).astype(np.float64) / T_MAX
    print(f"  discrete Laplace t = 2^45, {m:,} draws: KS p = {kstest(z, laplace().cdf).pvalue:.3g}")
    z = discrete_gaussian(S_MAX, m).astype(np.float64) / S_MAX
    print(f"  discrete Gaussian s = 2^45 - 1, {m:,} draws: KS p = {kstest(z, norm().cdf).pvalue:.3g}")
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
