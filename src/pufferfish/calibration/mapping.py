"""Randomized mappings of a finite alphabet: the optimal one by linear programming, randomized
response and the clamped geometric mechanism, each with its exact check.

A mechanism that releases a value of a finite alphabet ``A = (a_1 < ... < a_k)`` (the labels of
a categorical column, or the distinct values of a numeric one) is a row-stochastic matrix ``M``,
``M[x, w] = Pr(release a_w | true value a_x)``. For a discriminative pair ``(s_i, s_j)`` and an
adversary prior ``rho`` the released value has pmf ``q_i = P_i M``, so (SPEC sec 0) the mapping
is ``(eps, S)``-pufferfish private iff, for every pair, prior, both directions and every output
``w``::

    sum_x P_i(x) M[x, w]  <=  e^eps  sum_x P_j(x) M[x, w]                       (C)

The conditions are linear in ``M``: the mechanism of largest utility is a linear program
(:func:`optimal_matrix`), the limit of utility for these priors over *every* mechanism with
outputs in ``A``. Over prior sets (:mod:`pufferfish.priorsets`) ``P_i`` ranges over ``C_i`` and
``P_j`` over ``C_j``: (C) becomes ``max_{C_i} <P, m_w> <= e^eps min_{C_j} <Q, m_w>`` with
``m_w = M[:, w]``, a convex constraint whose exact oracle is :func:`pufferfish.priorsets.
set_extremes`; the LP is solved by cutting planes (each cut ``<P*, m_w> <= e^eps <Q*, m_w>``
for the extreme priors ``P*, Q*`` of a violated column is implied by (C), so every LP bound is
valid; the sets are polytopes, so finitely many cuts suffice).

Every returned matrix is rounded to the dyadic grid ``2^-52`` (integer weights summing to
``2^52`` per row: what the secure sampler :func:`pufferfish.noise.sample_mapping` draws from),
and *that* matrix is checked (:func:`mapping_loss`). If the check fails by rounding, the matrix
is mixed with uniform rows, ``(1 - lambda) M + lambda U``, for the first ``lambda`` of
:data:`MIX_STEPS` that passes: each column becomes ``(1 - lambda) <P, m_w> + lambda / k``, which
moves every ratio towards 1 (and ``lambda = 1`` releases nothing about ``x``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.optimize import brentq, linprog
from scipy.stats import laplace, norm

from ..priors import DiscretePrior, Scenario, union_support
from ..priorsets import PriorSet, log_value, set_extremes, set_summary
from .result import MappingCalibration, PrivacyCheckError, num

#: Utilities of a mapping: expected accuracy (maximised) or expected absolute error (minimised).
UTILITIES = ("accuracy", "absolute")

#: Largest alphabet of a mapping mechanism (the LP has ``k^2`` variables).
MAPPING_MAX_K = 1000

#: Bits of the dyadic grid of a released matrix: entries are multiples of ``2^-GRID_BITS``.
GRID_BITS = 52

#: Mixtures with uniform rows tried, in order, when a rounded matrix fails its check.
MIX_STEPS: tuple[float, ...] = (
    0.0, 1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1.0
)  # fmt: skip

_U = 2.0**-53


@dataclass(frozen=True)
class Utility:
    """What a mapping is good for, on an alphabet.

    Attributes
    ----------
    kind : {"accuracy", "absolute"}
        Maximise ``sum_x mu(x) M[x, x]``, or minimise ``sum_x mu(x) sum_w M[x, w] |a_w - a_x|``.
    weights : numpy.ndarray, shape (k,)
        ``mu``: the distribution of the true values over the released rows (>= 0, sums to 1).
    support : numpy.ndarray, shape (k,)
        The alphabet ``a`` (strictly increasing codes or values).
    """

    kind: str
    weights: NDArray[np.float64]
    support: NDArray[np.float64]

    def __post_init__(self) -> None:
        kind = check_utility(self.kind)
        a = np.asarray(self.support, dtype=np.float64)
        mu = np.asarray(self.weights, dtype=np.float64)
        if a.ndim != 1 or a.size < 2 or mu.shape != a.shape:
            raise ValueError(
                f"support and weights must be 1-D of one length >= 2, got {np.shape(a)} and {np.shape(mu)}"
            )
        if not np.all(np.isfinite(a)) or np.any(np.diff(a) <= 0):
            raise ValueError("support must be finite and strictly increasing")
        if not np.all(np.isfinite(mu)) or np.any(mu < 0) or not mu.sum() > 0:
            raise ValueError("weights must be finite, >= 0 and not all 0")
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "support", a)
        object.__setattr__(self, "weights", mu / mu.sum())


def check_utility(kind: Any) -> str:
    """``kind`` as one of :data:`UTILITIES` (ValueError naming the choices otherwise)."""
    text = str(kind).strip().lower() if isinstance(kind, str) else kind
    if text not in UTILITIES:
        raise ValueError(f"utility must be one of {', '.join(UTILITIES)}, got {kind!r}")
    return str(text)


def default_utility(scenario: Scenario, kind: str = "accuracy", weights: Any = None) -> Utility:
    """The utility on the scenario's union support; ``mu`` = ``weights``, else the average of the
    first prior's conditionals (the rows of a table give their own, :class:`Utility`)."""
    support = scenario_support(scenario)
    if weights is None:
        conds = scenario.priors[0].conditionals.values()
        weights = np.mean([_on(p, support) for p in conds], axis=0)
    return Utility(kind, np.asarray(weights, dtype=np.float64), support)


