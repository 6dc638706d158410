"""Normal-Laplace densities at extreme ratios, the certified loss supremum, and seed 003 Fig 2."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy.integrate import trapezoid

from pufferfish.calibration import calibrate_optimal, summation_scenario
from pufferfish.loss.density import release_density
from pufferfish.loss.divergence import hockey_stick, privacy_loss_sup
from pufferfish.priors.distributions import DiscretePrior, GaussianMixturePrior
from pufferfish.priors.scenario import Scenario
from pufferfish.reproduce import identical_users_pair_limit, seed003_fig2

G = GaussianMixturePrior


def _mp_log_normal_laplace(y: float, mu: float, s: float, b: float) -> float:
    """log of N(mu, s^2) * Laplace(b) at y, in 60-digit arithmetic (SPEC sec 4 closed form)."""
    mpmath.mp.dps = 60
    u, s_, b_ = mpmath.mpf(y) - mu, mpmath.mpf(s), mpmath.mpf(b)
    c = s_**2 / (2 * b_**2)
    left = mpmath.exp(c - u / b_) * mpmath.ncdf(u / s_ - s_ / b_)
    right = mpmath.exp(c + u / b_) * mpmath.ncdf(-u / s_ - s_ / b_)
    return float(mpmath.log((left + right) / (2 * b_)))


@pytest.mark.parametrize("s, b", [(1.0, 1e-6), (1.0, 1e-3), (3.0, 0.05), (1.0, 1.0), (0.01, 5.0)])
def test_normal_laplace_log_density_matches_high_precision(s: float, b: float) -> None:
    f = release_density(G.gaussian(0.5, s), "laplace", b)
    ys = np.array([-30.0, -4.0, -1.0, 0.0, 0.3, 0.5, 2.0, 7.5, 40.0])
    got = f.log_pdf(ys)
    want = np.array([_mp_log_normal_laplace(float(y), 0.5, s, b) for y in ys])
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11)


def _random_pair(rng: np.random.Generator, kind: str):
    if kind == "gmm":
        m = int(rng.integers(1, 4))
        return G(rng.dirichlet(np.ones(m)), rng.normal(0, 5, m), np.exp(rng.normal(0, 1.2, m)))
    k = int(rng.integers(1, 8))
    support = np.sort(rng.choice(np.arange(-10, 11), k, replace=False)).astype(float)
    return DiscretePrior(support, rng.dirichlet(np.ones(k)))


@pytest.mark.slow
def test_loss_sup_brackets_a_brute_force_grid() -> None:
    """The certified [loss, loss + error_bound] contains the max over a dense grid (both prior kinds)."""
    rng = np.random.default_rng(7)
    for trial in range(40):
        kind = "gmm" if trial % 2 else "discrete"
        p, q = _random_pair(rng, kind), _random_pair(rng, kind)
        b = float(np.exp(rng.normal(0.5, 1.0)))
        fi, fj = release_density(p, "laplace", b), release_density(q, "laplace", b)
        lb = privacy_loss_sup(fi, fj)
        lo = min(fi.range()[0], fj.range()[0]) - 30 * b
        hi = max(fi.range()[1], fj.range()[1]) + 30 * b
        y = np.concatenate([np.linspace(lo, hi, 200_001), lb.worst_y + b * np.linspace(-1, 1, 2001)])
        brute = float(np.abs(fi.log_pdf(y) - fj.log_pdf(y)).max())
        assert lb.loss <= brute + 1e-12, (trial, lb, brute)
        assert brute <= lb.upper, (trial, lb, brute)
        assert lb.error_bound < 1e-8, (trial, lb)


@pytest.mark.parametrize("users, variance", [(2, 1.0), (30, 4.0), (1000, 25.0)])
def test_pure_eps_for_identical_users_is_the_tail_limit(users: int, variance: float) -> None:
    """Seed 003 Cor 1 pair: pure eps needs b = (|mu| + sqrt(mu^2 + 2 eps sigma^2)) / (2 eps) for every K.

    The log-ratio tends to ``mu/b + sigma^2/(2 b^2)`` on the right (it never exceeds it here), so
    eq (11)'s limit ``b = mu/eps`` as K grows gives pure eps only with its delta > 0.
    """
    sd = math.sqrt(variance)
    sc = summation_scenario([1.0] * users, [sd] * users)
    i, j = sc.pairs[0]
    prior = sc.priors[0]
    one = Scenario.single(prior.conditionals[i], prior.conditionals[j], names=(i, j))
    limit = identical_users_pair_limit(1.0, variance, 1.0)
    opt = calibrate_optimal(one, 1.0, delta=0.0)
    assert opt.scale == pytest.approx(limit, rel=1e-7)
    assert opt.scale >= limit * (1 - 1e-12)  # the tail limit is a lower bound on any pure-eps scale
    fi = release_density(prior.conditionals[i], "laplace", 1.0)
    fj = release_density(prior.conditionals[j], "laplace", 1.0)
    assert privacy_loss_sup(fi, fj).loss == pytest.approx(1.0 + variance / 2.0, abs=1e-9)


def test_seed003_fig2_eq11_passes_and_optimal_is_below() -> None:
    res = seed003_fig2(variances=(1.0, 25.0), users=(2, 10, 100))
    assert len(res.rows) == 2 * 3 * 2
    for r in res.rows:
        assert r.checked_delta_at_eq11 <= r.delta  # eq (11) passes the exact check
        assert r.optimal_scale <= r.eq11_scale
        # the optimum is 0 exactly when the priors alone are (eps, delta)-indistinguishable
        assert (r.optimal_scale == 0.0) == (r.priors_delta <= r.delta)
    # the paper's (1, 0.3): the priors already pass for every K and sigma^2 here (Fig 2 adds noise)
    assert all(r.optimal_scale == 0.0 for r in res.rows if r.delta == 0.3)
    k2 = {(r.variance, r.delta): r for r in res.rows if r.users == 2}
    assert k2[(1.0, 0.3)].eq11_scale == pytest.approx(1 + (math.sqrt(2) - 1) * 1.0364333894937898, rel=1e-9)
    assert k2[(1.0, 0.3)].priors_delta == pytest.approx(0.18937, abs=1e-5)
    for v, (opt, limit) in res.pure.items():
        assert opt == pytest.approx(limit, rel=1e-7), v
    one = hockey_stick(
        release_density(G.gaussian(2, math.sqrt(2)), "laplace", 0.0),
        release_density(G.gaussian(1, 1), "laplace", 0.0),
        1.0,
    )
    assert one.delta == pytest.approx(k2[(1.0, 0.3)].priors_delta, abs=1e-12)


@pytest.mark.slow
def test_hockey_stick_matches_a_brute_force_grid() -> None:
    """delta (both directions) within its error bound of a trapezoid rule on 1,000,001 points."""
    rng = np.random.default_rng(11)
    for trial in range(10):
        kind = "gmm" if trial % 2 else "discrete"
        p, q = _random_pair(rng, kind), _random_pair(rng, kind)
        b = float(np.exp(rng.normal(0.3, 0.7)))
        eps = float(rng.choice([0.1, 0.5, 1.0, 2.0]))
        fi, fj = release_density(p, "laplace", b), release_density(q, "laplace", b)
        hb = hockey_stick(fi, fj, eps)
        lo, hi = min(fi.range()[0], fj.range()[0]), max(fi.range()[1], fj.range()[1])
        y = np.linspace(lo, hi, 1_000_001)
        dens_i, dens_j = np.exp(fi.log_pdf(y)), np.exp(fj.log_pdf(y))
        e = math.exp(eps)
        brute = max(
            trapezoid(np.maximum(dens_i - e * dens_j, 0.0), y),
            trapezoid(np.maximum(dens_j - e * dens_i, 0.0), y),
        )
        assert abs(brute - hb.delta) <= hb.error_bound + 1e-8, (trial, hb, brute)
