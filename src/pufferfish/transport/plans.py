"""Transport plans between two joint priors in d dimensions, for the cost ``d(x, x')`` of a
:class:`~.joint.Metric` (issue 17).

* :func:`kantorovich_plan`: a W1-optimal plan, ``min_pi sum pi(x, x') d(x, x')`` over the
  couplings of ``P(. | s_i)`` and ``P(. | s_j)``, by POT's exact network simplex (``ot.emd``).
  Its largest ``d`` on the support sets the Kantorovich mechanism's scale (seed 002 Thm 1:
  ``eta = eps / max d``). In more than one dimension the W1-optimal plan is in general not
  unique, and different optimal plans can have different largest distances.
* :func:`bottleneck_plan`: the W-infinity plan, ``min_pi max_{pi(x, x') > 0} d(x, x')``
  (Song, Wang and Chaudhuri 2017's Wasserstein mechanism; seed 000 calls it hard to compute).
  Its value is one of the distinct pairwise distances; it is found by bisection over them, each
  step asking whether the masses can be coupled using only pairs within the distance, which is
  a maximum flow (``scipy.sparse.csgraph.maximum_flow``) on integer masses. Its value is at most
  the Kantorovich plan's largest distance; in one dimension both are the monotone plan's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.sparse.csgraph import maximum_flow

from pufferfish.loss.divergence import MemoryLimitError
from pufferfish.priors.joint import JointPrior, Metric

#: Reduced cost (relative to ``max d``) below which a pair counts as on the W1-optimal face.
FACE_TOL = 1e-9

#: Largest total integer mass of the flow (scipy's maximum flow works in int32).
FLOW_TOTAL_MAX = 2**31 - 1

#: Largest ``n x m`` (distinct tuples of the two priors) a plan is computed for: the dense cost
#: matrix, POT's plan and the flow graph take about :data:`PLAN_BYTES_PER_ENTRY` bytes per entry
#: (47 for Kantorovich, 89 for W-infinity at 2,000 x 2,000 tuples, ``python
#: benchmarks/bench_joint_large.py --bytes``); beyond it the plan answers "not
#: run" with the memory it would need (issue 31: the W-infinity plan needed 23 GiB at 20,000).
MAX_PLAN_ENTRIES = 25_000_000

#: Peak bytes per entry of the ``n x m`` matrices of a plan (an upper estimate).
PLAN_BYTES_PER_ENTRY = 96

#: Total of the integer masses when the priors carry no counts (or their product is too large).
FLOW_GRID = 2**30


@dataclass(frozen=True, eq=False)
class VectorPlan:
    """A coupling of two joint priors, stored as its atoms.

    Attributes
    ----------
    source, target : numpy.ndarray of intp, shape (K,)
        Index of each atom's tuple in ``prior_i.support`` and ``prior_j.support``.
    mass : numpy.ndarray, shape (K,)
        ``pi(x, x') > 0``; the masses sum to 1.
    distance : numpy.ndarray, shape (K,)
        ``d(x, x')`` of each atom.
    kind : {"kantorovich", "bottleneck"}
    exact_masses : bool
        True when the masses are the priors' own (``emd``, or a maximum flow on their integer
        counts); False when the flow ran on masses rounded to the grid ``2^-30``, so the
        marginals are the priors' within ``2^-30`` per tuple.
    """

    source: NDArray[np.intp]
    target: NDArray[np.intp]
    mass: NDArray[np.float64]
    distance: NDArray[np.float64]
    kind: str
    exact_masses: bool = True

    @property
    def max_distance(self) -> float:
        """``max d(x, x')`` over the support: the sensitivity of seed 002 Thm 1."""
        return float(self.distance.max())

    def cost(self) -> float:
        """``sum pi(x, x') d(x, x')`` (W1 for the Kantorovich plan)."""
        return float(np.dot(self.mass, self.distance))

    def marginals(self, n: int, m: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The plan's two marginals, shapes (n,) and (m,)."""
        row = np.bincount(self.source, weights=self.mass, minlength=n).astype(np.float64)
        col = np.bincount(self.target, weights=self.mass, minlength=m).astype(np.float64)
        return row, col


def _check_pair(prior_i: JointPrior, prior_j: JointPrior, metric: Metric, what: str) -> None:
    """Same dimensions, and a plan that fits in memory (refused before allocating)."""
    if not prior_i.dimension == prior_j.dimension == metric.dimension:
        raise ValueError(
            "prior_i, prior_j and metric must have the same dimension, got "
            f"{prior_i.dimension}, {prior_j.dimension} and {metric.dimension}"
        )
    entries = prior_i.size * prior_j.size
    if entries > MAX_PLAN_ENTRIES:
        raise MemoryLimitError(
            f"not run: the {what} plan needs about {entries * PLAN_BYTES_PER_ENTRY / 2**30:.1f} GiB for "
            f"{prior_i.size:,} x {prior_j.size:,} distinct tuples (dense cost and plan matrices): bin "
            "the columns (fewer distinct values)"
        )


def kantorovich_plan(prior_i: JointPrior, prior_j: JointPrior, metric: Metric) -> VectorPlan:
    """A W1-optimal plan for the cost ``d`` of ``metric``, by POT's exact ``emd``.

    Parameters
    ----------
    prior_i, prior_j : JointPrior
        Same dimension ``d``; ``n`` and ``m`` tuples (``n m <= MAX_PLAN_ENTRIES``).
    metric : Metric
        The cost ``d(x, x') = sum_k |x_k - x'_k| / w_k``.

    Returns
    -------
    VectorPlan
        ``kind="kantorovich"``: among the W1-optimal plans, one whose largest distance is
        smallest.

    Raises
    ------
    ValueError
        If the dimensions differ.
    pufferfish.loss.divergence.MemoryLimitError
        If ``n m > MAX_PLAN_ENTRIES`` ("not run: ... needs about N GiB", before allocating).
    RuntimeError
        If the network simplex stops before optimality (its warning is quoted).

    Notes
    -----
    Problem: ``min_{pi >= 0} sum_{x, x'} pi(x, x') d(x, x')`` subject to
    ``sum_{x'} pi(x, x') = P(x | s_i)`` and ``sum_x pi(x, x') = P(x' | s_j)`` (seed 002 eq (4),
    Thm 1). The L1 cost has many optimal plans (already in one dimension, where any plan that
    never moves mass both ways across a point is optimal), and their largest distances differ
    widely: on a test case the network simplex's optimal vertex moved mass 4.3 against the
    monotone plan's 0.6. Seed 002 Thm 1's bound holds for any coupling (``f_i(y) = sum
    pi(x, x') N(y - x) <= e^{eta max d} f_j(y)``), so the mechanism should use the optimal plan
    of smallest largest distance. ``ot.emd`` (Bonneel et al. 2011's network simplex) gives the
    optimum and dual potentials ``u, v``; by complementary slackness a coupling is W1-optimal
    iff it lives on the pairs of zero reduced cost ``d - u - v`` (taken as
    ``<= FACE_TOL max d``, and always containing emd's own plan). On those pairs the plan of
    smallest largest distance is found as in :func:`bottleneck_plan`. In one dimension the
    monotone plan of :func:`pufferfish.transport.line.kantorovich_plan` is W1-optimal and attains
    W-infinity, so the largest distance equals today's. (A first version broke ties with the
    cost ``d + 2^-20 d^2 / max d``; the network simplex's tolerances ignored so small a
    difference, and a 1-D case came out at 0.8 against 0.7.) If the integer flow cannot carry
    the masses on those pairs (masses rounded without counts), emd's plan is returned.
    """
    _check_pair(prior_i, prior_j, metric, "Kantorovich")
    dist = metric.distances(prior_i.support, prior_j.support)
    n, m = dist.shape
    import ot  # POT loads scikit-learn and pandas (about 0.4 s): only when a plan is computed

    plan, log = ot.emd(prior_i.pmf, prior_j.pmf, dist, numItermax=max(100_000, 50 * n * m), log=True)
    if log.get("warning") is not None:
        raise RuntimeError(f"the network simplex did not reach optimality: {log['warning']}")
    reduced = dist - log["u"][:, None] - log["v"][None, :]
    face = (reduced <= FACE_TOL * max(float(dist.max()), 1.0)) | (plan > 0)
    found = _bottleneck(prior_i, prior_j, dist, face)
    if found is None:
        src, tgt = np.nonzero(plan > 0)
        return VectorPlan(src, tgt, plan[src, tgt], dist[src, tgt], "kantorovich")
    src, tgt, mass, exact = found
    return VectorPlan(src, tgt, mass, dist[src, tgt], "kantorovich", exact)


def _integer_masses(
    prior_i: JointPrior, prior_j: JointPrior
) -> tuple[NDArray[np.int64], NDArray[np.int64], bool]:
    """Integer masses ``(a, b, exact)``: the counts cross-multiplied (equal totals, exact) when
    they fit in int32, else ``a = floor(P_i 2^30)`` and ``b = ceil(P_j 2^30)``."""
    if prior_i.counts is not None and prior_j.counts is not None:
        a = prior_i.counts * int(prior_j.counts.sum())
        b = prior_j.counts * int(prior_i.counts.sum())
        g = math.gcd(*(int(v) for v in np.concatenate([a, b]) if v))
        a, b = a // g, b // g
        if int(a.sum()) <= FLOW_TOTAL_MAX:
            return a, b, True
    a = np.floor(prior_i.pmf * FLOW_GRID).astype(np.int64)
    b = np.ceil(prior_j.pmf * FLOW_GRID).astype(np.int64)
    return a, b, False


def _max_flow(
    a: NDArray[np.int64], b: NDArray[np.int64], allowed: NDArray[np.bool_]
) -> tuple[int, sp.csr_array]:
    """Maximum flow from the ``a`` side to the ``b`` side along the allowed pairs: ``(value, flow)``."""
    n, m = allowed.shape
    src, tgt = np.nonzero(allowed)
    total = int(a.sum())
    rows = np.concatenate([np.zeros(n, dtype=np.int64), 1 + src, 1 + n + np.arange(m)])
    cols = np.concatenate([1 + np.arange(n), 1 + n + tgt, np.full(m, 1 + n + m)])
    caps = np.concatenate([a, np.full(src.size, total), b]).astype(np.int32)
    graph = sp.csr_array((caps, (rows, cols)), shape=(n + m + 2, n + m + 2))
    res = maximum_flow(graph, 0, n + m + 1)
    return int(res.flow_value), res.flow


def bottleneck_plan(prior_i: JointPrior, prior_j: JointPrior, metric: Metric) -> VectorPlan:
    """The W-infinity plan: a coupling whose largest ``d(x, x')`` on its support is smallest.

    Parameters
    ----------
    prior_i, prior_j : JointPrior
        Same dimension; ``n`` and ``m`` tuples.
    metric : Metric

    Returns
    -------
    VectorPlan
        ``kind="bottleneck"``; its :attr:`~VectorPlan.max_distance` is
        ``W_inf = min_pi max_{pi(x, x') > 0} d(x, x')``.

    Raises
    ------
    ValueError
        If the dimensions differ.
    pufferfish.loss.divergence.MemoryLimitError
        If ``n m > MAX_PLAN_ENTRIES`` ("not run: ... needs about N GiB", before allocating).

    Notes
    -----
    Problem: the smallest ``r`` such that a coupling of the two priors is supported on
    ``{(x, x') : d(x, x') <= r}``. Feasibility for one ``r`` is a transportation problem with
    0/infinite costs: it holds iff the maximum flow from a source (capacities ``P(x | s_i)``)
    through the allowed pairs to a sink (capacities ``P(x' | s_j)``) carries the whole mass
    (max-flow min-cut). Feasibility is monotone in ``r``, and the optimum is one of the distinct
    values of ``d``, at least ``max(max_x min_x' d, max_x' min_x d)``: bisection over the sorted
    distinct values needs ``log2`` of their number maximum flows. The flow is computed on integer
    masses: the counts cross-multiplied, ``c_i(x) N_j`` and ``c_j(x') N_i`` (exact: the value
    is ``W_inf`` and the plan's marginals are the priors'). Without counts, or when that total
    exceeds int32, on ``a = floor(P_i 2^30)`` against ``b = ceil(P_j 2^30)``, asking that all of
    ``a`` be carried: a true coupling within ``r`` scaled row by row carries it, so the value
    found is at most ``W_inf`` but may be below it, and the marginals are the priors' within
    ``2^-30`` per tuple (:attr:`VectorPlan.exact_masses` is False). Mechanisms built on it are
    checked exactly either way.
    """
    _check_pair(prior_i, prior_j, metric, "W-infinity")
    dist = metric.distances(prior_i.support, prior_j.support)
    found = _bottleneck(prior_i, prior_j, dist, np.ones(dist.shape, dtype=bool))
    assert found is not None  # every pair allowed: the product coupling is feasible
    src, tgt, mass, exact = found
    return VectorPlan(src, tgt, mass, dist[src, tgt], "bottleneck", exact)


def _bottleneck(
    prior_i: JointPrior, prior_j: JointPrior, dist: NDArray[np.float64], allowed: NDArray[np.bool_]
) -> tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.float64], bool] | None:
    """``(source, target, mass, exact)`` of a coupling on the ``allowed`` pairs whose largest
    ``dist`` is smallest (bisection and maximum flow, :func:`bottleneck_plan`); None if the
    integer flow cannot carry the masses on the allowed pairs at all."""
    a, b, exact = _integer_masses(prior_i, prior_j)
    total = int(a.sum())  # feasible: the flow carries all of a
    used = np.where(allowed, dist, np.inf)[np.ix_(a > 0, b > 0)]  # pairs that carry mass
    needed = max(float(used.min(axis=1).max()), float(used.min(axis=0).max()))
    if not np.isfinite(needed):
        return None
    values = np.unique(used[np.isfinite(used)])
    values = values[values >= needed]
    lo, hi = 0, values.size - 1
    best = None
    while lo < hi:
        mid = (lo + hi) // 2
        value, flow = _max_flow(a, b, allowed & (dist <= values[mid]))
        if value == total:
            hi, best = mid, flow
        else:
            lo = mid + 1
    if best is None:  # no step of the loop found values[hi] feasible: flow it once
        value, best = _max_flow(a, b, allowed & (dist <= values[hi]))
        if value != total:
            return None
    n, m = dist.shape
    coo = sp.coo_array(best)
    inner = (coo.row >= 1) & (coo.row <= n) & (coo.col > n) & (coo.col <= n + m) & (coo.data > 0)
    src = coo.row[inner].astype(np.intp) - 1
    tgt = coo.col[inner].astype(np.intp) - 1 - n
    return src, tgt, coo.data[inner].astype(np.float64) / total, exact
