"""Laplace samplers: distribution (Kolmogorov-Smirnov), grid, reproducibility, validation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pufferfish import add_laplace
from pufferfish.noise import grid_exponent


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
