"""Scales for joint priors of several public columns (issue 17): the registry's mechanisms in
``d`` dimensions under the weighted L1 metric ``d(x, x') = sum_k |x_k - x'_k| / w_k``.

Each function returns the :class:`~.search.Proposal` of one mechanism for a scenario of
:class:`~pufferfish.priors.joint.JointPrior` priors (``scenario.kind == "joint"``). A Laplace scale
``b`` means ``Laplace(b w_k)`` on column ``k``; a Gaussian ``sigma`` means ``N(0, (sigma w_k)^2)``.
The registry checks every Laplace proposal against the exact loss of product Laplace noise
(:func:`pufferfish.loss.product.product_laplace_loss`); Gaussian and eps-MI proposals have no check in
``d > 1`` and are returned "not numerically checked" (:func:`.check.uncheckable`).

=========================  =====================================================  ================
mechanism                  scale                                                  source
=========================  =====================================================  ================
``l1``                     ``max d(x, x')`` over both supports, / eps             seed 001 eq (26)
``kantorovich``            ``max d`` on a W1-optimal plan for the cost ``d``,     seed 002 Thm 1
                           / eps (POT ``ot.emd``; the optimal plan of smallest
                           largest distance, as W1 plans are not unique)
``wasserstein-inf``        ``max d`` on the bottleneck plan, / eps                Song et al. 2017;
                                                                                  seed 002 Thm 1
``relaxed``                seed 002 Thm 2 (14a, 14b) with ``d`` on both plans,    seed 002 Thm 2
                           the smaller
``kantorovich-gaussian``   ``c Delta_2 / eps``, ``Delta_2`` the largest L2        seed 002 Thm 3(a)
                           distance (in units ``w_k``) on the better plan
``analytic-gaussian``      Balle and Wang (2018) Thm 8 at ``Delta_2``             SPEC sec 5
=========================  =====================================================  ================

In one dimension both plans are the monotone (quantile) plan of :mod:`pufferfish.transport.line`,
which is W1-optimal and minimises the largest distance over all couplings, so every result equals
the one-column result (scales in units of ``w_1``).
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pufferfish.calibration.discrete import RootTally, relaxed_plan_scale
from pufferfish.calibration.gaussian import analytic_gaussian_sigma
from pufferfish.calibration.result import num as _num
from pufferfish.calibration.search import Proposal, worst_pair
from pufferfish.loss.divergence import MemoryLimitError
from pufferfish.priors.distributions import DiscretePrior
from pufferfish.priors.joint import JointPrior, Metric
from pufferfish.priors.scenario import Scenario
from pufferfish.transport.line import kantorovich_plan as monotone_plan
from pufferfish.transport.plans import VectorPlan, bottleneck_plan, kantorovich_plan

PLAN_KINDS = ("kantorovich", "bottleneck")
"""The two plans: W1-optimal (of smallest largest distance) and W-infinity (bottleneck)."""


@lru_cache(maxsize=64)
def joint_plan(prior_i: JointPrior, prior_j: JointPrior, metric: Metric, kind: str) -> VectorPlan:
    """The W1 (``"kantorovich"``) or W-infinity (``"bottleneck"``) plan of a pair, cached.

    Parameters
    ----------
    prior_i, prior_j : JointPrior
        ``P(. | s_i)``, ``P(. | s_j)`` (cached by identity: priors are immutable).
    metric : Metric
    kind : {"kantorovich", "bottleneck"}

    Returns
    -------
    VectorPlan
        :func:`pufferfish.transport.plans.kantorovich_plan` or
        :func:`pufferfish.transport.plans.bottleneck_plan`;
        in one dimension the monotone plan for both (optimal for both problems on the line).
    """
    if kind not in PLAN_KINDS:
        raise ValueError(f"kind must be one of {PLAN_KINDS}, got {kind!r}")
    if metric.dimension == 1 and not metric.categorical[0]:
        a, b = prior_i.support[:, 0], prior_j.support[:, 0]
        plan = monotone_plan(DiscretePrior(a, prior_i.pmf), DiscretePrior(b, prior_j.pmf))
        source = np.searchsorted(a, plan.source)
        target = np.searchsorted(b, plan.target)
        return VectorPlan(source, target, plan.mass, plan.displacement / metric.units[0], kind)
    if kind == "kantorovich":
        return kantorovich_plan(prior_i, prior_j, metric)
    return bottleneck_plan(prior_i, prior_j, metric)


def _atom(plan: VectorPlan, p_i: JointPrior, p_j: JointPrior, k: int) -> str:
    """``"(x) -> (x')"`` of atom ``k`` of a plan."""
    x = ", ".join(_num(v) for v in p_i.support[plan.source[k]])
    y = ", ".join(_num(v) for v in p_j.support[plan.target[k]])
    return f"({x}) -> ({y})"


def _metric(scenario: Scenario) -> Metric:
    assert scenario.metric is not None, "joint scenarios carry a metric"
    return scenario.metric


def l1_scale(scenario: Scenario, epsilon: float, delta: float = 0.0, secret_weights: Any = None) -> Proposal:
    """``max d(x, x')`` over ``x`` in one support and ``x'`` in the other, over eps.

    Seed 001 eq (26) with the alphabet of a pair taken as its two supports (the product coupling
    is a coupling, so seed 002 Thm 1 covers it). In 1-D: ``max(max X_j - min X_i, max X_i -
    min X_j)``, today's ``l1``. Under prior sets (:class:`~pufferfish.priors.sets.JointBall`) the
    alphabet of every prior in the balls is the union of the pair's supports: both points run
    over it.
    """
    metric = _metric(scenario)

    def value_of(p_i: JointPrior, p_j: JointPrior) -> tuple[float, str]:
        a, b = p_i.support, p_j.support
        if scenario.robust:
            a = b = np.unique(np.concatenate([a, b]), axis=0)
        r, c = farthest_pair(a, b, metric)
        best = float(metric.distances(a[r : r + 1], b[c : c + 1])[0, 0])
        x = ", ".join(_num(v) for v in a[r])
        y = ", ".join(_num(v) for v in b[c])
        return best / epsilon, f"support extremes ({x}) -> ({y}) (distance {_num(best)})"

    return worst_pair(scenario.iter_joint_pairs(), value_of)


#: Largest (groups of ``a``) x (groups of ``b``) x (sign vectors) of :func:`farthest_pair`.
MAX_GROUP_PAIRS = 50_000_000


def farthest_pair(a: NDArray[np.float64], b: NDArray[np.float64], metric: Metric) -> tuple[int, int]:
    """Rows ``(r, c)`` of ``a`` (n, d) and ``b`` (m, d) with the largest ``d(a_r, b_c)``.

    Parameters
    ----------
    a, b : numpy.ndarray, shapes (n, d) and (m, d)
        Points (categorical coordinates are label codes).
    metric : Metric

    Returns
    -------
    (int, int)

    Raises
    ------
    pufferfish.loss.divergence.MemoryLimitError
        If the categorical sub-tuples are so many that (groups of ``a``) x (groups of ``b``) x
        (sign vectors) exceeds :data:`MAX_GROUP_PAIRS` ("not run").

    Notes
    -----
    On the numeric columns ``sum_k |x_k - x'_k| / w_k = max`` over sign vectors ``s`` of ``s.(x -
    x') / w``, so for fixed categorical parts the largest distance is ``max_s (max_x s.x/w -
    min_x' s.x'/w)``: ``2^(d-1)`` sign vectors (``s`` and ``-s`` give the same pairs swapped),
    linear in the points. The categorical columns add ``[c != c'] / w_k``, which depends only on
    the categorical sub-tuples: the points are grouped by them, each group keeps its extremes per
    sign vector, and every pair of groups is compared (the Hamming distance of the two
    sub-tuples plus the best sign vector's numeric gap).
    """
    cat = np.array(metric.categorical)
    units = np.array(metric.units)
    num = np.flatnonzero(~cat)
    signs = [np.array((1.0, *t)) for t in itertools.product((1.0, -1.0), repeat=max(num.size - 1, 0))]
    s_mat = np.array([sv / units[num] for sv in signs]).T if num.size else np.zeros((0, 1))
    keys_a, inv_a = np.unique(a[:, cat], axis=0, return_inverse=True)
    keys_b, inv_b = np.unique(b[:, cat], axis=0, return_inverse=True)
    inv_a, inv_b = inv_a.ravel(), inv_b.ravel()
    work = keys_a.shape[0] * keys_b.shape[0] * s_mat.shape[1]
    if work > MAX_GROUP_PAIRS:
        raise MemoryLimitError(
            f"not run: the l1 distance compares {keys_a.shape[0]:,} x {keys_b.shape[0]:,} categorical "
            f"sub-tuples over {s_mat.shape[1]} sign vectors ({work:,} > {MAX_GROUP_PAIRS:,}): merge labels"
        )
    proj_a, proj_b = a[:, num] @ s_mat, b[:, num] @ s_mat  # (n, S), (m, S)
    hi_a, lo_a = _group_extremes(proj_a, inv_a, keys_a.shape[0])
    hi_b, lo_b = _group_extremes(proj_b, inv_b, keys_b.shape[0])
    hamming = (
        Metric(tuple(units[cat]), tuple(metric.categories[k] for k in np.flatnonzero(cat)))
        if cat.any()
        else None
    )
    ham = hamming.distances(keys_a, keys_b) if hamming is not None else np.zeros((1, 1))
    forward = hi_a[:, None, :] - lo_b[None, :, :]  # a high, b low
    backward = hi_b[None, :, :] - lo_a[:, None, :]
    total = ham[:, :, None] + np.maximum(forward, backward)
    g, h, k = np.unravel_index(int(np.argmax(total)), total.shape)
    in_a, in_b = np.flatnonzero(inv_a == g), np.flatnonzero(inv_b == h)
    if forward[g, h, k] >= backward[g, h, k]:
        return int(in_a[np.argmax(proj_a[in_a, k])]), int(in_b[np.argmin(proj_b[in_b, k])])
    return int(in_a[np.argmin(proj_a[in_a, k])]), int(in_b[np.argmax(proj_b[in_b, k])])


def _group_extremes(
    proj: NDArray[np.float64], group: NDArray[np.intp], groups: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per group and column of ``proj`` (n, S): the largest and the smallest value, (groups, S)."""
    hi = np.full((groups, proj.shape[1]), -np.inf)
    lo = np.full((groups, proj.shape[1]), np.inf)
    np.maximum.at(hi, group, proj)
    np.minimum.at(lo, group, proj)
    return hi, lo


def _plan_scale(scenario: Scenario, epsilon: float, kind: str, what: str) -> Proposal:
    metric = _metric(scenario)

    def value_of(p_i: JointPrior, p_j: JointPrior) -> tuple[float, str]:
        plan = joint_plan(p_i, p_j, metric, kind)
        k = int(np.argmax(plan.distance))
        how = f"{what} atom {_atom(plan, p_i, p_j, k)} (distance {_num(plan.distance[k])})"
        if not plan.exact_masses:
            how += "; flow on masses rounded to 2^-30"
        return float(plan.distance[k]) / epsilon, how

    return worst_pair(scenario.iter_joint_pairs(), value_of)


def kantorovich_scale(
    scenario: Scenario, epsilon: float, delta: float = 0.0, secret_weights: Any = None
) -> Proposal:
    """Seed 002 Thm 1: ``max d`` over the support of a W1-optimal plan for the cost ``d``, / eps.

    The W1-optimal plan is not unique in ``d > 1`` and its largest distance depends on which one
    is taken: this is the W1-optimal plan of smallest largest distance
    (:func:`pufferfish.transport.plans.kantorovich_plan`).
    """
    return _plan_scale(scenario, epsilon, "kantorovich", "W1 plan")


def wasserstein_inf_scale(
    scenario: Scenario, epsilon: float, delta: float = 0.0, secret_weights: Any = None
) -> Proposal:
    """Seed 002 Thm 1 on the bottleneck plan (W-infinity; Song, Wang and Chaudhuri 2017):
    ``min`` over couplings of the largest ``d`` on the support, / eps. Never above
    :func:`kantorovich_scale`; equal to it in one dimension."""
    return _plan_scale(scenario, epsilon, "bottleneck", "W-infinity plan")


def relaxed_scale(
    scenario: Scenario, epsilon: float, delta: float = 0.0, secret_weights: Any = None
) -> Proposal:
    """Seed 002 Thm 2 (14a, 14b) with the metric ``d``, on the W1 plan and on the W-infinity plan.

    Thm 2 holds for any coupling, so each plan's scale is valid; the smaller is proposed and
    ``decided_by`` gives both. Each row and column condition is solved by
    :func:`.discrete.relaxed_plan_scale` (brentq in ``t = e^{1/theta}``).
    """
    metric = _metric(scenario)
    total = RootTally()
    best: tuple[float, str, tuple[str, str], str, tuple[float, float]] | None = None
    for prior, pair, p_i, p_j in scenario.iter_joint_pairs():
        found = []
        for kind in PLAN_KINDS:
            plan = joint_plan(p_i, p_j, metric, kind)
            scale, label, key, tally = relaxed_plan_scale(
                plan.mass, plan.distance, plan.source, plan.target, epsilon
            )
            total.merge(tally)
            tup = p_j.support[int(key)] if label.startswith("column") else p_i.support[int(key)]
            where = f"{label} = (" + ", ".join(_num(v) for v in tup) + ")" if label else "no mass moved"
            found.append((scale, kind, where, tally.deciding_bracket))
        (s_w1, _, w_w1, b_w1), (s_inf, _, w_inf, b_inf) = found
        if s_inf <= s_w1:
            scale, how, bracket = s_inf, f"W-infinity plan, {w_inf} (W1 plan: {_num(s_w1)})", b_inf
        else:
            scale, how, bracket = s_w1, f"W1 plan, {w_w1} (W-infinity plan: {_num(s_inf)})", b_w1
        if best is None or scale > best[0]:
            best = (scale, prior.name, pair, how, bracket)
    assert best is not None
    scale, name, pair, how, bracket = best
    return Proposal(scale, name, pair, how, total.root(bracket))


def l2_sensitivity(scenario: Scenario) -> tuple[float, str, tuple[str, str], str]:
    """``Delta_2``: the largest Euclidean distance (in units ``w_k``) on a plan's support, the
    smaller over the W1 and W-infinity plans, maximised over pairs and priors.

    Returns
    -------
    (float, str, (str, str), str)
        ``(Delta_2, prior, pair, how)``.
    """
    metric = _metric(scenario)
    units = np.array(metric.units)
    best: tuple[float, str, tuple[str, str], str] | None = None
    for prior, pair, p_i, p_j in scenario.iter_joint_pairs():
        pair_best: tuple[float, str] | None = None
        for kind, what in zip(PLAN_KINDS, ("W1 plan", "W-infinity plan"), strict=True):
            plan = joint_plan(p_i, p_j, metric, kind)
            diff = (p_i.support[plan.source] - p_j.support[plan.target]) / units
            l2 = np.sqrt((diff**2).sum(axis=1))
            k = int(np.argmax(l2))
            if pair_best is None or l2[k] < pair_best[0]:
                pair_best = (float(l2[k]), f"{what} atom {_atom(plan, p_i, p_j, k)}")
        assert pair_best is not None
        if best is None or pair_best[0] > best[0]:
            best = (pair_best[0], prior.name, pair, pair_best[1])
    assert best is not None
    return best


def kantorovich_gaussian_scale(
    scenario: Scenario, epsilon: float, delta: float, secret_weights: Any = None
) -> Proposal:
    """Seed 002 Thm 3(a) in ``d`` dimensions: ``sigma = c Delta_2 / eps``, ``c`` just above
    ``sqrt(2 ln(1.25/delta))``, ``Delta_2`` of :func:`l2_sensitivity` (eps < 1)."""
    c = math.nextafter(math.sqrt(2.0 * math.log(1.25 / delta)), math.inf)
    sens, name, pair, how = l2_sensitivity(scenario)
    return Proposal(
        c * sens / epsilon, name, pair, f"c * Delta_2, c = {_num(c)}, Delta_2 = {_num(sens)} ({how})"
    )


def analytic_gaussian_scale(
    scenario: Scenario, epsilon: float, delta: float, secret_weights: Any = None
) -> Proposal:
    """Balle and Wang (2018) Thm 8 at ``Delta_2`` of :func:`l2_sensitivity` (isotropic Gaussian
    noise in the metric's units; the coupled mixture is no worse than its worst coupled shift,
    SPEC sec 5)."""
    sens, name, pair, how = l2_sensitivity(scenario)
    sigma = analytic_gaussian_sigma(sens, epsilon, delta) if sens > 0 else 0.0
    return Proposal(sigma, name, pair, f"analytic Gaussian at Delta_2 = {_num(sens)} ({how})")
