"""The 1-D Kantorovich (W1) optimal transport plan between two discrete priors.

In one dimension the optimal plan for any convex cost ``c(|x - x'|)`` is the monotone
("quantile", "north-west corner") coupling, whose joint CDF is ``min(F_i(x), F_j(x'))``
(seed 002 sec 3.1; seed 000 eq 6; seed 001 eq 20-22; SPEC sec 1). It has at most ``n + m - 1``
atoms and is built here from one merge of the two CDFs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .priors import DiscretePrior


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
    Seed 001 eq (20)-(22), seed 000 eq (6), seed 002 sec 3.1. The breakpoints of the two CDFs are
    merged (a stable sort of two sorted runs, i.e. a single merge, O(n + m)); each interval between
    consecutive breakpoints is one atom, sent from the ``prior_i`` quantile to the ``prior_j``
    quantile of that level. Row and column sums telescope to the input probabilities, so the
    marginals are exact up to the rounding of the cumulative sums.

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
    tol = _level_tolerance(f_i.size + f_j.size)
    # One merge of two sorted runs (timsort detects the runs), then drop levels that repeat
    # within the rounding of the cumulative sums.
    levels = np.sort(np.concatenate([f_i, f_j]), kind="stable")
    levels = levels[np.concatenate([np.diff(levels) > tol, [True]])]
    levels[-1] = 1.0
    mass = np.diff(levels, prepend=0.0)
    rows = _quantile_index(f_i, levels, tol)
    cols = _quantile_index(f_j, levels, tol)
    keep = mass > 0
    rows, cols, mass = rows[keep], cols[keep], mass[keep]
    # A point whose probability is below the rounding of the CDF makes no level of its own; it
    # still gets an atom, to the other prior's quantile at its level, so no mass is ignored.
    lone_i = _unused(x_i.size, rows)
    lone_j = _unused(x_j.size, cols)
    if lone_i.size or lone_j.size:
        to_j = _quantile_index(f_j, f_i[lone_i], tol)
        to_i = _quantile_index(f_i, f_j[lone_j], tol)
        rows = np.concatenate([rows, lone_i, to_i])
        cols = np.concatenate([cols, to_j, lone_j])
        mass = np.concatenate([mass, p_i[lone_i], p_j[lone_j]])
        order = np.lexsort((cols, rows))
        rows, cols, mass = rows[order], cols[order], mass[order]
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
    (see ``tests/test_transport.py``). Both priors' points are scanned, so a point whose mass is
    below the rounding of the cumulative sums is not missed. Only points of positive mass count.
    """
    return max(_quantile_reach(prior_i, prior_j), _quantile_reach(prior_j, prior_i))


def _quantile_reach(prior_a: DiscretePrior, prior_b: DiscretePrior) -> float:
    """Largest ``|x - x'|`` between a point ``x`` of ``prior_a`` and its partners in ``prior_b``."""
    x_a, _, f_a = _positive_cdf(prior_a)
    x_b, _, f_b = _positive_cdf(prior_b)
    tol = _level_tolerance(f_a.size + f_b.size)
    f_before = np.concatenate([[0.0], f_a[:-1]])  # F_a(x-)
    last = _quantile_index(f_b, f_a, tol)
    first = np.minimum(np.searchsorted(f_b, f_before + tol, side="right"), last)
    return float(max(np.abs(x_b[first] - x_a).max(), np.abs(x_b[last] - x_a).max()))


def _unused(size: int, used: NDArray[np.intp]) -> NDArray[np.intp]:
    """Indices in ``range(size)`` that ``used`` does not contain, increasing (O(size))."""
    mark = np.zeros(size, dtype=bool)
    mark[used] = True
    return np.flatnonzero(~mark)


def _positive_cdf(
    prior: DiscretePrior,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Support points of positive mass, their masses, and the CDF on them (last entry 1)."""
    keep = prior.pmf > 0
    cdf = np.cumsum(prior.pmf[keep])
    cdf[-1] = 1.0
    return prior.support[keep], prior.pmf[keep], cdf


def _quantile_index(cdf: NDArray[np.float64], levels: NDArray[np.float64], tol: float) -> NDArray[np.intp]:
    """Index of the quantile at each level: the first point with ``cdf >= level`` (within ``tol``)."""
    return np.minimum(np.searchsorted(cdf, levels - tol, side="left"), cdf.size - 1)


def _level_tolerance(n: int) -> float:
    """Rounding bound of a cumulative sum of ``n`` probabilities: levels closer are equal.

    A true probability below this bound cannot be told from rounding in float64; such an atom is
    merged into its neighbour. Every scale is then checked against the exact privacy loss, which
    uses the priors directly, so a merge can never make a released scale unsafe unnoticed.
    """
    return 4.0 * float(np.finfo(np.float64).eps) * n
