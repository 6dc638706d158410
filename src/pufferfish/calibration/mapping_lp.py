"""The optimal mapping's linear program (issues 30, 44): the row-stochastic matrix of best utility
whose every output satisfies the pufferfish condition for every pair and prior (set), with the
prior sets written exactly by LP duality, and its size counted before anything is built.

:func:`optimal_matrix` returns the unrounded matrix;
:func:`pufferfish.calibration.mapping.mapping_calibration` rounds it to the dyadic grid and checks it
exactly.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.optimize import linprog

from pufferfish.calibration.deadline import LP_IN_PROCESS, linprog_within
from pufferfish.calibration.mapping_check import on_alphabet
from pufferfish.calibration.result import PrivacyCheckError, TimeLimitError
from pufferfish.loss.divergence import MemoryLimitError
from pufferfish.priors.scenario import Scenario
from pufferfish.priors.sets import PriorSet, dkw_band

__all__ = ["MAPPING_LP_ENTRIES", "MAPPING_LP_MEMORY", "LPSolution", "lp_size", "optimal_matrix"]


@dataclass(frozen=True)
class LPSolution:
    """The optimal mapping before rounding, with the solver's data.

    Attributes
    ----------
    matrix : numpy.ndarray, shape (k, k)
        The LP's solution, clipped to >= 0 and rows normalised (the caller rounds and checks it).
    status, message :
        HiGHS's status (0: optimal) and message.
    variables, constraints : int
        Size of the LP (``k^2`` entries of ``M`` plus the dual variables of the prior sets).
    seconds : float
    bound : float
        The LP's optimal objective (accuracy, or mean absolute error): the best utility of any
        mechanism with outputs in the alphabet that satisfies (C) for these priors (or sets), up
        to HiGHS's tolerances (1e-10).
    """

    matrix: NDArray[np.float64]
    status: int
    message: str
    variables: int
    constraints: int
    seconds: float
    bound: float


class _Program:
    """Sparse rows ``A x <= 0`` over ``x = (vec(M), auxiliary variables)``, built in blocks."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.n = k * k
        self.lower = [np.zeros(k * k)]
        self.rows: list[NDArray[np.intp]] = []
        self.cols: list[NDArray[np.intp]] = []
        self.vals: list[NDArray[np.float64]] = []
        self.m = 0

    def variables(self, count: int, lower: float = -np.inf) -> NDArray[np.intp]:
        start = self.n
        self.n += count
        self.lower.append(np.full(count, lower))
        return np.arange(start, start + count)

    def add(self, row: Any, col: Any, val: Any, count: int) -> None:
        """``count`` new rows; ``row`` in ``[0, count)`` relative to them."""
        row, col, val = np.broadcast_arrays(
            np.asarray(row), np.asarray(col), np.asarray(val, dtype=np.float64)
        )
        self.rows.append(row.ravel() + self.m)
        self.cols.append(col.ravel())
        self.vals.append(val.ravel())
        self.m += count

    def matrix(self) -> sparse.csr_matrix:
        rows, cols, vals = (np.concatenate(x) for x in (self.rows, self.cols, self.vals))
        return sparse.csr_matrix((vals, (rows, cols)), shape=(self.m, self.n))


_Form = tuple[NDArray[np.intp], NDArray[np.float64]]
"""Per output ``w``: the variables ``cols[w]`` and coefficients ``coefs[w]`` of a linear form."""


def _point_form(lp: _Program, pmf: NDArray[np.float64]) -> _Form:
    """``<P, m_w>`` itself, on the entries of ``M``."""
    k = lp.k
    xs = np.flatnonzero(pmf)
    cols = xs[None, :] * k + np.arange(k)[:, None]
    return cols, np.broadcast_to(pmf[xs], cols.shape).astype(np.float64)


