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
