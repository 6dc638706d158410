"""Issue 19: places where a certified scale was not private, or a check refused valid answers.

Every case is checked against an oracle of its own: 50-digit mpmath closed forms or exact
``fractions.Fraction`` enumeration, never the library's own arithmetic.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from scipy.special import ndtr

from pufferfish.divergence import gaussian_delta_bound
from pufferfish.mechanisms import calibrate_noise
from pufferfish.priors import GaussianMixturePrior, Scenario


def mp_gaussian_delta(mean_i: float, var_i: float, mean_j: float, var_j: float, eps: float) -> mp.mpf:
    """max over both directions of int [N_i - e^eps N_j]_+, in 50-digit arithmetic.

    The set where ``log N_p - log N_q > eps`` is found from the quadratic's roots in mpmath; masses
    by complementary CDFs (``ncdf`` of the side that does not cancel at 50 digits is irrelevant)."""
    with mp.workdps(50):

        def one(mp_, vp, mq, vq):
            mp_, vp, mq, vq = (mp.mpf(x) for x in (mp_, vp, mq, vq))
            e = mp.mpf(eps)
            a2 = -1 / (2 * vp) + 1 / (2 * vq)
            a1 = mp_ / vp - mq / vq
            a0 = -(mp_**2) / (2 * vp) + mq**2 / (2 * vq) - mp.log(mp.sqrt(vp) / mp.sqrt(vq)) - e
            if a2 == 0:
                if a1 == 0:
                    ivs = [(-mp.inf, mp.inf)] if a0 > 0 else []
                else:
                    r = -a0 / a1
                    ivs = [(r, mp.inf)] if a1 > 0 else [(-mp.inf, r)]
            else:
                disc = a1 * a1 - 4 * a2 * a0
                if disc <= 0:
                    ivs = [(-mp.inf, mp.inf)] if a2 > 0 else []
                else:
                    r1, r2 = sorted([(-a1 - mp.sqrt(disc)) / (2 * a2), (-a1 + mp.sqrt(disc)) / (2 * a2)])
                    ivs = [(-mp.inf, r1), (r2, mp.inf)] if a2 > 0 else [(r1, r2)]

            def mass(lo, hi, m, v):
                s = mp.sqrt(v)

                def cdf(z):  # mpmath's erfc overflows far beyond where the value is 0 or 1
                    return mp.ncdf(min(max(z, mp.mpf(-1e6)), mp.mpf(1e6)))

                return cdf((hi - m) / s) - cdf((lo - m) / s)

            tot = sum((mass(lo, hi, mp_, vp) - mp.e**e * mass(lo, hi, mq, vq) for lo, hi in ivs), mp.mpf(0))
            return max(tot, mp.mpf(0))

        return max(one(mean_i, var_i, mean_j, var_j), one(mean_j, var_j, mean_i, var_i))


# ---------------------------------------------------------------------------------------------
# 1. Gaussian noise, Gaussian priors of unequal sd, large eps


REPRO_1 = dict(m2=9.058198841146433, s2=1.5511119871722199, eps=20.0, delta=3.216881533455247e-10)


def test_reproducer_1_gaussian_optimal_is_private() -> None:
    """Was: sigma 3.2756 with checked delta 3.2168e-10, true delta 2.0663e-8 (64x the target)."""
    sc = Scenario.single(GaussianMixturePrior.gaussian(0, 1), GaussianMixturePrior.gaussian(REPRO_1["m2"], REPRO_1["s2"]))
    r = calibrate_noise(sc, REPRO_1["eps"], delta=REPRO_1["delta"], noise="gaussian", mechanism="optimal")
    s2 = r.scale**2
    true = mp_gaussian_delta(0.0, 1.0 + s2, REPRO_1["m2"], REPRO_1["s2"] ** 2 + s2, REPRO_1["eps"])
    assert true <= REPRO_1["delta"]
    # and it is the optimum: 0.1% less noise fails (by the oracle)
    s2 = (0.999 * r.scale) ** 2
    assert mp_gaussian_delta(0.0, 1.0 + s2, REPRO_1["m2"], REPRO_1["s2"] ** 2 + s2, REPRO_1["eps"]) > REPRO_1["delta"]
    # the old sigma is not private (the audit's value)
    old = 3.275611962590187**2
    assert float(mp_gaussian_delta(0.0, 1 + old, REPRO_1["m2"], REPRO_1["s2"] ** 2 + old, 20.0)) == pytest.approx(
        2.0663e-8, rel=1e-4
    )


gauss_params = st.tuples(
    st.floats(-20, 20),  # mean_j - mean_i
    st.floats(0.05, 20),  # sd_i
    st.floats(0.05, 20),  # sd_j
    st.floats(0, 20),  # eps
)


@given(gauss_params)
@example((9.058198841146433, math.hypot(1.0, 3.275611962590187), math.hypot(1.5511119871722199, 3.275611962590187), 20.0))
@example((0.0, 2.0, 2.0, 0.5))
@example((1e-9, 2.0, 2.0 * (1 + 1e-13), 0.5))
@example((3.0, 1.0, 1.0, 20.0))
@example((13.0, 1.0, 0.5, 0.0))
@example((-1e-161, 0.2, 0.2, 0.5))
@example((1.0, 20.0, 19.999999999999996, 1.0))
def test_gaussian_delta_bound_contains_the_exact_value(params: tuple[float, float, float, float]) -> None:
    """The closed form and its derived error bound bracket the 50-digit value."""
    d, si, sj, eps = params
    vi, vj = si * si, sj * sj
    got = gaussian_delta_bound(0.0, vi, d, vj, eps)
    true = mp_gaussian_delta(0.0, vi, d, vj, eps)
    assert got.error_bound >= 0.0
    assert true <= got.delta + got.error_bound  # certified
    assert got.delta - got.error_bound - 1e-15 <= true  # and accurate
    # the bound is useful: relative to the masses, never a floor of order e^eps * 1e-16
    assert got.error_bound <= 1e-14 + 1e-10 * float(true)


def test_ndtr_relative_error_model() -> None:
    """scipy's ``ndtr(-z)`` is within 4 u (1 + z^2) relative of 40-digit mpmath (the bound uses 16)."""
    u = 2.0**-53
    rng = np.random.default_rng(1)
    zs = np.concatenate([rng.uniform(0, 38.4, 3000), np.logspace(-10, 1.2, 300), rng.uniform(37, 38.4, 300)])
    with mp.workdps(40):
        for z in zs:
            t = mp.ncdf(-mp.mpf(float(z)))
            v = float(ndtr(-z))
            if v < 1e-300:
                continue
            assert abs((mp.mpf(v) - t) / t) <= 4.5 * u * (1 + z * z)