def _dkw_form(lp: _Program, ps: PriorSet, rows: NDArray[np.intp], upper: bool) -> _Form:
    """By LP duality, ``max {<P, m> : P >= 0, sum P = 1, L_j <= F_j <= U_j (j < n)}`` (the band,
    ``F`` the CDF of ``P`` on the set's ``n`` points) equals ``min alpha + sum_j (U_j beta_j -
    L_j gamma_j)`` over ``beta, gamma >= 0`` with ``alpha + t_i >= m_i``, ``t_i = sum_{j >= i}
    (beta_j - gamma_j)`` (``upper``); the minimum is ``-max`` of the same with ``-m``.

    ``t`` is written as a chain ``t_i <= t_{i+1} + beta_i - gamma_i`` (``t_n = 0``): a ``t`` below
    the suffix sum only tightens ``alpha + t_i >= m_i``, so every feasible point is dual-feasible
    (weak duality: the form is >= the band's max) and the suffix sums themselves are feasible
    (strong duality: equal at the outer optimum, which prefers a small left side). Per output
    ``3 n`` variables, ``2 n`` rows and ``7 n`` entries, whatever the band's radius (the window form
    of :func:`pufferfish.priors.sets.set_extremes` needs an entry per window and label, ``O(n^2)``
    per output when the windows are long: 20 GiB at 1,000 labels, issue 44)."""
    k, n = lp.k, rows.size
    lower, upper_cdf = dkw_band(ps.center, ps.radius)
    alpha = lp.variables(k)
    beta = lp.variables(k * (n - 1), lower=0.0).reshape(k, n - 1)
    gamma = lp.variables(k * (n - 1), lower=0.0).reshape(k, n - 1)
    t = lp.variables(k * (n - 1)).reshape(k, n - 1)
    w = np.arange(k)[:, None]
    sign = 1.0 if upper else -1.0
    m_col = rows[None, :] * k + w  # M[rows[i], w]
    # sign M[i, w] - alpha_w - t_wi <= 0 (i < n - 1), sign M[n - 1, w] - alpha_w <= 0
    r = w * (n - 1) + np.arange(n - 1)[None, :]
    lp.add(np.stack([r] * 3, -1), np.stack(np.broadcast_arrays(m_col[:, : n - 1], alpha[:, None], t), -1),
           np.array([sign, -1.0, -1.0]), k * (n - 1))  # fmt: skip
    lp.add(
        np.stack([np.arange(k)] * 2, -1), np.stack([m_col[:, n - 1], alpha], -1), np.array([sign, -1.0]), k
    )
    # t_i - t_{i+1} - beta_i + gamma_i <= 0, t_{n-1} = 0 beyond the last
    nxt = np.concatenate([t[:, 1:], t[:, :1]], axis=1)  # t_{i+1} (the last column's is unused)
    last = np.arange(n - 1) == n - 2
    cols = np.stack(np.broadcast_arrays(t, nxt, beta, gamma), -1)
    vals = np.broadcast_to(np.array([1.0, -1.0, -1.0, 1.0]), cols.shape).copy()
    vals[:, last, 1] = 0.0  # no t_n
    lp.add(np.stack([r] * 4, -1), cols, vals, k * (n - 1))
    form_cols = np.concatenate([alpha[:, None], beta, gamma], axis=1)
    coefs = np.concatenate([[1.0], upper_cdf[: n - 1], -lower[: n - 1]])
    return form_cols, np.broadcast_to(sign * coefs, form_cols.shape).astype(np.float64)


