"""The vectorised exact discrete Laplace sampler (issue 18): exactness against the pmf computed
with fractions, against OpenDP's sampler, its tails, its grid and its threads.

The statistical tests drive the sampler from a deterministic byte source of their own (a seeded
NumPy generator's bytes, injected through ``random_bytes``), so they are reproducible; the OS
source is exercised by the release tests.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import binomtest, chisquare, ks_2samp

from pufferfish.discrete_noise import (
    T_MAX,
    bernoulli_exp,
    discrete_laplace,
    geometric_exp1,
    uniform_below,
)
from pufferfish.noise import add_laplace, exact_grid


def _source(seed: int):
    gen = np.random.default_rng(seed)
    return lambda n: gen.bytes(n)


def _exact_pmf(t: int, z: int) -> float:
    """``Pr(Z = z)`` from the series with fractions: ``q = e^{-1/t}`` to 40 terms, normalised."""
    q = sum(Fraction((-1) ** j, math.factorial(j) * t**j) for j in range(40))
    weight = q ** abs(z)
    return float((1 - q) / (1 + q) * weight)


@pytest.mark.parametrize("t", [1, 3, 10])
def test_discrete_laplace_matches_its_pmf(t: int) -> None:
    n = 1_000_000
    z = discrete_laplace(t, n, _source(1000 + t))
    top = 6 * t
    values = np.arange(-top, top + 1)
    counts = np.array([(z == v).sum() for v in values])
    pmf = np.array([_exact_pmf(t, int(v)) for v in values])
    observed = np.append(counts, n - counts.sum())
    expected = np.append(pmf, 1 - pmf.sum()) * n
    assert chisquare(observed, expected).pvalue > 1e-3


def test_tails_beyond_ten_scales() -> None:
    t, n = 4, 1_000_000
    z = discrete_laplace(t, n, _source(7))
    q = math.exp(-1 / t)
    beyond = 2 * q ** (10 * t + 1) / (1 + q)  # Pr(|Z| > 10 t)
    assert binomtest(int((np.abs(z) > 10 * t).sum()), n, beyond).pvalue > 1e-3


def test_bernoulli_and_geometric_are_exact() -> None:
    n = 400_000
    for num, den in ((0, 7), (3, 7), (7, 7), (1, 1)):
        b = bernoulli_exp(np.full(n, num, dtype=np.int64), den, _source(num + 10 * den))
        assert binomtest(int(b.sum()), n, math.exp(-num / den)).pvalue > 1e-3
    v = geometric_exp1(n, _source(3))
    values = np.arange(8)
    pmf = (1 - math.exp(-1)) * np.exp(-values)
    counts = np.array([(v == k).sum() for k in values])
    assert chisquare(np.append(counts, n - counts.sum()), np.append(pmf, 1 - pmf.sum()) * n).pvalue > 1e-3


@pytest.mark.parametrize("m", [2, 5, 300, 2**40 + 3])
def test_uniform_below_is_uniform(m: int) -> None:
    n = 200_000
    u = uniform_below(m, n, _source(m % 1000))
    assert u.min() >= 0 and u.max() < m
    bins = min(m, 16)
    counts = np.bincount((u * bins // m).astype(np.int64), minlength=bins)
    cell = np.array([((b + 1) * m + bins - 1) // bins - (b * m + bins - 1) // bins for b in range(bins)]) / m
    assert chisquare(counts, cell * n).pvalue > 1e-3


def test_against_opendp_two_sample() -> None:
    x = np.zeros(60_000)
    ours = add_laplace(x, 2.5).values
    theirs = add_laplace(x, 2.5, sampler="opendp").values
    assert ks_2samp(ours, theirs).pvalue > 1e-3


def test_values_on_the_grid_and_scale_rounded_up() -> None:
    x = np.array([0.0, 1.0, 2.0, 3.0] * 5000)
    out = add_laplace(x, 0.7)
    k, _, rounded = exact_grid(0.7)
    assert out.granularity == 2.0**k and out.scale == rounded >= 0.7 and rounded - 0.7 <= 2.0**k
    steps = out.values / 2.0**k
    assert np.array_equal(steps, np.rint(steps))
    assert out.secure and "exact discrete Laplace" in out.sampler and f"2^{k}" in out.sampler


def test_threads_draw_different_noise() -> None:
    x = np.zeros(80_000)
    out = add_laplace(x, 1.0, workers=2)
    assert out.workers == 2
    first, second = out.values[:40_000], out.values[40_000:]
    assert not np.array_equal(first, second)
    assert np.unique(out.values).size > 70_000  # no stream repeated inside or across threads


def test_bad_arguments() -> None:
    for t in (0, T_MAX + 1, 1.5, True):
        with pytest.raises(ValueError, match="t must be an int in"):
            discrete_laplace(t, 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="sampler must be one of exact, opendp, got 'fast'"):
        add_laplace(np.zeros(3), 1.0, sampler="fast")
