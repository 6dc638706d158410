"""Certified ``I(S; Y)`` for discrete priors and Laplace noise in memory linear in the atoms.

:func:`pufferfish.loss.divergence.mutual_information` bounds ``log f_s`` on each interval of a grid
by every kernel's values at the interval's two ends: an array of (intervals x atoms) entries,
19,998 atoms x 12,048 grid points = 1.8 GiB per array for a 10,000-label column (issue 34: the
eps-MI check took 18 GB). With Laplace kernels and atoms only, two numbers per secret and
interval say everything: on an interval ``[a, c]`` holding no atom inside (every atom is a grid
point),

    f_s(y) = (A_s e^{-(y - a)/b} + C_s e^{-(c - y)/b}) / (2b),
    A_s = sum_{x <= a} w_s(x) e^{-(a - x)/b},    C_s = sum_{x >= c} w_s(x) e^{-(x - c)/b},

so, with ``h = c - a`` and ``t = y - a``:

* ``P_s([a, c]) = (A_s + C_s)(1 - e^{-h/b}) / 2`` exactly;
* ``f_s / fbar = (A_s + C_s z) / (A_m + C_m z)`` with ``z = e^{(2t - h)/b}`` (numerator and
  denominator times ``e^{t/b}``; ``A_m = sum_s pi_s A_s``, likewise ``C_m``): a ratio of two
  affine functions of ``z``, monotone in ``z`` and so in ``t``. The exact range of
  ``l_s = log f_s - log fbar`` on the interval is between its values at the two ends, and it is
  flat where one side's atoms dominate (the tails), where end-value kernel bounds would leave a
  width ``2h/b`` that no halving removes fast;
* halving ``[a, c]`` at ``m`` keeps ``A`` on the left half and ``C`` on the right, and gives
  ``C(m) = C e^{-(c - m)/b}``, ``A(m) = A e^{-(m - a)/b}``: refinement needs no atom again.

``A`` and ``C`` at the atoms come from one pass each way, ``A_j = log(e^{A_{j-1} - (x_j -
x_{j-1})/b} + w_j)`` in log space; the grid, the bracket of each interval's contribution
``pi_s P_s(I) [min l_s, max l_s]`` (``l_s = log f_s - log fbar``, capped at ``log(1/pi_s)``) and
the bisection of the widest brackets are those of :func:`pufferfish.loss.divergence.mutual_information`
(seed 004 Def 3), now at O(intervals x secrets) memory.

Rounding (``u = 2^-53``), by :func:`_log_error`: the step of the pass has an exponent
``(x_j - x_{j-1}) / b`` within ``2.01 u`` of itself (a subtraction and a division, relative),
a subtraction within ``u |s_j|`` and a ``logaddexp`` within ``4 u (1 + |A_j|)``; ``logaddexp`` is
1-Lipschitz, so errors add up along the pass, and the exponents telescope to the span of the
atoms over ``b``: ``E <= 3.01 u span / b + 5 u sum_j (1 + |A_j|)``. Every later shift (to a grid
point, at each halving) adds ``2.01 u`` of its exponent (these sum to at most the grid's span over
``b`` along any chain of halvings) and ``u`` of its result; each bound on ``log f`` a further
``8 u (1 + |value|)``. The brackets widen by twice the total, probabilities carry a relative
``e^E - 1 + 4 u``, and the sum of the ``N`` contributions a relative ``N u``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

_U = 2.0**-53


def _pass(x: NDArray[np.float64], lw: NDArray[np.float64], b: float) -> tuple[NDArray[np.float64], float]:
    """``log sum_{x_i <= x_j} w(x_i) e^{-(x_j - x_i)/b}`` at every atom (shape (S, n): one row per
    secret, ``lw`` the log weights, ``-inf`` where a secret has no atom), and the sum
    ``sum_j (1 + max_s |A_j|)`` over finite values for the error bound."""
    out = np.empty_like(lw)
    out[:, 0] = lw[:, 0]
    gaps = np.diff(x) / b
    prev = lw[:, 0]
    with np.errstate(invalid="ignore"):
        for j in range(1, x.size):
            prev = np.logaddexp(prev - gaps[j - 1], lw[:, j])
            out[:, j] = prev
    finite = np.where(np.isfinite(out), np.abs(out), 0.0)
    acc = float(np.sum(1.0 + finite.max(axis=0)))
    return out, acc


def intervals_to_split(err: NDArray[np.float64], room: int) -> NDArray[np.bool_]:
    """Which intervals to halve next: those carrying half of the summed error bound, and at least
    an eighth of them, at most ``room`` (the bisection of both information bounds)."""
    order = np.argsort(err)[::-1]
    cum = np.cumsum(err[order])
    n_split = max(int(np.searchsorted(cum, 0.5 * cum[-1])) + 1, min(order.size, 1 + order.size // 8))
    split = np.zeros(err.size, dtype=bool)
    split[order[: min(n_split, room)]] = True
    return split


def _ends(
    la: NDArray[np.float64], lc: NDArray[np.float64], h_over_b: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``log(A + C e^{-h/b})`` and ``log(A e^{-h/b} + C)``: ``log(2b f)`` at the interval's two
    ends, elementwise (``la``, ``lc`` are ``log A``, ``log C``)."""
    return np.logaddexp(la, lc - h_over_b), np.logaddexp(la - h_over_b, lc)


