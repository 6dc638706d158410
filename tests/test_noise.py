"""Laplace samplers: distribution (Kolmogorov-Smirnov), grid, reproducibility, validation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pufferfish import add_laplace
from pufferfish.noise.samplers import grid_exponent


def test_insecure_sampler_is_laplace_and_reproducible() -> None:
    a = add_laplace(np.zeros(20000), 1.7, rng=12345)
    b = add_laplace(np.zeros(20000), 1.7, rng=np.random.default_rng(12345))
    np.testing.assert_array_equal(a.values, b.values)
    assert not a.secure and "INSECURE" in a.sampler and a.seed == 12345
    assert stats.kstest(a.values, stats.laplace(scale=1.7).cdf).pvalue > 0.01


def test_secure_sampler_is_laplace_on_its_grid() -> None:
    x = np.repeat([0.0, 3.0], 10000)
    r = add_laplace(x, 0.8)
    assert r.secure and r.granularity == 2.0 ** grid_exponent(0.8)
    noise = r.values - x
    # OS randomness cannot be seeded: a failure here has probability 1e-6.
    assert stats.kstest(noise, stats.laplace(scale=0.8).cdf).pvalue > 1e-6
    steps = noise / r.granularity
    np.testing.assert_array_equal(steps, np.round(steps))  # every output lies on the grid


def test_zero_scale_and_empty_input() -> None:
    assert add_laplace([1.0, 2.0], 0.0).values.tolist() == [1.0, 2.0]
    assert add_laplace([], 1.0).values.size == 0


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="scale must be finite and >= 0, got -1"):
        add_laplace([0.0], -1)
    with pytest.raises(ValueError, match="values must be finite, got nan at index 1"):
        add_laplace([0.0, np.nan], 1.0)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator, an int seed or None"):
        add_laplace([0.0], 1.0, rng="seed")  # type: ignore[arg-type]


def test_parallel_secure_sampler_keeps_order_and_draws_independent_chunks() -> None:
    """Four workers on 100,000 values: one chunk each, in order, i.i.d. Laplace, no repeated stream."""
    n, workers = 100_000, 4
    x = np.repeat(np.arange(workers) * 1e6, n // workers)
    r = add_laplace(x, 0.8, workers=workers)
    assert r.secure and r.workers == workers and r.describe()["workers"] == workers
    noise = r.values - x
    assert np.abs(noise).max() < 100  # each value kept its place: chunks were not reordered
    assert stats.kstest(noise, stats.laplace(scale=0.8).cdf).pvalue > 1e-6
    parts = noise.reshape(workers, -1)
    corr = np.corrcoef(parts)
    # Independent chunks: no two workers share a stream (|r| of independent chunks of 25,000 has
    # sd 0.0063; 0.05 is 7.9 sd, exceeded with probability < 1e-12).
    assert np.abs(corr[np.triu_indices(workers, 1)]).max() < 0.05
    steps = noise / r.granularity
    np.testing.assert_array_equal(steps, np.round(steps))


def test_small_inputs_use_one_worker_and_bad_workers_are_refused() -> None:
    r = add_laplace(np.zeros(1000), 1.0, workers=8)
    assert r.workers == 1
    assert add_laplace(np.zeros(10), 1.0, rng=1, workers=3).workers == 1
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match=f"workers must be an int in \\[1, 1024\\], got {bad!r}"):
            add_laplace([0.0], 1.0, workers=bad)  # type: ignore[arg-type]
