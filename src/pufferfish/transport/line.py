"""The 1-D Kantorovich (W1) optimal transport plan between two discrete priors.

In one dimension the optimal plan for any convex cost ``c(|x - x'|)`` is the monotone
("quantile", "north-west corner") coupling, whose joint CDF is ``min(F_i(x), F_j(x'))``
(seed 002 sec 3.1; seed 000 eq 6; seed 001 eq 20-22; SPEC sec 1). It has at most ``n + m - 1``
atoms and is built here from one merge of the two CDFs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from pufferfish.priors.distributions import DiscretePrior


@dataclass(frozen=True, eq=False)
class TransportPlan:
    """A coupling ``pi`` of two discrete priors, stored as its atoms.

    Attributes
    ----------
    source : numpy.ndarray, shape (K,)
        ``x`` of each atom: a support point of the first prior ``P(. | s_i)``.
    target : numpy.ndarray, shape (K,)
        ``x'`` of each atom: a support point of the second prior ``P(. | s_j)``.
    mass : numpy.ndarray, shape (K,)
        ``pi(x, x') > 0`` of each atom; the masses sum to 1.

    Notes
    -----
    Atoms are sorted by ``source`` and, within it, by ``target`` (both are non-decreasing along the
    atoms for the monotone plan). ``K <= n + m - 1`` for priors with ``n`` and ``m`` points of
    positive probability.
    """

    source: NDArray[np.float64]
    target: NDArray[np.float64]
    mass: NDArray[np.float64]

    @property
    def displacement(self) -> NDArray[np.float64]:
        """``|x - x'|`` of each atom, shape (K,)."""
        return np.abs(self.source - self.target)

    @property
    def max_displacement(self) -> float:
        """``max |x - x'|`` over the plan's support: W-infinity in 1-D (SPEC sec 1).

        This is the sensitivity of the Kantorovich mechanism (seed 002 Lemma 1; seed 001 eq 4).
        """
        return float(self.displacement.max())

    def cost(self, power: float = 1.0) -> float:
        """``sum pi(x, x') |x - x'|^power``; with ``power=1`` the W1 distance."""
        return float(np.dot(self.mass, self.displacement**power))

    def to_dense(
        self, source_support: NDArray[np.float64], target_support: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """The plan as a matrix, rows on ``source_support`` and columns on ``target_support``.

        Parameters
        ----------
        source_support : numpy.ndarray, shape (n,)
            Strictly increasing grid containing every ``source`` value.
        target_support : numpy.ndarray, shape (m,)
            Strictly increasing grid containing every ``target`` value.

        Returns
        -------
        numpy.ndarray, shape (n, m)
            ``out[a, b] = pi(source_support[a], target_support[b])``.
        """
        rows = np.searchsorted(source_support, self.source)
        cols = np.searchsorted(target_support, self.target)
        out = np.zeros((len(source_support), len(target_support)))
        np.add.at(out, (rows, cols), self.mass)
        return out


def kantorovich_plan(prior_i: DiscretePrior, prior_j: DiscretePrior) -> TransportPlan:
    """The Kantorovich optimal transport plan between two 1-D discrete priors.

    Solves ``min_pi sum pi(x, x') c(|x - x'|)`` over couplings ``pi`` of ``prior_i`` and
    ``prior_j`` for every convex cost ``c`` at once: the minimiser is the monotone coupling with
    joint CDF ``min(F_i(x), F_j(x'))``.

    Parameters
    ----------
    prior_i : DiscretePrior
        ``P(. | s_i)``, the first marginal (rows, ``x``).
    prior_j : DiscretePrior
        ``P(. | s_j)``, the second marginal (columns, ``x'``).

    Returns
    -------
    TransportPlan
        Its atoms, at most ``n + m - 1`` of them for ``n`` and ``m`` points of positive mass.

    Notes
    -----
    Seed 001 eq (20)-(22), seed 000 eq (6), seed 002 sec 3.1. Each interval between consecutive
    levels of the two CDFs is one atom, sent from the ``prior_i`` quantile to the ``prior_j``
    quantile of that level.

    *Precision.* The float cumulative sums err by at most ``k u`` at the ``k``-th point
    (``u = 2^-53``). When every two levels of the merged CDFs are more than ``4 u N`` apart
    (``N`` points in all), their order is the exact one, and the plan is built from one merge of
    the float CDFs (O(n + m)). Otherwise (a level within the rounding of another: nearly equal
    cumulative sums, or a mass below the rounding) the float order cannot be trusted (issue 29:
    the tolerance once merged a chain of such levels and sent 0.5 of the mass to the wrong
    point), and the plan is the north-west corner rule on the masses as exact rationals: the
    ``c_k / n`` each prior's masses are within 4 ulp of, when one ``n <= 2^24`` with
    ``sum c_k = n`` exists (priors estimated from counts, or written in decimals: ``0.1 + 0.2``
    then ties ``0.3``, as the counts or decimals do), else the floats as stored (multiples of
    ``2^-E``); each atom's mass is rounded to the nearest float once, at the end. Which reading
    is taken decides only which plan is built; the mechanisms' scales are then checked against
    the exact loss of the stored priors (:func:`pufferfish.calibration.registry.calibrate`).
    Either way every point of positive mass has an atom and, with ``K`` atoms and ``N`` points in
    all, ``|row sum - pmf| <= 2 (N + K + 2) u`` (same for columns): :func:`marginal_error_bound`,
    tested. When the floats are read as stored, their two exact sums may differ (by at most
    ``N u``); the excess of one is sent to the other's last point.

    Examples
    --------
    >>> plan = kantorovich_plan(DiscretePrior([0, 1], [0.52, 0.48]),
    ...                         DiscretePrior([0, 1], [0.5, 0.5]))
    >>> [(float(a), float(b), round(float(m), 6))
    ...  for a, b, m in zip(plan.source, plan.target, plan.mass)]
    [(0.0, 0.0, 0.5), (0.0, 1.0, 0.02), (1.0, 1.0, 0.48)]
    """
    x_i, p_i, f_i = _positive_cdf(prior_i)
    x_j, p_j, f_j = _positive_cdf(prior_j)
    levels = np.sort(np.concatenate([f_i, f_j]), kind="stable")  # one merge of two sorted runs
    if not _float_order_is_exact(prior_i, prior_j, levels):
        return _exact_corner(x_i, p_i, x_j, p_j)
    levels = levels[np.concatenate([np.diff(levels) > 0, [True]])]
    mass = np.diff(levels, prepend=0.0)
    rows = np.searchsorted(f_i, levels, side="left")
    cols = np.searchsorted(f_j, levels, side="left")
    return TransportPlan(source=x_i[rows], target=x_j[cols], mass=mass)


def max_displacement_from_cdfs(prior_i: DiscretePrior, prior_j: DiscretePrior) -> float:
    """``max |x - x'|`` over the support of the Kantorovich plan, from the CDFs alone.

    Parameters
    ----------
    prior_i, prior_j : DiscretePrior
        The two priors.

    Returns
    -------
    float
        The plan's largest displacement (W-infinity in 1-D), in the unit of the support.

    Notes
    -----
    Seed 000 Lemma 3, eq (25), restated with quantiles. The mass of a point ``x`` of ``prior_i``
    fills the levels ``(F_i(x-), F_i(x)]`` and the monotone plan couples it with the quantiles of
    ``prior_j`` at those levels, so its farthest partners are the quantiles at the two ends:
    ``min{x' : F_j(x') > F_i(x-)}`` and ``min{x' : F_j(x') >= F_i(x)}``. The second is the first
    case of eq (25). The paper's third case (``F_i(x) < F_j(x)``,
    ``min{Delta > 0 : F_i(x) >= F_j(x - Delta)}``) misses leftward moves: for
    ``prior_i = delta_1`` and ``prior_j = delta_0`` it gives 0 although the plan moves mass by 1
    (see ``tests/test_transport.py``). Both priors' points are scanned. Only points of positive
    mass count. Where two levels lie within the rounding of the cumulative sums, their float order
    is not trusted and the plan's exact integer route decides (:func:`kantorovich_plan`).
    """
    levels = np.sort(np.concatenate([_positive_cdf(prior_i)[2], _positive_cdf(prior_j)[2]]))
    if not _float_order_is_exact(prior_i, prior_j, levels):
        return kantorovich_plan(prior_i, prior_j).max_displacement  # exact integer route
    return max(_quantile_reach(prior_i, prior_j), _quantile_reach(prior_j, prior_i))


def _quantile_reach(prior_a: DiscretePrior, prior_b: DiscretePrior) -> float:
    """Largest ``|x - x'|`` between a point ``x`` of ``prior_a`` and its partners in ``prior_b``."""
    x_a, _, f_a = _positive_cdf(prior_a)
    x_b, _, f_b = _positive_cdf(prior_b)
    f_before = np.concatenate([[0.0], f_a[:-1]])  # F_a(x-)
    last = np.minimum(np.searchsorted(f_b, f_a, side="left"), f_b.size - 1)
    first = np.minimum(np.searchsorted(f_b, f_before, side="right"), last)
    return float(max(np.abs(x_b[first] - x_a).max(), np.abs(x_b[last] - x_a).max()))


def _positive_cdf(
    prior: DiscretePrior,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Support points of positive mass, their masses, and the CDF on them (last entry 1)."""
    keep = prior.pmf > 0
    cdf = np.cumsum(prior.pmf[keep])
    cdf[-1] = 1.0
    return prior.support[keep], prior.pmf[keep], cdf


def _level_tolerance(n: int) -> float:
    """Twice the rounding bound of a cumulative sum of ``n`` probabilities: float levels farther
    apart than this are in the order of the exact ones (each errs by at most ``n u``)."""
    return 4.0 * float(np.finfo(np.float64).eps) * n


def _float_order_is_exact(
    prior_i: DiscretePrior, prior_j: DiscretePrior, levels: NDArray[np.float64]
) -> bool:
    """Whether the merged float levels (sorted) are ordered as the exact cumulative sums.

    True when every two levels are more than :func:`_level_tolerance` apart, or when the two
    priors' positive masses are the same array, each prior's own levels are that far apart, and
    the only closer levels are equal ones (one of each prior: the exact sums are equal too, the
    same additions in the same order from the same numbers).
    """
    gaps = np.diff(levels)
    tol = _level_tolerance(levels.size)
    if np.all(gaps > tol):
        return True
    a, b = prior_i.pmf[prior_i.pmf > 0], prior_j.pmf[prior_j.pmf > 0]
    if not (a.size == b.size and bool(np.array_equal(a, b))):
        return False
    own = np.diff(np.cumsum(a))
    return bool(np.all(own > tol)) and bool(np.all((gaps == 0) | (gaps > tol)))


def _exact_corner(
    x_i: NDArray[np.float64], p_i: NDArray[np.float64], x_j: NDArray[np.float64], p_j: NDArray[np.float64]
) -> TransportPlan:
    """The north-west corner (monotone) plan of the masses as exact integers (see the Notes of
    :func:`kantorovich_plan`)."""
    (ints_i, den_i), (ints_j, den_j) = _exact_masses(p_i), _exact_masses(p_j)
    den = den_i * den_j // math.gcd(den_i, den_j)  # one denominator for both priors
    ints_i = [v * (den // den_i) for v in ints_i]
    ints_j = [v * (den // den_j) for v in ints_j]
    rows: list[int] = []
    cols: list[int] = []
    masses: list[int] = []
    i = j = 0
    left_i, left_j = ints_i[0], ints_j[0]
    while True:
        t = min(left_i, left_j)
        rows.append(i)
        cols.append(j)
        masses.append(t)
        left_i -= t
        left_j -= t
        if left_i == 0 and i + 1 < len(ints_i):
            i += 1
            left_i = ints_i[i]
        if left_j == 0 and j + 1 < len(ints_j):
            j += 1
            left_j = ints_j[j]
        if left_i == 0 or left_j == 0:
            break  # one side is exhausted (the advances above found no next point)
    # what the other side has left is the excess of its exact sum over the first's (<= N u, the
    # pmfs' rounding; none for rational masses): sent to the last point of the exhausted side, so
    # every point has an atom
    rest_i = ([(i, left_i)] if left_i else []) + [(k, ints_i[k]) for k in range(i + 1, len(ints_i))]
    rest_j = ([(j, left_j)] if left_j else []) + [(k, ints_j[k]) for k in range(j + 1, len(ints_j))]
    tail = [(k, len(ints_j) - 1, v) for k, v in rest_i] + [(len(ints_i) - 1, k, v) for k, v in rest_j]
    for r, c, v in tail:
        if rows[-1] == r and cols[-1] == c:
            masses[-1] += v  # the same pair as the last atom: one atom (at most N - 1 in all)
        else:
            rows.append(r)
            cols.append(c)
            masses.append(v)
    mass = np.array([m / den for m in masses])  # int / int: each rounded once, to nearest
    return TransportPlan(source=x_i[np.array(rows)], target=x_j[np.array(cols)], mass=mass)


#: Largest denominator tried when reading a prior's masses as the rationals ``c_k / n`` they were
#: rounded from (:func:`_exact_masses`): two fractions of denominators at most ``2^24`` differ by
#: at least ``2^-48``, far above the rounding of a float, so the reading is unique.
_MAX_DENOMINATOR = 2**24


def _exact_masses(pmf: NDArray[np.float64]) -> tuple[list[int], int]:
    """``(c, n)``: the masses as exact rationals ``c[k] / n`` (``pmf > 0``).

    When every ``pmf[k]`` is within 4 ulp of ``c[k] / n`` for one ``n <= 2^24`` with
    ``sum c = n`` (a prior estimated from counts, ``c / n`` computed in floats, or written in
    decimals: ``0.1, 0.2, 0.7``), those rationals; they sum to exactly 1, as the prior they stand
    for does. The reading is unique: two fractions of denominators at most ``2^24`` differ by more
    than ``2^-48``, far beyond 4 ulp. Otherwise the floats themselves, ``pmf[k] = c[k] 2^-E``.
    """
    if float(pmf.min()) < (1.0 - 2.0**-50) / _MAX_DENOMINATOR:
        # no c / n with n <= 2^24 is that small (c >= 1), within 4 ulp: the floats as stored
        return _float_masses(pmf)
    fractions = [Fraction(v).limit_denominator(_MAX_DENOMINATOR) for v in pmf.tolist()]
    n = 1
    for f in fractions:
        n = n * f.denominator // math.gcd(n, f.denominator)
        if n > _MAX_DENOMINATOR:
            break
    else:
        counts = [f.numerator * (n // f.denominator) for f in fractions]
        close = all(
            abs(float(f) - v) <= 4 * math.ulp(v) for f, v in zip(fractions, pmf.tolist(), strict=True)
        )
        if sum(counts) == n and close:
            return counts, n
    return _float_masses(pmf)


def _float_masses(pmf: NDArray[np.float64]) -> tuple[list[int], int]:
    """``(c, 2^E)`` with ``pmf[k] = c[k] / 2^E`` exactly (every float is a dyadic rational)."""
    mantissa, exponent = np.frexp(pmf)
    ints = (mantissa * 2.0**53).astype(np.int64)  # exact: 53-bit mantissas
    shifts = exponent.astype(np.int64) - 53
    e = -int(shifts.min())
    return [int(v) << int(k + e) for v, k in zip(ints.tolist(), shifts.tolist(), strict=True)], 2**e


def marginal_error_bound(plan: TransportPlan, prior_i: DiscretePrior, prior_j: DiscretePrior) -> float:
    """The guaranteed bound on ``|row or column sum of plan - pmf|`` of :func:`kantorovich_plan`.

    Parameters
    ----------
    plan : TransportPlan
        ``kantorovich_plan(prior_i, prior_j)``.
    prior_i, prior_j : DiscretePrior

    Returns
    -------
    float
        ``2 (N + K + 2) u``, ``N`` the points of positive mass of both priors, ``K`` the atoms,
        ``u = 2^-53``: each float level errs by at most ``N u`` and each telescoped difference
        by one more rounding per atom (float route); each atom's conversion to float errs by
        ``u`` relative and the exact sums by ``N u`` (exact route).
    """
    n = int((prior_i.pmf > 0).sum() + (prior_j.pmf > 0).sum())
    return 2.0 * (n + plan.mass.size + 2) * 2.0**-53