def laplace_atoms_information(
    locs: list[NDArray[np.float64]],
    log_weights: list[NDArray[np.float64]],
    scale: float,
    pi: NDArray[np.float64],
    grid: NDArray[np.float64],
    *,
    tol: float,
    max_intervals: int,
) -> tuple[float, float, int]:
    """``(estimate, error bound, intervals)`` of ``I(S; Y)`` on ``[grid[0], grid[-1]]``.

    Parameters
    ----------
    locs, log_weights : list of numpy.ndarray, one per secret
        The atoms of each secret's prior and their normalised log masses.
    scale : float
        Laplace ``b > 0``.
    pi : numpy.ndarray, shape (S,)
        The secret's marginal (> 0, summing to 1).
    grid : numpy.ndarray
        Sorted grid points holding every atom inside its range.
    tol : float
        Target of the summed half-widths (nats).
    max_intervals : int
        Cap on the intervals.

    Returns
    -------
    (float, float, int)
        The midpoint estimate of the integral over the grid's range (tails not included), the
        certified half-width plus rounding (module docstring), and the intervals used.
    """
    b = float(scale)
    s_count = len(locs)
    atoms = np.unique(np.concatenate(locs))
    lw = np.full((s_count, atoms.size), -np.inf)
    for s, (x, w) in enumerate(zip(locs, log_weights, strict=True)):
        lw[s, np.searchsorted(atoms, x)] = w
    left, acc_l = _pass(atoms, lw, b)
    right_rev, acc_r = _pass(-atoms[::-1], lw[:, ::-1], b)
    right = right_rev[:, ::-1]
    span = float(atoms[-1] - atoms[0]) / b
    pass_error = 3.01 * _U * span + 5.0 * _U * max(acc_l, acc_r)

    # A at each interval's left end (atoms <= a), C at its right end (atoms >= c)
    a, c = grid[:-1], grid[1:]
    ia = np.searchsorted(atoms, a, side="right") - 1
    ic = np.searchsorted(atoms, c, side="left")
    with np.errstate(invalid="ignore"):
        la = np.where(
            ia[None, :] >= 0, left[:, np.maximum(ia, 0)] - (a - atoms[np.maximum(ia, 0)]) / b, -np.inf
        )
        lc = np.where(
            ic[None, :] < atoms.size,
            right[:, np.minimum(ic, atoms.size - 1)] - (atoms[np.minimum(ic, atoms.size - 1)] - c) / b,
            -np.inf,
        )
    log_pi = np.log(pi)[:, None]
    cap = -log_pi

    def bracket(
        a: NDArray[np.float64], c: NDArray[np.float64], la: NDArray[np.float64], lc: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], float]:
        hb = (c - a) / b
        at_a, at_c = _ends(la, lc, hb[None, :])
        mix_a, mix_c = _ends(
            np.logaddexp.reduce(la + log_pi, axis=0), np.logaddexp.reduce(lc + log_pi, axis=0), hb
        )
        l_a, l_c = at_a - mix_a[None, :], at_c - mix_c[None, :]  # l_s is monotone in between
        lo_b = np.minimum(np.minimum(l_a, l_c), cap)
        hi_b = np.minimum(np.maximum(l_a, l_c), cap)
        with np.errstate(invalid="ignore"):
            probs = np.exp(np.logaddexp(la, lc)) * (-np.expm1(-hb)) / 2.0
        w = pi[:, None] * probs
        lo_b = np.where(w > 0, lo_b, 0.0)
        hi_b = np.where(w > 0, hi_b, 0.0)
        both = np.concatenate([at_a, at_c, mix_a, mix_c], axis=None)
        big = float(np.max(np.abs(both[np.isfinite(both)]), initial=0.0))
        return (
            np.sum(w * (lo_b + hi_b) / 2.0, axis=0),
            np.sum(w * (hi_b - lo_b) / 2.0, axis=0),
            np.sum(w * np.maximum(np.abs(lo_b), np.abs(hi_b)), axis=0),
            big,
        )

    est, err, mag, big = bracket(a, c, la, lc)
    rounds = 0
    while float(err.sum()) > tol and a.size < max_intervals:
        rounds += 1
        split = intervals_to_split(err, max_intervals - a.size)
        keep = ~split
        sa, sc, sla, slc = a[split], c[split], la[:, split], lc[:, split]
        m = (sa + sc) / 2.0
        na, nc = np.concatenate([sa, m]), np.concatenate([m, sc])
        nla = np.concatenate([sla, sla - (m - sa) / b], axis=1)  # [a, m] keeps A; [m, c] gets A(m)
        nlc = np.concatenate([slc - (sc - m) / b, slc], axis=1)  # [a, m] gets C(m); [m, c] keeps C
        ne, nr, nm, nbig = bracket(na, nc, nla, nlc)
        big = max(big, nbig)
        a, c = np.concatenate([a[keep], na]), np.concatenate([c[keep], nc])
        la, lc = np.concatenate([la[:, keep], nla], axis=1), np.concatenate([lc[:, keep], nlc], axis=1)
        est, err = np.concatenate([est[keep], ne]), np.concatenate([err[keep], nr])
        mag = np.concatenate([mag[keep], nm])
    shift_error = 3.01 * _U * float(grid[-1] - grid[0]) / b + _U * (rounds + 2) * (1.0 + big)
    log_error = pass_error + shift_error + 8.0 * _U * (1.0 + big)
    total_mag = float(mag.sum())
    rounding = (
        2.0 * 2.0 * log_error * float(np.sum(pi))  # brackets widened by 2 E on each side, mass <= 1
        + (math.expm1(log_error) + 4.0 * _U) * total_mag  # probabilities
        + a.size * _U * 1.01 * (total_mag + float(np.abs(est).sum()) + float(err.sum()))  # the sum
        + a.size * 1e-300 * float(np.max(cap))  # masses that underflow to 0 (each < 2^-1022)
    )
    return float(est.sum()), float(err.sum()) + rounding, int(a.size)


def applies(densities: list[Any]) -> bool:
    """Whether :func:`laplace_atoms_information` applies: Laplace noise, ``b > 0``, atoms only."""
    return all(d.laplace and d.scale > 0 and not np.any(d.spreads > 0) for d in densities)
