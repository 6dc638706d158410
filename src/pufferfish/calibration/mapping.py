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
from scipy.optimize import brentq

from pufferfish.calibration.mapping_check import MappingLoss, mapping_loss, on_alphabet
from pufferfish.calibration.mapping_lp import optimal_matrix
from pufferfish.calibration.result import MappingCalibration, PrivacyCheckError, num
from pufferfish.defaults import DEFAULT_UTILITY_LABELS as _DEFAULT_LABELS
from pufferfish.defaults import DEFAULT_UTILITY_NUMBERS as _DEFAULT_NUMBERS
from pufferfish.defaults import UTILITIES as _UTILITIES
from pufferfish.noise.channels import DenseChannel, RandomizedResponseChannel
from pufferfish.priors.distributions import DiscretePrior, union_support
from pufferfish.priors.scenario import Scenario
from pufferfish.priors.sets import set_summary

#: Utilities of a mapping, and the default for labels and for numbers: defined in
#: :mod:`pufferfish.defaults` (the command line's help reads them without loading this module).
UTILITIES, DEFAULT_UTILITY_LABELS, DEFAULT_UTILITY_NUMBERS = _UTILITIES, _DEFAULT_LABELS, _DEFAULT_NUMBERS

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
    from scipy.stats import laplace, norm  # scipy.stats loads in about 0.2 s: only when used

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