@given(
    st.floats(-10, 10),
    st.floats(0.1, 5),
    st.floats(0.1, 5),
    st.floats(0.05, 20),
    st.floats(-12, math.log10(0.5)),
)
@example(REPRO_1["m2"], 1.0, REPRO_1["s2"], REPRO_1["eps"], math.log10(REPRO_1["delta"]))
def test_gaussian_noise_optimal_is_private_by_the_oracle(
    d: float, si: float, sj: float, eps: float, log_delta: float
) -> None:
    """Gaussian priors, Gaussian noise, eps up to 20, delta down to 1e-12: the optimal sigma's true
    delta (mpmath closed form) is within the target."""
    delta = 10.0**log_delta
    sc = Scenario.single(GaussianMixturePrior.gaussian(0.0, si), GaussianMixturePrior.gaussian(d, sj))
    r = calibrate_noise(sc, eps, delta=delta, noise="gaussian", mechanism="optimal")
    s2 = r.scale**2
    assert mp_gaussian_delta(0.0, si * si + s2, d, sj * sj + s2, eps) <= delta


# ---------------------------------------------------------------------------------------------
# 2. Multi-user sums at near-duplicate support points


def fraction_sum(*dists: dict) -> dict:
    """Exact distribution of a sum of independent discrete values (Fractions of the floats)."""
    from fractions import Fraction

    out = {Fraction(0): Fraction(1)}
    for d in dists:
        nxt: dict = {}
        for x, p in out.items():
            for y, q in d.items():
                nxt[x + y] = nxt.get(x + y, Fraction(0)) + p * q
        out = nxt
    return out


def as_fractions(prior) -> dict:
    from fractions import Fraction

    return {Fraction(float(x)): Fraction(float(p)) for x, p in zip(prior.support, prior.pmf) if p > 0}


def mp_laplace_loss(dist_i: dict, dist_j: dict, scale: float) -> mp.mpf:
    """Exact pufferfish loss of Laplace(scale) noise: max over support points (SPEC 2.1), 50 digits;
    scale 0: the largest log-ratio of the two pmfs (infinite where the supports differ)."""
    if scale == 0.0:
        if set(dist_i) != set(dist_j):
            return mp.inf
        return max(abs(mp.log(mp.mpf(dist_i[y].numerator) / dist_i[y].denominator * dist_j[y].denominator / dist_j[y].numerator)) for y in dist_i)
    with mp.workdps(50):
        b = mp.mpf(scale)
        ys = sorted(set(dist_i) | set(dist_j))

        def logf(d, y):
            return mp.log(sum(mp.mpf(p.numerator) / p.denominator * mp.e ** (-abs(mp.mpf(y.numerator) / y.denominator - mp.mpf(x.numerator) / x.denominator) / b) for x, p in d.items()))

        return max(abs(logf(dist_i, y) - logf(dist_j, y)) for y in ys)


