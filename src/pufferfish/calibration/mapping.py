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
outputs in ``A``. Over prior sets (:mod:`pufferfish.priors.sets`) ``P_i`` ranges over ``C_i`` and
``P_j`` over ``C_j``: (C) becomes ``max_{C_i} <P, m_w> <= e^eps min_{C_j} <Q, m_w>`` with
``m_w = M[:, w]``, a convex constraint written exactly as linear constraints (the DKW band by
its quantile form, the L1 ball by LP duality; :func:`optimal_matrix`), whose exact oracle for
the check is :func:`pufferfish.priors.sets.set_extremes`.

Every returned matrix is rounded to the dyadic grid ``2^-52`` (integer weights summing to
``2^52`` per row: what the secure sampler :func:`pufferfish.noise.samplers.sample_mapping` draws from),
and *that* matrix is checked (:func:`mapping_loss`). If the check fails by rounding, the matrix
is mixed with uniform rows, ``(1 - lambda) M + lambda U``, for the first ``lambda`` of
:data:`MIX_STEPS` that passes: each column becomes ``(1 - lambda) <P, m_w> + lambda / k``, which
moves every ratio towards 1 (and ``lambda = 1`` releases nothing about ``x``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.optimize import brentq, linprog
from scipy.stats import laplace, norm

from pufferfish.calibration.deadline import LP_IN_PROCESS, linprog_within
from pufferfish.calibration.mapping_check import MappingLoss, mapping_loss, on_alphabet
from pufferfish.calibration.result import MappingCalibration, PrivacyCheckError, TimeLimitError, num
from pufferfish.loss.divergence import MemoryLimitError
from pufferfish.noise.channels import DenseChannel, RandomizedResponseChannel
from pufferfish.priors.distributions import DiscretePrior, union_support
from pufferfish.priors.scenario import Scenario
from pufferfish.priors.sets import PriorSet, dkw_band, set_summary

#: Utilities of a mapping: expected accuracy (maximised), the same keeping every value's share of
#: the released rows (``shares``, the default for labels: rare labels are not collapsed into
#: common ones), or expected absolute error (minimised).
UTILITIES = ("shares", "accuracy", "absolute")

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
    kind : {"shares", "accuracy", "absolute"}
        Maximise ``sum_x mu(x) M[x, x]`` (``accuracy``), the same subject to
        ``sum_x mu(x) M[x, w] = mu(w)`` for every ``w`` (``shares``: each value's expected share
        of the released rows is its share of the input), or minimise
        ``sum_x mu(x) sum_w M[x, w] |a_w - a_x|`` (``absolute``).
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
        weights = np.mean([on_alphabet(p, support) for p in conds], axis=0)
    return Utility(kind, np.asarray(weights, dtype=np.float64), support)


def scenario_support(scenario: Scenario) -> NDArray[np.float64]:
    """The union support of every discrete prior of the scenario, shape (k,).

    Raises
    ------
    ValueError
        If a prior is not discrete, or the alphabet has fewer than 2 values.
    """
    priors = [p for rho in scenario.priors for p in rho.conditionals.values()]
    discrete = [p for p in priors if isinstance(p, DiscretePrior)]
    if len(discrete) != len(priors):
        raise ValueError("a mapping needs discrete priors (a finite alphabet)")
    support = union_support(*discrete)
    check_alphabet(support.size, "randomized-response")
    return support


#: Mechanisms whose matrix is dense (``k^2`` entries): at most :data:`MAPPING_MAX_K` values.
DENSE_MECHANISMS = ("geometric", "optimal-mapping")

#: Bytes per entry of a dense mapping's working set, measured (``benchmarks/bench_labels.py``):
#: the LP's constraint matrix and HiGHS's copy of it for ``optimal-mapping``; the float and
#: integer matrices and the check's products for ``geometric``.
_BYTES_PER_ENTRY = {"geometric": 64, "optimal-mapping": 400}


def check_alphabet(k: int, mechanism: str = "optimal-mapping") -> int:
    """``k`` if ``mechanism`` can map ``k`` values: at least 2, and at most
    :data:`MAPPING_MAX_K` for the dense mechanisms (:data:`DENSE_MECHANISMS`); randomized
    response takes any ``k`` (O(k) memory, :class:`pufferfish.noise.channels.RandomizedResponseChannel`).

    Raises
    ------
    ValueError
        Naming the limit and the memory the dense matrix would need (before anything is
        allocated).
    """
    if k < 2:
        raise ValueError(f"a mapping needs an alphabet of at least 2 values, got {k}")
    if mechanism in DENSE_MECHANISMS and k > MAPPING_MAX_K:
        need = _BYTES_PER_ENTRY[mechanism] * float(k) ** 2 / 2**30
        size = f"{need:,.{0 if need >= 10 else 1}f}"
        raise ValueError(
            f"needs about {size} GiB for {k:,} labels ({mechanism} works on a k x k "
            f"matrix; at most {MAPPING_MAX_K:,} labels): bin the column, or use randomized-response"
        )
    return k


# --------------------------------------------------------------------------- utilities


def expected_accuracy(matrix: Any, utility: Utility) -> float:
    """``sum_x mu(x) M[x, x]``: the probability that a released row keeps its value (``matrix``
    a (k, k) array or a channel of :mod:`pufferfish.noise.channels`)."""
    if isinstance(matrix, (DenseChannel, RandomizedResponseChannel)):
        diag = matrix.diagonal() / float(2**GRID_BITS)
    else:
        diag = np.diag(np.asarray(matrix, dtype=np.float64))
    return float(np.clip(utility.weights @ diag, 0.0, 1.0))


def expected_abs_error(matrix: Any, utility: Utility) -> float:
    """``sum_x mu(x) sum_w M[x, w] |a_w - a_x|`` (unit of the alphabet; ``matrix`` as in
    :func:`expected_accuracy`; randomized response in O(k) by prefix sums)."""
    a = utility.support
    if isinstance(matrix, RandomizedResponseChannel):
        below = np.concatenate([[0.0], np.cumsum(a)[:-1]])  # sum of a_w, w < x
        above = float(a.sum()) - below - a  # sum of a_w, w > x
        idx = np.arange(a.size)
        spread = a * idx - below + above - a * (a.size - 1 - idx)  # sum_w |a_w - a_x|
        return float(matrix.other / float(2**GRID_BITS) * (utility.weights @ spread))
    if isinstance(matrix, DenseChannel):
        matrix = matrix.weights / float(2**GRID_BITS)
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
    scenario: Scenario, epsilon: float, utility: Utility, *, time_limit: float = 600.0
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
    utility : Utility
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


# --------------------------------------------------------------------------- calibration


def _round_and_check(
    scenario: Scenario,
    matrix: NDArray[np.float64],
    support: NDArray[np.float64],
    epsilon: float,
    rows: NDArray[np.float64] | None = None,
) -> tuple[DenseChannel, MappingLoss, float]:
    """Round to the dyadic grid and check; mix with constant rows until the check passes.

    The constant rows are uniform, or ``rows`` (the shares ``mu``, which the mixture then keeps:
    every column becomes ``(1 - lambda) <P, m_w> + lambda mu(w)``, the same shift for every
    prior, so every ratio moves towards 1 as with uniform rows).
    """
    k = support.size
    constant = np.full((k, k), 1.0 / k) if rows is None else np.broadcast_to(rows, (k, k))

    def mixed(lam: float) -> DenseChannel:
        return DenseChannel(dyadic_weights((1.0 - lam) * matrix + lam * constant))

    return _first_passing_mixture(scenario, support, epsilon, mixed)


def _rr_round_and_check(
    scenario: Scenario, p: float, support: NDArray[np.float64], epsilon: float
) -> tuple[RandomizedResponseChannel, MappingLoss, float]:
    """:func:`_round_and_check` for randomized response: the mixture with uniform rows is
    randomized response again, of keep probability ``(1 - lambda) p + lambda / k``."""
    k = support.size
    return _first_passing_mixture(
        scenario,
        support,
        epsilon,
        lambda lam: RandomizedResponseChannel.from_probability(k, (1.0 - lam) * p + lam / k),
    )


_C = TypeVar("_C", DenseChannel, RandomizedResponseChannel)


def _first_passing_mixture(
    scenario: Scenario, support: NDArray[np.float64], epsilon: float, mixed: Callable[[float], _C]
) -> tuple[_C, MappingLoss, float]:
    """The first ``lambda`` of :data:`MIX_STEPS` whose channel ``mixed(lambda)`` passes the exact
    check, with the channel and its check.

    Raises
    ------
    PrivacyCheckError
        If none passes (uniform rows, ``lambda = 1``, pass every check: a bug).
    """
    last = None
    for lam in MIX_STEPS:
        chan = mixed(lam)
        chk = mapping_loss(scenario, chan, support)
        if chk.loss + chk.error <= epsilon:
            return chan, chk, lam
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
    scenario: Scenario, epsilon: float, mechanism: str, utility: Utility, *, time_limit: float = 600.0
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
    time_limit : float
        Seconds for the LP of ``optimal-mapping`` (:func:`optimal_matrix`).

    Returns
    -------
    MappingCalibration

    Raises
    ------
    PrivacyCheckError
        If no matrix passes the check (not expected: uniform rows pass) or the LP fails.
    TimeLimitError
        If the LP does not finish within ``time_limit``.

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
    k = check_alphabet(support.size, mechanism)
    start = time.perf_counter()
    parameter: float | None = None
    matrix: NDArray[np.float64] | None = None
    if mechanism == "optimal-mapping":
        sol = optimal_matrix(scenario, epsilon, utility, time_limit=time_limit)
        matrix = sol.matrix
        solver: dict[str, Any] = {
            "status": sol.status, "message": sol.message, "variables": sol.variables,
            "constraints": sol.constraints, "lp_objective": sol.bound,
        }  # fmt: skip
        source = "linear program over row-stochastic matrices (HiGHS); prior sets by LP duality"
        how = f"LP optimum ({utility.kind})"
    elif mechanism == "randomized-response-dp":
        parameter = 1.0 / (1.0 + (k - 1) * math.exp(-epsilon))  # e^eps / (e^eps + k - 1)
        solver = {"status": 0, "message": "closed form", "iterations": 0}
        source = "eps-DP k-ary randomized response, p = e^eps / (e^eps + k - 1) (valid for every prior)"
        how = f"p = {num(parameter)}"
    elif mechanism == "randomized-response":

        def rr_loss(p: float) -> float:
            return _loss_of(scenario, RandomizedResponseChannel.from_probability(k, p), support)

        parameter, solver = _root(rr_loss, epsilon, 1.0 / k, 1.0, increasing=True)
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
    channel: DenseChannel | RandomizedResponseChannel
    if matrix is None:  # randomized response, at any k
        assert parameter is not None
        channel, chk, lam = _rr_round_and_check(scenario, parameter, support, epsilon)
    else:
        keep = utility.weights if mechanism == "optimal-mapping" and utility.kind == "shares" else None
        channel, chk, lam = _round_and_check(scenario, matrix, support, epsilon, keep)
    solver["seconds"] = time.perf_counter() - start
    rho = scenario.priors[0]
    return MappingCalibration(
        mechanism=mechanism,
        epsilon=epsilon,
        support=support,
        channel=channel,
        checked_loss=chk.loss,
        check_error_bound=chk.error,
        prior=chk.prior,
        pair=chk.pair,
        decided_by=f"{how}; loss binding at output {num(support[chk.output])}",
        source=source,
        parameter=parameter,
        safety_step=lam,
        expected_accuracy=expected_accuracy(channel, utility),
        expected_abs_error=expected_abs_error(channel, utility),
        utility=utility.kind,
        solver=solver,
        prior_set=set_summary(rho.sets) if scenario.robust else None,
    )


def _loss_of(scenario: Scenario, matrix: Any, support: NDArray[np.float64]) -> float:
    chk = mapping_loss(scenario, matrix, support)
    return chk.loss + chk.error
