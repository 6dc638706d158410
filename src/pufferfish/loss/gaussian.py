"""Two Gaussian releases: the hockey-stick divergence in closed form, with a derived error bound.

For Gaussian priors and Gaussian noise the two released densities are ``N(mu_i, v_i)`` and
``N(mu_j, v_j)``; the set where ``f_i > e^eps f_j`` is bounded by the roots of a quadratic, and
``delta`` is a sum of normal masses between them. :func:`gaussian_delta_bound` returns the value
and a certified bound on its rounding error (derivation beside the code; normal tails from
:func:`pufferfish.loss.density.normal_tail`).
"""

from __future__ import annotations

import math

from pufferfish.loss.density import FAR_TAIL, U, normal_tail
from pufferfish.loss.divergence import DeltaBound

# ---------------------------------------------------------------------------------------------
# Two Gaussian releases: the hockey-stick divergence in closed form, with a derived error bound


def _mass(lo: float, hi: float, mean: float, std: float, shift: float) -> tuple[float, float]:
    """``(P(lo < Y < hi), error bound)`` for ``Y ~ N(mean, std^2)``; ``lo < hi`` may be infinite.

    The mass is a difference of the two smaller tails (``Phi(-z_lo) - Phi(-z_hi)`` right of the
    mean, ``Phi(z_hi) - Phi(z_lo)`` left of it, ``1 - Phi(z_lo) - Phi(-z_hi)`` across it), so no
    tail near 1 is subtracted from 1. Each tail carries the model of :func:`normal_tail`, with
    ``extra = shift/std`` (``shift`` bounds ``|mean|`` in the coordinates the roots were found in:
    the subtraction, division, square root and a relative 2u in the variance).
    """

    def tail(x: float, upper: bool) -> tuple[float, float]:
        # P(Y > x) (upper) or P(Y < x): Phi(-z) with z = +-(x - mean)/std >= 0 at every call
        z = (x - mean) / std if math.isfinite(x) else math.copysign(math.inf, x)
        t, e = normal_tail(max(z if upper else -z, 0.0), shift / std)
        return float(t), float(e)

    z_lo = (lo - mean) / std if math.isfinite(lo) else -math.inf
    z_hi = (hi - mean) / std if math.isfinite(hi) else math.inf
    if z_lo >= 0.0:  # right of the mean: upper tails
        (ta, ea), (tb, eb) = tail(lo, True), tail(hi, True)
        m = ta - tb
    elif z_hi <= 0.0:  # left of the mean: lower tails
        (ta, ea), (tb, eb) = tail(hi, False), tail(lo, False)
        m = ta - tb
    else:  # across the mean
        (ta, ea), (tb, eb) = tail(lo, False), tail(hi, True)
        m = 1.0 - ta - tb
        return max(m, 0.0), ea + eb + 2.0 * U
    return max(m, 0.0), ea + eb + U * (ta + tb)


def _band(r: float, w: float, s: float) -> float:
    """``2 w max N(0, s^2)`` over ``[r - w, r + w]`` (the density at the point nearest 0), rounded up."""
    if not math.isfinite(r) or w == 0.0:
        return 0.0
    z = min(max(abs(r) - w, 0.0) / s, 1e150)
    log_val = math.log(2.0 * w) - 0.5 * z * z - math.log(s * math.sqrt(2.0 * math.pi))
    return math.exp(min(log_val, 700.0)) * (1.0 + 8.0 * U)