def _l1_form(lp: _Program, ps: PriorSet, rows: NDArray[np.intp], upper: bool) -> _Form:
    """By LP duality, ``max {<P, m> : P >= 0, sum P = 1, ||P - c||_1 <= r}`` equals
    ``min alpha + <theta, c> + tau r`` over ``m_x <= alpha + theta_x``, ``|theta_x| <= tau``
    (``upper``); the minimum is ``-max`` of the same with ``-m`` (``not upper``)."""
    k, n = lp.k, rows.size
    alpha = lp.variables(k)
    theta = lp.variables(k * n).reshape(k, n)
    tau = lp.variables(k, lower=0.0)
    w = np.arange(k)[:, None]
    sign = 1.0 if upper else -1.0
    r = w * n + np.arange(n)[None, :]
    m_col = rows[None, :] * k + w
    # sign M[x, w] - alpha_w - theta_wx <= 0 ; theta - tau <= 0 ; -theta - tau <= 0
    lp.add(np.stack([r] * 3, -1), np.stack(np.broadcast_arrays(m_col, alpha[:, None], theta), -1),
           np.array([sign, -1.0, -1.0]), k * n)  # fmt: skip
    for s in (1.0, -1.0):
        lp.add(
            np.stack([r, r], -1),
            np.stack(np.broadcast_arrays(theta, tau[:, None]), -1),
            np.array([s, -1.0]),
            k * n,
        )
    cols = np.concatenate([alpha[:, None], theta, tau[:, None]], axis=1)
    coefs = np.concatenate([[1.0], ps.center, [ps.radius]])
    return cols, np.broadcast_to(sign * coefs, cols.shape).astype(np.float64)


def _side(lp: _Program, prior: Any, ps: PriorSet | None, a: NDArray[np.float64], upper: bool) -> _Form:
    if ps is None or ps.kind == "none" or ps.radius == 0.0:
        return _point_form(lp, on_alphabet(prior, a))
    rows = np.searchsorted(a, ps.alphabet)
    return (_dkw_form if ps.kind == "dkw" else _l1_form)(lp, ps, rows, upper)


#: Largest working set of the mapping LP, estimated before anything is built (issue 44): its
#: entries at :data:`LP_BYTES_PER_ENTRY` each. Beyond it ``optimal-mapping`` answers "not run"
#: (the other mappings, checked the same way, still answer).
MAPPING_LP_MEMORY = 1.5 * 2**30

#: Peak bytes per entry of the mapping LP's constraint matrix (SciPy's sparse copies and HiGHS's
#: interior-point factorisation), an upper estimate from ``python benchmarks/bench_labels.py --lp``.
LP_BYTES_PER_ENTRY = 400


#: Largest number of entries of the mapping LP that is run (issue 44): HiGHS's interior-point
#: time grows faster than its size (``python benchmarks/bench_labels.py --lp``: about 400,000
#: entries at 100 labels under the DKW band took 35 s, 1.6 million at 200 labels did not finish in
#: 300 s), so beyond it ``optimal-mapping`` answers "not run" within a minute's budget and the
#: other mappings, checked the same way, answer.
MAPPING_LP_ENTRIES = 450_000


def lp_size(scenario: Scenario, a: NDArray[np.float64], utility_kind: str) -> tuple[int, int]:
    """``(variables, entries)`` of :func:`optimal_matrix`'s LP on the alphabet ``a``, counted from
    the forms' sizes without building them.

    Parameters
    ----------
    scenario : Scenario
        Discrete priors, possibly with prior sets.
    a : numpy.ndarray, shape (k,)
        The mapping's alphabet.
    utility_kind : str
        ``"shares"`` adds the ``k - 1`` share equations.

    Returns
    -------
    (int, int)
    """
    k = int(a.size)
    variables, entries = k * k, k * k + (k * (k - 1) if utility_kind == "shares" else 0)
    for rho, (s_i, s_j), p_i, p_j in scenario.iter_pairs():
        sets = rho.sets or {}
        for secret, prior in ((s_i, p_i), (s_j, p_j)):  # each side appears once per direction
            ps = sets.get(secret)
            if ps is None or ps.kind == "none" or ps.radius == 0.0:
                width = int(np.count_nonzero(on_alphabet(prior, a)))
                per = (0, 0, width)  # (variables, form entries, entries in the final row)
            elif ps.kind == "dkw":
                n = int(ps.alphabet.size)
                per = (3 * (n - 1) + 1, 7 * (n - 1) + 2, 2 * n - 1)
            else:
                n = int(ps.alphabet.size)
                per = (n + 2, 7 * n, n + 2)
            variables += 2 * k * per[0]
            entries += 2 * k * (per[1] + per[2])
    return variables, entries