def scenario_support(scenario: Scenario) -> NDArray[np.float64]:
    """The union support of every discrete prior of the scenario, shape (k,).

    Raises
    ------
    ValueError
        If a prior is not discrete, or the alphabet has fewer than 2 or more than
        :data:`MAPPING_MAX_K` values.
    """
    priors = [p for rho in scenario.priors for p in rho.conditionals.values()]
    discrete = [p for p in priors if isinstance(p, DiscretePrior)]
    if len(discrete) != len(priors):
        raise ValueError("a mapping needs discrete priors (a finite alphabet)")
    support = union_support(*discrete)
    check_alphabet(support.size)
    return support


def check_alphabet(k: int) -> int:
    """``k`` if a mapping on ``k`` values can be computed: 2 <= k <= :data:`MAPPING_MAX_K`."""
    if k < 2:
        raise ValueError(f"a mapping needs an alphabet of at least 2 values, got {k}")
    if k > MAPPING_MAX_K:
        raise ValueError(
            f"alphabet has {k} values; a mapping mechanism takes at most {MAPPING_MAX_K} (its LP has "
            "k^2 variables): bin the column or use an additive mechanism"
        )
    return k


def _on(prior: Any, support: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(prior.on(support), dtype=np.float64)


# --------------------------------------------------------------------------- the exact check


@dataclass(frozen=True)
class MappingLoss:
    """Exact privacy loss of a matrix.

    Attributes
    ----------
    loss : float
        ``max |log q_i(w) - log q_j(w)|`` over outputs, pairs, priors (or the worst case over the
        prior sets), nats; ``inf`` when an output has positive probability under one secret only.
    error : float
        Rounding bound: the check passes when ``loss + error <= epsilon``.
    output : int
        Index of the worst output.
    prior : str
    pair : tuple of str
    """

    loss: float
    error: float
    output: int
    prior: str
    pair: tuple[str, str]


def mapping_loss(scenario: Scenario, matrix: Any, support: NDArray[np.float64]) -> MappingLoss:
    """The exact privacy loss of a randomized mapping for every pair and prior (or prior set).

    Parameters
    ----------
    scenario : Scenario
        Discrete priors; with prior sets (:attr:`Scenario.robust`) the worst case over the sets.
    matrix : array_like, shape (k, k)
        Row-stochastic, rows and columns in the order of ``support``.
    support : numpy.ndarray, shape (k,)
        The alphabet (holding every prior's support).

    Returns
    -------
    MappingLoss

    Notes
    -----
    Point priors: ``q = P M`` by a matrix product of non-negative terms, each entry within a
    relative ``gamma_k = k u / (1 - k u)`` of its exact value (``u = 2^-53``); ``log`` adds a
    relative ``u``, so each log-ratio is within ``2 gamma_k + 2 u max |log q| + 2 u``. An output
    whose exact probability is positive (a positive prior mass times a positive entry, decided on
    the sparsity pattern, exactly) but computes to 0 (underflow) gets an infinite bound.
    Prior sets: each extreme value ``<P*, m_w>`` comes with the bound of
    :func:`pufferfish.priorsets.log_value`.
    """
    m = np.asarray(matrix, dtype=np.float64)
    k = support.size
    worst = MappingLoss(0.0, 0.0, 0, "", ("", ""))
    best_upper = -math.inf
    for rho, pair, p_i, p_j in scenario.iter_pairs():
        if scenario.robust:
            assert rho.sets is not None
            found = _set_pair_loss(rho.sets[pair[0]], rho.sets[pair[1]], m, support)
        else:
            found = _point_pair_loss(_on(p_i, support), _on(p_j, support), m, k)
        loss, error, w = found
        if loss + error > best_upper:
            best_upper = loss + error
            worst = MappingLoss(loss, error, w, rho.name, pair)
    return worst


def _point_pair_loss(
    p_i: NDArray[np.float64], p_j: NDArray[np.float64], m: NDArray[np.float64], k: int
) -> tuple[float, float, int]:
    q_i, q_j = p_i @ m, p_j @ m
    pos_i = ((p_i > 0).astype(np.int64) @ (m > 0).astype(np.int64)) > 0
    pos_j = ((p_j > 0).astype(np.int64) @ (m > 0).astype(np.int64)) > 0
    if np.any((q_i == 0) & pos_i) or np.any((q_j == 0) & pos_j):
        w = int(np.argmax(((q_i == 0) & pos_i) | ((q_j == 0) & pos_j)))
        return math.inf, math.inf, w
    if np.any(pos_i != pos_j):
        return math.inf, 0.0, int(np.argmax(pos_i != pos_j))
    live = pos_i
    if not np.any(live):
        return 0.0, 0.0, 0
    with np.errstate(divide="ignore"):
        li, lj = np.log(np.where(live, q_i, 1.0)), np.log(np.where(live, q_j, 1.0))
    ratio = np.where(live, np.abs(li - lj), -np.inf)
    w = int(np.argmax(ratio))
    gamma = k * _U / (1.0 - k * _U)
    big = float(np.max(np.maximum(np.abs(li[live]), np.abs(lj[live]))))
    return float(ratio[w]), 2.0 * gamma + 2.0 * _U * big + 2.0 * _U, w


def _set_pair_loss(
    set_i: PriorSet, set_j: PriorSet, m: NDArray[np.float64], support: NDArray[np.float64]
) -> tuple[float, float, int]:
    rows = np.searchsorted(support, set_i.alphabet)
    sub = m[rows]  # the sets live on their alphabet: other rows have no mass
    with np.errstate(divide="ignore"):
        logm = np.log(sub)
    best = (0.0, 0.0, 0)
    for up_set, down_set in ((set_i, set_j), (set_j, set_i)):
        hi = set_extremes(up_set, sub, maximize=True)
        lo = set_extremes(down_set, sub, maximize=False)
        for w in range(sub.shape[1]):
            v_hi, e_hi = log_value(hi[w], logm[:, w])
            if v_hi == -math.inf:
                continue  # no member of the first set can output w
            v_lo, e_lo = log_value(lo[w], logm[:, w])
            loss = v_hi - v_lo
            err = e_hi + e_lo
            if loss + err > best[0] + best[1]:
                best = (loss, err, w)
    return best


# --------------------------------------------------------------------------- utilities


def expected_accuracy(matrix: Any, utility: Utility) -> float:
    """``sum_x mu(x) M[x, x]``: the probability that a released row keeps its value."""
    return float(np.clip(utility.weights @ np.diag(np.asarray(matrix, dtype=np.float64)), 0.0, 1.0))


def expected_abs_error(matrix: Any, utility: Utility) -> float:
    """``sum_x mu(x) sum_w M[x, w] |a_w - a_x|`` (unit of the alphabet)."""
    a = utility.support
    m = np.asarray(matrix, dtype=np.float64)
    return float(utility.weights @ (m * np.abs(a[None, :] - a[:, None])).sum(axis=1))


def additive_utility(noise: str, scale: float, utility: Utility) -> tuple[float, float]:
    """``(expected_accuracy, expected_abs_error)`` of additive noise on the alphabet's values.

    Parameters
    ----------
    noise : {"laplace", "gaussian"}
    scale : float
        Laplace ``b`` or Gaussian ``sigma`` (>= 0).
    utility : Utility

    Returns
    -------
    (float, float)
        The probability that ``a_x + N`` rounds to ``a_x`` (nearest alphabet value: the cell between
        the midpoints to its neighbours, unbounded at the ends), averaged over ``mu``; and
        ``E|N|`` (``b`` for Laplace, ``sigma sqrt(2 / pi)`` for Gaussian): the released value is
        not rounded.
    """
    a = utility.support
    if scale == 0.0:
        return 1.0, 0.0
    mid = (a[1:] + a[:-1]) / 2.0
    lo = np.concatenate([[-np.inf], mid]) - a
    hi = np.concatenate([mid, [np.inf]]) - a
    dist = laplace(scale=scale) if noise == "laplace" else norm(scale=scale)
    keep = dist.cdf(hi) - dist.cdf(lo)
    mae = scale if noise == "laplace" else scale * math.sqrt(2.0 / math.pi)
    return float(np.clip(utility.weights @ keep, 0.0, 1.0)), float(mae)


# --------------------------------------------------------------------------- matrices


def randomized_response_matrix(k: int, p: float) -> NDArray[np.float64]:
    """k-ary randomized response: keep with probability ``p``, else uniform over the others.

    Returns
    -------
    numpy.ndarray, shape (k, k)
        ``p`` on the diagonal, ``(1 - p) / (k - 1)`` elsewhere.
    """
    m = np.full((k, k), (1.0 - p) / (k - 1))
    np.fill_diagonal(m, p)
    return m


def geometric_matrix(k: int, alpha: float) -> NDArray[np.float64]:
    """Two-sided geometric noise on the codes ``0..k-1``, clamped to the alphabet's ends.

    ``Pr(Z = z) = (1 - alpha) / (1 + alpha) alpha^|z|`` (Ghosh, Roughgarden and Sundararajan
    2012); ``x + Z`` below 0 is released as 0 and above ``k - 1`` as ``k - 1``.

    Returns
    -------
    numpy.ndarray, shape (k, k)
    """
    x = np.arange(k)
    dist = np.abs(x[None, :] - x[:, None]).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        m = (1.0 - alpha) / (1.0 + alpha) * np.power(alpha, dist)
        m[:, 0] = np.power(alpha, x) / (1.0 + alpha)
        m[:, -1] = np.power(alpha, k - 1 - x) / (1.0 + alpha)
    if alpha == 0.0:
        m = np.eye(k)
    return m


def dyadic_weights(matrix: Any) -> NDArray[np.int64]:
    """Round a row-stochastic matrix to integer weights on the grid ``2^-52``, rows summing exactly.

    Parameters
    ----------
    matrix : array_like, shape (k, k)
        Non-negative (small negative values of a solver are clipped to 0); each row is normalised.

    Returns
    -------
    numpy.ndarray of int64, shape (k, k)
        ``rint(M 2^52)``, with each row's excess or deficit (at most ``k`` units) taken from or
        given to its largest entry (``>= 2^52 / k``, so it stays positive). Zero entries stay 0.
    """
    m = np.clip(np.asarray(matrix, dtype=np.float64), 0.0, None)
    m = m / m.sum(axis=1, keepdims=True)
    one = 2**GRID_BITS
    w = np.rint(m * one).astype(np.int64)
    rows = np.arange(w.shape[0])
    top = np.argmax(w, axis=1)
    w[rows, top] += one - w.sum(axis=1)
    return w


# --------------------------------------------------------------------------- the LP


@dataclass(frozen=True)
class LPSolution:
    """The optimal mapping before rounding, with the solver's data.

    Attributes
    ----------
    matrix : numpy.ndarray, shape (k, k)
        The LP's solution, clipped to >= 0 and rows normalised (the caller rounds and checks it).
    status, message :
        HiGHS's status (0: optimal) and message of the last solve.
    iterations, cuts : int
        Solves (cutting-plane rounds) and cuts added (prior sets; 1 and 0 otherwise).
    seconds : float
    bound : float
        The last LP's optimal objective (accuracy, or mean absolute error): a bound on the utility
        of every mechanism satisfying (C) for the priors (and cuts) it was solved with.
    converged : bool
        No column violated its worst case by more than a relative 1e-9 (always true without sets).
    """

    matrix: NDArray[np.float64]
    status: int
    message: str
    iterations: int
    cuts: int
    seconds: float
    bound: float
    converged: bool = True


def optimal_matrix(
    scenario: Scenario, epsilon: float, utility: Utility, *, max_rounds: int = 200, time_limit: float = 600.0
) -> LPSolution:
    """The row-stochastic matrix of best utility satisfying (C) for every pair and prior (set).

    Problem (variables ``M[x, w] >= 0``, ``x, w`` in the alphabet)::

        max  sum_x mu(x) M[x, x]          (accuracy)   or   min  sum_{x,w} mu(x) |a_w - a_x| M[x, w]
        s.t. sum_w M[x, w] = 1                                      for every x
             sum_x (P_i(x) - e^eps P_j(x)) M[x, w] <= 0             every w, pair, prior, both ways

    solved by HiGHS (:func:`scipy.optimize.linprog`, sparse constraints; ``2 k`` inequalities per
    pair and prior, ``2 k`` non-zeros each at most). With prior sets, by cutting planes (module
    docstring): start from the centres, add ``<P*, m_w> - e^eps <Q*, m_w> <= 0`` for every column
    whose worst case exceeds ``e^eps`` by a relative 1e-9, until none does or ``max_rounds``.

    Parameters
    ----------
    scenario : Scenario
        Discrete priors, possibly with prior sets.
    epsilon : float
        > 0.
    utility : Utility
        Its support (the alphabet) must hold the scenario's union support.
    max_rounds : int
        Cutting-plane rounds (prior sets only).
    time_limit : float
        Seconds for each HiGHS solve.

    Returns
    -------
    LPSolution
        The unrounded matrix (the caller rounds and checks it).

    Raises
    ------
    PrivacyCheckError
        If HiGHS does not return an optimal solution.
    """
    a = utility.support
    k = a.size
    e = math.exp(epsilon)
    blocks: list[sparse.coo_matrix] = []
    for _, _, p_i, p_j in scenario.iter_pairs():
        pi, pj = _on(p_i, a), _on(p_j, a)
        for c in (pi - e * pj, pj - e * pi):
            blocks.append(_column_rows(c, k))
    if utility.kind == "accuracy":
        cost = np.zeros((k, k))
        cost[np.arange(k), np.arange(k)] = -utility.weights
    else:
        cost = utility.weights[:, None] * np.abs(a[None, :] - a[:, None])
    a_eq = sparse.kron(sparse.eye(k), np.ones((1, k))).tocsr()
    options = {
        "primal_feasibility_tolerance": 1e-10,
        "dual_feasibility_tolerance": 1e-10,
        "time_limit": time_limit,
    }
    start = time.perf_counter()
    cuts = 0
    rounds = 0
    converged = True
    while True:
        a_ub = sparse.vstack(blocks).tocsr()
        res = linprog(
            cost.ravel(), A_ub=a_ub, b_ub=np.zeros(a_ub.shape[0]), A_eq=a_eq, b_eq=np.ones(k),
            bounds=(0, None), method="highs", options=options,
        )  # fmt: skip
        if res.status != 0 or res.x is None:
            raise PrivacyCheckError(f"the mapping LP did not solve: {res.message}")
        m = np.clip(res.x.reshape(k, k), 0.0, None)
        m /= m.sum(axis=1, keepdims=True)
        rounds += 1
        if not scenario.robust:
            break
        new = list(_violated_cuts(scenario, m, a, e))
        converged = not new
        if converged or rounds >= max_rounds:
            break
        cuts += len(new)
        blocks.extend(new)
    bound = -float(res.fun) if utility.kind == "accuracy" else float(res.fun)
    seconds = time.perf_counter() - start
    return LPSolution(m, int(res.status), str(res.message), rounds, cuts, seconds, bound, converged)


def _column_rows(c: NDArray[np.float64], k: int, columns: Any = None) -> sparse.coo_matrix:
    """Rows ``sum_x c[x] M[x, w] <= 0`` for each ``w`` in ``columns`` (default all), on ``vec(M)``."""
    cols = np.arange(k) if columns is None else np.asarray(columns)
    xs = np.flatnonzero(c)
    r = np.repeat(np.arange(cols.size), xs.size)
    v = (xs[None, :] * k + cols[:, None]).ravel()
    return sparse.coo_matrix((np.tile(c[xs], cols.size), (r, v)), shape=(cols.size, k * k))


def _violated_cuts(
    scenario: Scenario, m: NDArray[np.float64], a: NDArray[np.float64], e: float
) -> Iterator[sparse.coo_matrix]:
    k = a.size
    for rho, pair, _, _ in scenario.iter_pairs():
        assert rho.sets is not None
        s_i, s_j = rho.sets[pair[0]], rho.sets[pair[1]]
        rows = np.searchsorted(a, s_i.alphabet)
        sub = m[rows]
        for up, down in ((s_i, s_j), (s_j, s_i)):
            hi = set_extremes(up, sub, maximize=True)  # (k, |alphabet|)
            lo = set_extremes(down, sub, maximize=False)
            v_hi = np.einsum("wl,lw->w", hi, sub)
            v_lo = np.einsum("wl,lw->w", lo, sub)
            bad = np.flatnonzero(v_hi > e * v_lo * (1.0 + 1e-9) + 1e-15)
            for w in bad:
                c = np.zeros(k)
                c[rows] = hi[w] - e * lo[w]
                yield _column_rows(c, k, [w])


# --------------------------------------------------------------------------- calibration


def _round_and_check(
    scenario: Scenario, matrix: NDArray[np.float64], support: NDArray[np.float64], epsilon: float
) -> tuple[NDArray[np.int64], MappingLoss, float]:
    """Round to the dyadic grid and check; mix with uniform rows until the check passes."""
    k = support.size
    uniform = np.full((k, k), 1.0 / k)
    last = None
    for lam in MIX_STEPS:
        weights = dyadic_weights((1.0 - lam) * matrix + lam * uniform)
        chk = mapping_loss(scenario, weights / float(2**GRID_BITS), support)
        if chk.loss + chk.error <= epsilon:
            return weights, chk, lam
        last = chk
    assert last is not None
    raise PrivacyCheckError(
        f"no mixture with uniform rows passes the exact check (loss {num(last.loss)} + bound "
        f"{last.error:.2g} > {num(epsilon)})"
    )


def _root(
    loss_at: Callable[[float], float], epsilon: float, lo: float, hi: float, increasing: bool
) -> tuple[float, dict[str, Any]]:
    """The boundary of ``loss_at(t) <= epsilon`` on ``[lo, hi]`` by Brent's method.

    ``increasing``: the loss grows with ``t`` (return the largest passing ``t``), else shrinks
    (the smallest). Returns the end itself when it passes.
    """
    end = hi if increasing else lo
    if loss_at(end) <= epsilon:
        return end, {"status": 0, "message": "the end of the range passes", "iterations": 0}
    root, info = brentq(lambda t: min(loss_at(t), 50.0) - epsilon, lo, hi, xtol=1e-14, rtol=1e-14,
                        full_output=True, disp=False)  # fmt: skip
    return float(root), {
        "status": 0 if info.converged else 1,
        "message": info.flag,
        "iterations": int(info.iterations),
    }


def mapping_calibration(
    scenario: Scenario, epsilon: float, mechanism: str, utility: Utility
) -> MappingCalibration:
    """Calibrate one mapping mechanism and check the released (rounded) matrix exactly (on
    validated arguments: the front door is :func:`pufferfish.calibration.calibrate_mapping`).

    Parameters
    ----------
    scenario : Scenario
        Discrete priors (with prior sets: the worst case over them).
    epsilon : float
        > 0 (validated at the edge).
    mechanism : {"optimal-mapping", "randomized-response", "randomized-response-dp", "geometric"}
    utility : Utility
        Its support (the alphabet of the matrix) holds the scenario's union support.

    Returns
    -------
    MappingCalibration

    Raises
    ------
    PrivacyCheckError
        If no matrix passes the check (not expected: uniform rows pass) or the LP fails.

    Notes
    -----
    * ``optimal-mapping``: :func:`optimal_matrix`.
    * ``randomized-response``: the largest keep probability ``p`` in ``[1/k, 1]`` whose exact loss
      (:func:`mapping_loss`, the pufferfish loss for these priors) is <= eps, by Brent's method on
      the check: each column is ``c + P(w) d`` with ``d / c`` increasing in ``p``, so each ratio,
      and the loss, is non-decreasing in ``p``.
    * ``randomized-response-dp``: ``p = e^eps / (e^eps + k - 1)`` (Warner 1965; Kairouz, Oh and
      Viswanath 2014): eps-DP, hence eps-PP for every prior; still checked for these priors.
    * ``geometric``: the smallest ``alpha`` (largest noise ``Pr(Z = z) ~ alpha^|z|`` is ``alpha``
      near 1) whose exact loss is <= eps: Brent's method on the check over ``alpha`` in [0, 1);
      the loss is not proven monotone in ``alpha``, so this is the boundary Brent's method finds.
    """
    support = utility.support
    k = support.size
    start = time.perf_counter()
    parameter: float | None = None
    if mechanism == "optimal-mapping":
        sol = optimal_matrix(scenario, epsilon, utility)
        matrix = sol.matrix
        solver: dict[str, Any] = {
            "status": sol.status, "message": sol.message, "iterations": sol.iterations, "cuts": sol.cuts,
            "lp_objective": sol.bound, "converged": sol.converged,
        }  # fmt: skip
        source = "linear program over row-stochastic matrices (HiGHS); cutting planes over prior sets"
        how = f"LP optimum ({utility.kind})"
    elif mechanism == "randomized-response-dp":
        parameter = math.exp(epsilon) / (math.exp(epsilon) + k - 1)
        matrix = randomized_response_matrix(k, parameter)
        solver = {"status": 0, "message": "closed form", "iterations": 0}
        source = "eps-DP k-ary randomized response, p = e^eps / (e^eps + k - 1) (valid for every prior)"
        how = f"p = {num(parameter)}"
    elif mechanism == "randomized-response":

        def rr_loss(p: float) -> float:
            return _loss_of(scenario, randomized_response_matrix(k, p), support)

        parameter, solver = _root(rr_loss, epsilon, 1.0 / k, 1.0, increasing=True)
        matrix = randomized_response_matrix(k, parameter)
        source = "k-ary randomized response, largest p passing the exact check (Brent's method)"
        how = f"p = {num(parameter)}"
    elif mechanism == "geometric":

        def geo_loss(alpha: float) -> float:
            return _loss_of(scenario, geometric_matrix(k, alpha), support)

        parameter, solver = _root(geo_loss, epsilon, 0.0, 1.0 - 1e-12, increasing=False)
        matrix = geometric_matrix(k, parameter)
        source = "two-sided geometric noise on the codes, clamped; smallest alpha passing the exact check"
        how = f"alpha = {num(parameter)}"
    else:
        raise ValueError(f"not a mapping mechanism: {mechanism!r}")
    weights, chk, lam = _round_and_check(scenario, matrix, support, epsilon)
    solver["seconds"] = time.perf_counter() - start
    released = weights / float(2**GRID_BITS)
    rho = scenario.priors[0]
    return MappingCalibration(
        mechanism=mechanism,
        epsilon=epsilon,
        support=support,
        weights=weights,
        checked_loss=chk.loss,
        check_error_bound=chk.error,
        prior=chk.prior,
        pair=chk.pair,
        decided_by=f"{how}; loss binding at output {num(support[chk.output])}",
        source=source,
        parameter=parameter,
        safety_step=lam,
        expected_accuracy=expected_accuracy(released, utility),
        expected_abs_error=expected_abs_error(released, utility),
        utility=utility.kind,
        solver=solver,
        prior_set=set_summary(rho.sets) if scenario.robust else None,
    )


def _loss_of(scenario: Scenario, matrix: NDArray[np.float64], support: NDArray[np.float64]) -> float:
    chk = mapping_loss(scenario, matrix, support)
    return chk.loss + chk.error