def test_sum_distribution_keeps_near_duplicate_points() -> None:
    from fractions import Fraction

    from pufferfish import DiscretePrior, sum_distribution

    a, b = DiscretePrior([0, 1e-9, 10], [0.98, 0.01, 0.01]), DiscretePrior([0, 10], [0.5, 0.5])
    got = sum_distribution([a, b])
    exact = fraction_sum(as_fractions(a), as_fractions(b))
    assert got.size == len(exact) == 5
    for x, p in zip(got.support, got.pmf):
        key = min(exact, key=lambda k: abs(k - Fraction(float(x))))
        assert abs(key - Fraction(float(x))) <= Fraction(1, 10**15) * (1 + abs(key))
        assert p == pytest.approx(float(exact[key]), rel=1e-12)
    assert dict(zip(got.support.round(12).tolist(), got.pmf.round(12).tolist())) == {
        0.0: 0.49, 1e-9: 0.005, 10.0: 0.495, 10.000000001: 0.005, 20.0: 0.005
    }


@pytest.mark.parametrize("eps", [0.5, 1.0, 1.678, 3.0])
def test_pq_system_with_near_duplicates_is_private_by_fraction_enumeration(eps: float) -> None:
    from pufferfish import DiscretePrior, MultiUserSystem, User, calibrate_user

    p, q = DiscretePrior([0, 1, 3], [0.6, 0.3, 0.1]), DiscretePrior([0, 1, 3], [0.2, 0.3, 0.5])
    others = [
        DiscretePrior([2.0, 2.0000000001, 4, 5], [0.4, 0.3, 0.2, 0.1]),
        DiscretePrior([1.0, 1.0000000001, 2, 4], [0.1, 0.5, 0.2, 0.2]),
    ]
    system = MultiUserSystem((User("t", p, alternative=q), User("a", others[0]), User("b", others[1])))
    res = calibrate_user(system, "t", "P-Q", eps, "optimal")
    rest = fraction_sum(*(as_fractions(o) for o in others))
    xi = fraction_sum(as_fractions(p), rest)
    xj = fraction_sum(as_fractions(q), rest)
    assert mp_laplace_loss(xi, xj, res.calibration.scale) <= eps
    if res.calibration.scale > 0:  # and the optimum is tight: 1% less noise fails by the oracle
        assert mp_laplace_loss(xi, xj, 0.99 * res.calibration.scale) > eps


@pytest.mark.parametrize("near", [1.000000001, 1.0000000001])
def test_pq_system_whose_supports_differ_by_1e9_needs_noise(near: float) -> None:
    """Was: scale 0 (no noise) although the two query distributions have different supports."""
    from pufferfish import DiscretePrior, MultiUserSystem, User, calibrate_user

    p, q = DiscretePrior([0.0, 1.0], [0.5, 0.5]), DiscretePrior([0.0, near], [0.5, 0.5])
    system = MultiUserSystem((User("t", p, alternative=q), User("a", DiscretePrior([0, 1], [0.5, 0.5]))))
    res = calibrate_user(system, "t", "P-Q", 1.0, "optimal")
    assert res.calibration.scale > 0
    rest = as_fractions(DiscretePrior([0, 1], [0.5, 0.5]))
    xi, xj = fraction_sum(as_fractions(p), rest), fraction_sum(as_fractions(q), rest)
    assert mp_laplace_loss(xi, xj, res.calibration.scale) <= 1.0


def test_secret_names_keep_every_digit_and_compare_user_skips_lemma2_off_the_integers() -> None:
    from pufferfish import DiscretePrior, MultiUserSystem, User, compare_user
    from pufferfish.multiuser import secret_names

    u = User("u", DiscretePrior([0, 1], [0.5, 0.5]), values=(4.0, 4.000000001))
    assert secret_names(u, "ab") == ("u = 4", "u = 4.000000001")
    system = MultiUserSystem(
        (
            User("t", DiscretePrior([0, 1], [0.3, 0.7]), alternative=DiscretePrior([0, 1], [0.6, 0.4])),
            User("o", DiscretePrior([0.5, 1.25], [0.5, 0.5])),
        )
    )
    out = compare_user(system, "t", "P-Q", 1.0)
    skipped = {r.mechanism: r.reason for r in out if r.__class__.__name__ == "Skipped"}
    assert "integers" in skipped["lemma2"]
    assert any(getattr(r, "calibration", None) is not None for r in out)


def test_tilted_fft_sum_on_three_decimal_supports() -> None:
    """Was: ``math domain error`` (sqrt of a slightly negative tilted variance)."""
    from pufferfish import DiscretePrior, sum_distribution

    rng = np.random.default_rng(2)  # seed 2 raised before the fix
    priors = []
    for _ in range(int(rng.integers(20, 400))):
        k = int(rng.integers(2, 5))
        sup = np.sort(rng.choice(np.arange(0, int(rng.integers(5, 3000))), size=k, replace=False)) / 1000.0
        w = rng.uniform(0.001, 1, k) ** 3
        priors.append(DiscretePrior(sup, w / w.sum()))
    got = sum_distribution(priors)
    assert abs(float(np.exp(got.log_pmf).sum()) - 1.0) < 1e-9
    assert got.mean == pytest.approx(sum(p.mean for p in priors), rel=1e-9)