def _gaussian_one_direction(
    mean_i: float, var_i: float, mean_j: float, var_j: float, epsilon: float
) -> tuple[float, float]:
    """``(int [N_i - e^eps N_j]_+, error bound)`` by the closed form.

    Notes
    -----
    In ``t = y - mean_i`` the log-ratio minus eps is the quadratic ``q(t) = A t^2 + B t + C`` with
    ``A = (v_i - v_j)/(2 v_i v_j)``, ``B = -d/v_j``, ``C = d^2/(2 v_j) + log(v_j/v_i)/2 - eps``,
    ``d = mean_j - mean_i``. With ``Bset = {q > 0}`` (an interval, one or two half-lines, empty or the
    line; roots by the cancellation-free formula), ``delta = P_i(Bset) - e^eps P_j(Bset)``.

    Error bound, derived for this formula:

    1. *Masses.* Each mass is a difference of two tails from the side without cancellation
       (:func:`_mass`); the sum of their stated errors, the errors of the ``P_j`` terms times
       ``e^eps``, and ``4 u (P_i + e^eps P_j)`` for the final sum, product and subtraction. The
       bound is relative to the masses, not to 1, so ``e^eps`` never multiplies an absolute
       ``1e-16`` (seed audit, issue 19).
    2. *Roots.* For any set ``B'``, ``P_i(B') - e^eps P_j(B') <= delta``; the computed roots define
       ``B'``, and ``delta - value(B') = int_{Bset xor B'} |N_i - e^eps N_j|``. The true quadratic
       (variances within 2u, rounding of ``A, B, C`` and a backward error of 8u in each
       coefficient for the root formula) differs from the computed one by at most
       ``dq(t) = eA t^2 + eB |t| + eC``; on ``|t| <= R`` (R reaches 40 standard deviations of both
       densities) by at most ``Dq = dq(R)``. The two sets differ only where ``|q| <= Dq``. For a
       quadratic with ``disc = B^2 - 4AC >= 8 |A| Dq``: ``|q(t)| >= sqrt(disc)/2 |t - r|`` within
       half the root gap of a root ``r`` and ``|q| >= disc/(4|A|) >= 2 Dq`` elsewhere, so that
       set lies in bands ``|t - r| <= w = 2 Dq/sqrt(disc)``; linear: ``w = Dq/|B|``. There
       ``|q_true| <= 2 Dq``, so ``|N_i - e^eps N_j| <= N_i expm1(2 Dq)``, and a band adds at most
       ``2 w max_band N_i expm1(2 Dq)`` (second order). Beyond ``R`` both tails are below 1e-300.
       If the condition on ``disc`` fails (roots nearly merged), ``|q| <= 2 Dq`` only within
       ``W = sqrt(|disc|/(4A^2) + 2 Dq/|A|)`` of the vertex, where ``|q_true| <= 3 Dq``: the term is
       ``P_i(vertex +- W) expm1(3 Dq)``. A constant ``q`` within ``Dq`` of 0 means equal means and
       variances within 4u: ``delta <= TV <= 4u`` (Pinsker).
    """
    d = mean_j - mean_i
    si, sj = math.sqrt(var_i), math.sqrt(var_j)
    e_eps = math.exp(min(epsilon, 700.0))  # smaller e^eps: larger delta, the safe side
    a2 = (var_i - var_j) / (2.0 * var_i * var_j)
    a1 = -d / var_j
    c_d = d * d / (2.0 * var_j)
    c_log = 0.5 * math.log(var_j / var_i)
    a0 = c_d + c_log - epsilon
    # coefficient errors: inputs (variances within 2u, d within u) and roundings
    e_a = U * (1.0 / var_i + 1.0 / var_j) + 5.0 * U * abs(a2)
    e_b = 4.0 * U * abs(a1)
    e_c = 7.0 * U * c_d + 6.0 * U + U * abs(c_log) + U * epsilon + 3.0 * U * abs(a0)
    big_r = max(40.0 * si, abs(d) + 40.0 * sj)

    # Dq = dq(R): the coefficient errors plus 8u of each coefficient (the root formula), at |t| = R
    d_q = (
        (e_a + 8.0 * U * abs(a2)) * big_r * big_r
        + (e_b + 8.0 * U * abs(a1)) * big_r
        + e_c
        + 8.0 * U * abs(a0)
    )
    # uncertain: an extra error term for where the sign of q may differ (derivation in Notes)
    if a2 == 0.0 and a1 == 0.0:
        intervals = [(-math.inf, math.inf)] if a0 > 0 else []
        # q is constant; if it is within d_q of 0 the two releases are one Gaussian up to variances
        # within 4u: delta <= TV <= sqrt(KL/2) <= 4u/(2 sqrt 2) (Pinsker), else expm1(2 d_q) x 1
        uncertain = min(4.0 * U, math.expm1(2.0 * d_q)) if abs(a0) <= d_q else 0.0
    elif a2 == 0.0:
        r = -a0 / a1
        intervals = [(r, math.inf)] if a1 > 0 else [(-math.inf, r)]
        uncertain = _band(r, d_q / abs(a1) + 4.0 * U * abs(r), si) * math.expm1(2.0 * d_q)
    else:
        disc = a1 * a1 - 4.0 * a2 * a0
        disc_err = 4.0 * U * (a1 * a1 + 4.0 * abs(a2 * a0))
        if disc <= 0.0:
            intervals = [(-math.inf, math.inf)] if a2 > 0 else []
        else:
            qq = -0.5 * (a1 + math.copysign(math.sqrt(disc), a1))
            r1, r2 = sorted((qq / a2, a0 / qq))
            intervals = [(-math.inf, r1), (r2, math.inf)] if a2 > 0 else [(r1, r2)]
        if abs(disc) - disc_err >= 8.0 * abs(a2) * d_q:
            if disc > 0.0:
                w = 2.0 * d_q / math.sqrt(disc - disc_err)
                uncertain = sum(_band(r, w + 4.0 * U * abs(r), si) for r in (r1, r2)) * math.expm1(2.0 * d_q)
            else:
                uncertain = 0.0
        else:
            # roots nearly merged: |q| <= 2 d_q only within W of the vertex; there |q_true| <= 3 d_q
            vertex = -a1 / (2.0 * a2)
            half = math.sqrt((abs(disc) + disc_err) / (4.0 * a2 * a2) + 2.0 * d_q / abs(a2)) * (1.0 + 8.0 * U)
            m, e = _mass(vertex - half, vertex + half, 0.0, si, 0.0)
            uncertain = min(m + e, 1.0) * math.expm1(3.0 * d_q)
    p_i = p_j = err_i = err_j = 0.0
    for lo, hi in intervals:
        m, e = _mass(lo, hi, 0.0, si, 0.0)
        p_i, err_i = p_i + m, err_i + e
        m, e = _mass(lo, hi, d, sj, abs(d))
        p_j, err_j = p_j + m, err_j + e
    value = p_i - e_eps * p_j
    # |q_true| <= 2 Dq wherever the signs can differ, so the term never exceeds expm1(2 Dq) P_i(R)
    uncertain = min(uncertain, math.expm1(2.0 * d_q)) + FAR_TAIL
    error = err_i + e_eps * err_j + 4.0 * U * (p_i + e_eps * p_j) + uncertain
    return value, error


