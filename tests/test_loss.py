"""Exact privacy loss (SPEC 2.1): reference values, brute-force oracle, monotonicity."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pufferfish import DiscretePrior, Scenario, laplace_log_density, pair_privacy_loss, privacy_loss

from .conftest import brute_force_log_density, brute_force_loss, prior_pairs

TABLE1 = Scenario.single(DiscretePrior([0, 1], [0.52, 0.48]), DiscretePrior([0, 1], [0.5, 0.5]))
TABLE2 = Scenario.single(
    DiscretePrior([0, 1, 2, 3], [0.50001, 0, 0.00001, 0.49998]),
    DiscretePrior([0, 1, 2, 3], [0.49996, 0.00001, 0, 0.50003]),
)


def test_seed001_table1_loss_at_zero() -> None:
    """SPEC 2.1 reference: 001 Table 1 priors have loss 0.0408 with no noise."""
    loss = privacy_loss(TABLE1, 0.0)
    assert loss.loss == pytest.approx(np.log(0.5 / 0.48), abs=1e-15)
    assert loss.worst_y == 1.0 and loss.larger == "s_j"
    assert round(loss.loss, 4) == 0.0408


def test_loss_at_zero_is_infinite_when_supports_differ() -> None:
    loss, y, sign, _ = pair_privacy_loss(
        DiscretePrior([0, 1], [1, 0]), DiscretePrior([0, 1], [0.5, 0.5]), 0.0
    )
    assert loss == np.inf and y == 1.0 and sign == -1


def test_log_density_matches_closed_form_for_a_point_mass() -> None:
    p = DiscretePrior([2.0], [1.0])
    grid = np.array([-1.0, 2.0, 7.5])
    ld, bound = laplace_log_density(p, np.array([2.0]), 0.5)
    assert ld[0] == pytest.approx(-np.log(1.0), abs=1e-15)  # 1/(2*0.5) = 1
    with pytest.raises(ValueError, match="support must contain"):
        laplace_log_density(p, grid[[0, 2]], 0.5)
    with pytest.raises(ValueError, match="scale must be finite and > 0, got 0.0"):
        laplace_log_density(p, grid, 0.0)
    assert bound < 1e-12


def test_log_density_is_precise_for_huge_spans() -> None:
    """(x_n - x_1)/scale = 1e9: the log-space doubling scan keeps full precision."""
    p = DiscretePrior([0.0, 1.0, 1e9], [0.25, 0.5, 0.25])
    ld, _ = laplace_log_density(p, p.support, 1.0)
    expected = brute_force_log_density(p, p.support, 1.0)
    np.testing.assert_allclose(ld, expected, rtol=0, atol=1e-13)


def _longdouble_log_density(prior: DiscretePrior, ys: np.ndarray, scale: float) -> np.ndarray:
    """O(n^2) oracle in x87 extended precision (where the platform has it)."""
    keep = prior.pmf > 0
    x = prior.support[keep].astype(np.longdouble)
    logp = np.log(prior.pmf[keep].astype(np.longdouble))
    out = np.empty(ys.size, dtype=np.longdouble)
    for k, y in enumerate(ys.astype(np.longdouble)):
        terms = logp - np.abs(y - x) / np.longdouble(scale)
        top = terms.max()
        out[k] = top + np.log(np.exp(terms - top).sum())
    return out - np.log(np.longdouble(2 * scale))


@given(
    st.integers(2, 400),
    st.floats(1e-3, 1e3),
    st.floats(0.0, 700.0),
    st.integers(0, 2**32 - 1),
)
def test_log_density_error_is_within_its_bound(n: int, scale: float, spread: float, seed: int) -> None:
    """Every entry's error against an extended-precision O(n^2) oracle is within its stated bound.

    Random gaps (some far beyond the scale) and probabilities spread over ``e^-spread``.
    """
    from pufferfish.loss.exact import _log_density_and_errors

    rng = np.random.default_rng(seed)
    gaps = rng.exponential(scale, n) * np.exp(rng.uniform(-5, 8, n))
    support = np.cumsum(gaps)
    logw = -rng.uniform(0, spread, n)
    pmf = np.exp(logw - logw.max())
    pmf /= pmf.sum()
    p = DiscretePrior(support, pmf)
    ld, err = _log_density_and_errors(p, p.support, scale)
    expected = _longdouble_log_density(p, p.support, scale)
    assert np.all(np.abs(ld - expected).astype(float) <= err)
    assert float(err.max()) < 1e-10


def test_loss_bound_stays_small_on_a_million_points() -> None:
    """The doubling scan's rounding bound grows with log n: below 1e-10 at n = 10^6."""
    rng = np.random.default_rng(5)
    n = 1_000_000
    support = np.arange(n, dtype=float)
    sc = Scenario.single(
        DiscretePrior(support, rng.dirichlet(np.ones(n))), DiscretePrior(support, rng.dirichlet(np.ones(n)))
    )
    loss = privacy_loss(sc, 10.0)
    assert 0 < loss.error_bound < 1e-10


@given(prior_pairs(), st.floats(0.05, 20.0))
def test_loss_matches_brute_force_oracle(scenario: Scenario, scale: float) -> None:
    """O(n) loss == O(n^2) oracle on the union support, and no grid point between exceeds it."""
    loss = privacy_loss(scenario, scale)
    _, _, p, q = next(iter(scenario.iter_pairs()))
    lo, hi = min(p.support[0], q.support[0]), max(p.support[-1], q.support[-1])
    grid = np.linspace(lo - 3 * scale, hi + 3 * scale, 401)
    assert loss.loss == pytest.approx(brute_force_loss(scenario, scale), abs=1e-9)
    assert brute_force_loss(scenario, scale, extra=grid) <= loss.loss + 1e-9


@given(prior_pairs(), st.floats(0.05, 10.0), st.floats(1.0, 4.0))
def test_loss_is_non_increasing_in_scale(scenario: Scenario, scale: float, factor: float) -> None:
    """SPEC 2.1: Laplace(t2) = Laplace(t1) * (post-processing) for t2 > t1."""
    assert privacy_loss(scenario, scale * factor).loss <= privacy_loss(scenario, scale).loss + 1e-9


def test_worst_pair_and_prior_are_reported() -> None:
    from pufferfish import AdversaryPrior

    a = DiscretePrior([0, 1], [0.5, 0.5])
    b = DiscretePrior([0, 1], [0.9, 0.1])
    rho1 = AdversaryPrior("mild", {"x": a, "y": a, "z": b})
    rho2 = AdversaryPrior("strong", {"x": a, "y": b, "z": a})
    sc = Scenario((("x", "y"), ("x", "z")), (rho1, rho2))
    loss = privacy_loss(sc, 1.0)
    assert len(loss.pairs) == 4
    assert loss.loss == max(p.loss for p in loss.pairs)
    assert loss.loss > 0
    assert (loss.prior, loss.pair) in {("mild", ("x", "z")), ("strong", ("x", "y"))}
    with pytest.raises(ValueError, match="scale must be finite and >= 0, got -1"):
        privacy_loss(sc, -1)