def optimal_matrix(
    scenario: Scenario, epsilon: float, utility: Any, *, time_limit: float = 600.0
) -> LPSolution:
    """The row-stochastic matrix of best utility satisfying (C) for every pair and prior (set).

    Problem (variables ``M[x, w] >= 0``, ``x, w`` in the alphabet)::

        max  sum_x mu(x) M[x, x]          (accuracy)   or   min  sum_{x,w} mu(x) |a_w - a_x| M[x, w]
        s.t. sum_w M[x, w] = 1                                      for every x
             max_{P in C_i} <P, m_w> <= e^eps min_{Q in C_j} <Q, m_w>   every w, pair, both ways
             sum_x mu(x) M[x, w] = mu(w)                            every w (``shares`` only)

    ``shares`` is always feasible: the matrix whose every row is ``mu`` releases nothing about
    ``x`` (loss 0) and keeps every share. Its last share equation is implied by the others and the
    row sums, and is left out.

    solved by HiGHS's interior-point method with crossover to a vertex (:func:`scipy.optimize.linprog`,
    ``highs-ipm``, sparse; measured 5.9 s against 55 s for the dual simplex at k = 500 with point
    priors, ``benchmarks/bench_mapping.py``). For point priors ``C = {P}`` and
    the constraint is ``sum_x (P_i(x) - e^eps P_j(x)) M[x, w] <= 0``. Over a prior set the two
    sides are a convex and a concave function of ``m_w``, written exactly with auxiliary
    variables (``S >= max`` on the left, ``I <= min`` on the right, both tight at the optimum, so
    the feasible ``M`` are exactly those satisfying (C)):

    * DKW band: the dual of ``max {<P, m> : P >= 0, 1'P = 1, L <= F <= U}`` (``F`` the CDF of
      ``P``) is ``min alpha + sum_j (U_j beta_j - L_j gamma_j)`` over ``alpha + sum_{j >= i}
      (beta_j - gamma_j) >= m_i``, ``beta, gamma >= 0`` (:func:`_dkw_form`: ``7 n`` entries per
      output, whatever the radius).
    * L1 ball: the dual of ``max {<P, m> : P >= 0, 1'P = 1, ||P - c||_1 <= r}`` (variables ``P``,
      ``e >= |P - c|``; multipliers ``alpha`` of ``1'P = 1``, ``beta, gamma >= 0`` of
      ``+-(P - c) <= e``, ``tau >= 0`` of ``1'e <= r``) is ``min alpha + <theta, c> + tau r`` over
      ``m_x <= alpha + theta_x``, ``|theta_x| <= tau`` (``theta = beta - gamma``); strong
      duality holds (the primal is feasible and bounded). The minimum is ``-max`` with ``-m``.

    Parameters
    ----------
    scenario : Scenario
        Discrete priors, possibly with prior sets.
    epsilon : float
        > 0.
    utility : pufferfish.calibration.mapping.Utility
        Its support (the alphabet of the matrix) must hold the scenario's union support.
    time_limit : float
        Seconds for HiGHS.

    Returns
    -------
    LPSolution
        The unrounded matrix (the caller rounds and checks it).

    Raises
    ------
    TimeLimitError
        If HiGHS stops at ``time_limit`` (or its iteration limit) without an answer.
    pufferfish.loss.divergence.MemoryLimitError
        If the LP (:func:`lp_size`) has more than :data:`MAPPING_LP_ENTRIES` entries or its
        estimated working set exceeds :data:`MAPPING_LP_MEMORY` ("not run", before anything is
        built).
    PrivacyCheckError
        If HiGHS does not return an optimal solution otherwise.
    """
    a = utility.support
    k = a.size
    variables, entries = lp_size(scenario, a, utility.kind)
    need = entries * LP_BYTES_PER_ENTRY
    if need > MAPPING_LP_MEMORY or entries > MAPPING_LP_ENTRIES:
        raise MemoryLimitError(
            f"not run: the mapping LP of {k:,} labels has {variables:,} variables and {entries:,} entries "
            f"(about {need / 2**30:.2g} GiB; more than {MAPPING_LP_ENTRIES:,} entries take minutes); the "
            "other mappings answer (or bin the column, or give --prior-set none)"
        )
    e = math.exp(epsilon)
    lp = _Program(k)
    start = time.perf_counter()
    forms: list[tuple[_Form, _Form]] = []
    for rho, (s_i, s_j), p_i, p_j in scenario.iter_pairs():
        sets = rho.sets or {}
        for (up, p_up), (down, p_down) in (((s_i, p_i), (s_j, p_j)), ((s_j, p_j), (s_i, p_i))):
            forms.append(
                (_side(lp, p_up, sets.get(up), a, True), _side(lp, p_down, sets.get(down), a, False))
            )
    for (c_up, v_up), (c_down, v_down) in forms:  # S(w) - e^eps I(w) <= 0, one row per output
        cols = np.concatenate([c_up, c_down], axis=1)
        vals = np.concatenate([v_up, -e * v_down], axis=1)
        lp.add(np.broadcast_to(np.arange(k)[:, None], cols.shape), cols, vals, k)
    cost = np.zeros(lp.n)
    if utility.kind in ("accuracy", "shares"):
        cost[np.arange(k) * (k + 1)] = -utility.weights
    else:
        cost[: k * k] = (utility.weights[:, None] * np.abs(a[None, :] - a[:, None])).ravel()
    a_eq = sparse.hstack([sparse.kron(sparse.eye(k), np.ones((1, k))), sparse.csr_matrix((k, lp.n - k * k))])
    b_eq = np.ones(k)
    if utility.kind == "shares":  # sum_x mu(x) M[x, w] = mu(w), w < k - 1 (the last is implied)
        mu = utility.weights
        shares = sparse.hstack([sparse.kron(mu[None, :], sparse.eye(k)).tocsr()[: k - 1],
                                sparse.csr_matrix((k - 1, lp.n - k * k))])  # fmt: skip
        a_eq = sparse.vstack([a_eq, shares])
        b_eq = np.concatenate([b_eq, mu[: k - 1]])
    options = {
        "primal_feasibility_tolerance": 1e-10,
        "dual_feasibility_tolerance": 1e-10,
        "time_limit": time_limit,
    }
    a_ub = lp.matrix()
    bounds = np.stack([np.concatenate(lp.lower), np.full(lp.n, np.inf)], axis=1)
    problem = dict(c=cost, A_ub=a_ub, b_ub=np.zeros(lp.m), A_eq=a_eq.tocsr(), b_eq=b_eq, bounds=bounds,
                   method="highs-ipm", options=options)  # fmt: skip
    res = linprog_within(problem, time_limit) if lp.n > LP_IN_PROCESS else linprog(**problem)
    if res is None or res.status == 1:  # the time (or iteration) limit: nothing was decided
        raise TimeLimitError(
            f"the mapping LP ({k} values, {lp.n} variables) did not finish within {time_limit:g} s"
        )
    if res.status != 0 or res.x is None:
        raise PrivacyCheckError(f"the mapping LP did not solve: {res.message}")
    m = np.clip(res.x[: k * k].reshape(k, k), 0.0, None)
    m /= m.sum(axis=1, keepdims=True)
    bound = float(res.fun) if utility.kind == "absolute" else -float(res.fun)
    return LPSolution(
        m, int(res.status), str(res.message), lp.n, lp.m + a_eq.shape[0], time.perf_counter() - start, bound
    )