def _tv_upper(mean_i: float, var_i: float, mean_j: float, var_j: float) -> float:
    """Upper bound on the total variation of two Gaussians, which bounds delta at every eps >= 0.

    Pinsker: ``TV <= sqrt(KL/2)`` with ``KL = (rho - log1p(rho) + d^2/v_j)/2``, ``rho = v_i/v_j - 1``;
    ``rho - log1p(rho) <= rho^2 / (2 (1 - |rho|))``, with ``|rho|`` raised by 8u for the variances'
    rounding (within 2u each) and the division. Tight when the two are nearly one Gaussian, where
    the closed form's root bound is not.
    """
    rho = abs(var_i / var_j - 1.0) + 8.0 * U
    if rho >= 0.5:
        return 1.0
    kl = 0.5 * (rho * rho / (2.0 * (1.0 - rho)) + (mean_j - mean_i) ** 2 / var_j * (1.0 + 4.0 * U))
    return min(math.sqrt(kl / 2.0) * (1.0 + 4.0 * U), 1.0)


def gaussian_delta_bound(
    mean_i: float, var_i: float, mean_j: float, var_j: float, epsilon: float
) -> DeltaBound:
    """Certified hockey-stick divergence of ``N(mean_i, var_i)`` and ``N(mean_j, var_j)``.

    Parameters
    ----------
    mean_i, mean_j : float
        Means (finite).
    var_i, var_j : float
        Variances (finite, > 0).
    epsilon : float
        Finite and >= 0.

    Returns
    -------
    DeltaBound
        Both directions; ``error_bound`` derived for the closed form as written (see
        :func:`_gaussian_one_direction`); ``intervals = 0``.

    Raises
    ------
    ValueError
        On a non-finite or negative ``epsilon``, or a variance that is not finite and > 0.

    Notes
    -----
    Gaussian priors with Gaussian noise give Gaussian releases (SPEC sec 5; seed 003 eq (16));
    equal variances give Balle and Wang (2018) Thm 8.
    """
    eps = float(epsilon)
    if not math.isfinite(eps) or eps < 0.0:
        raise ValueError(f"epsilon must be finite and >= 0, got {epsilon!r}")
    for name, v in (("var_i", var_i), ("var_j", var_j)):
        if not (math.isfinite(v) and v > 0.0):
            raise ValueError(f"{name} must be finite and > 0, got {v!r}")
    fwd = _gaussian_one_direction(mean_i, var_i, mean_j, var_j, eps)
    bwd = _gaussian_one_direction(mean_j, var_j, mean_i, var_i, eps)
    f_val, b_val = max(fwd[0], 0.0), max(bwd[0], 0.0)
    delta = max(f_val, b_val)
    upper = min(max(f_val + fwd[1], b_val + bwd[1]), _tv_upper(mean_i, var_i, mean_j, var_j))
    err = max(upper - delta, 0.0)
    return DeltaBound(eps, delta, err, f_val, b_val, 0)
